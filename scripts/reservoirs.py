"""``python -m scripts.reservoirs [--seeds N] [--out RUN_DIR] [--page PAGE] [--figure PNG]``: IncFed and FedAvg across
reservoir topologies and depths, beside esnfed's topologies built with the same sizes.

For each data set (JapaneseVowels and BasicMotions from the UEA archive, the synthetic WESAD and
HHAR) and seed, the training sequences are dealt to :data:`CLIENTS` clients (``iid``) and every
reservoir of :func:`reservoirs` — the same number of units N, spectral radius, leak and input
scaling as ``tff-esn run``'s defaults on that source; a deep ESN splits its N units over its
layers — is trained by IncFed (closed form: the centralized readout, exactly) and FedAvg
(:data:`FEDAVG_ROUNDS` rounds). esnfed 1.7.1's ``make_reservoir`` topologies (its defaults: random
density 0.1, small-world k = 6 / p = 0.1, scale-free m = 3, ring with random signs) get the same N,
ρ, input scaling, leak and the λ IncFed used, and their readout is esnfed's
``federated_classifier`` over the same clients (pooled ``mean``/``last`` states as ours).

Writes ``RUN_DIR/results.csv`` (one row per data set, reservoir, algorithm and seed), and
the table of test accuracy mean ± std over seeds into the page ``PAGE`` (between its
``<!-- reservoirs-table -->`` markers) and the figure ``FIGURE``.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scripts.common import plt
from tff_esn import algorithms, defaults
from tff_esn.compare import run_for
from tff_esn.data.partition import partition_dataset
from tff_esn.data.sources import load_source
from tff_esn.data.splits import get_split
from tff_esn.io import write_text_atomic

UEA = "/work/uea/ex/aeon/datasets/data"
SOURCES = {
    "JapaneseVowels": f"ts:{UEA}/JapaneseVowels/JapaneseVowels",
    "BasicMotions": f"ts:{UEA}/BasicMotions/BasicMotions",
    "synthetic WESAD": "synthetic-wesad",
    "synthetic HHAR": "synthetic-hhar",
}
CLIENTS = 10
FEDAVG_ROUNDS = 20
ESNFED_TOPOLOGIES = ("random", "small_world", "scale_free", "ring")
ROOT = Path(__file__).resolve().parent.parent
MARKER = "<!-- reservoirs-table -->"
"""The page's table sits between two of these lines."""


def _split_units(units: int, layers: int) -> tuple[int, ...]:
    """``units`` over ``layers`` layers, the first ones one larger when it does not divide."""
    return tuple(units // layers + (i < units % layers) for i in range(layers))


def reservoirs(units: int) -> dict[str, dict[str, Any]]:
    """The compared reservoirs of ``units`` units in all, as ``tff-esn run`` settings."""
    return {
        "random": {},
        "ring": {"topology": "ring"},
        "delay-line": {"topology": "delay-line"},
        "cycle-jumps (ℓ = 4)": {"topology": "cycle-jumps"},
        "small-world (k = 6, p = 0.1)": {"topology": "small-world"},
        "scale-free (m = 3)": {"topology": "scale-free"},
        "random, leak uniform in [0.1, a]": {"leak_distribution": "uniform"},
        "deep, 2 layers": {"layers": 2, "layer_units": _split_units(units, 2)},
        "deep, 3 layers": {"layers": 3, "layer_units": _split_units(units, 3)},
    }


def _sequences(client) -> list[np.ndarray]:
    return [client.x[i, :int(n)] for i, n in enumerate(client.steps)]


def esnfed_accuracy(kind: str, data, split, config, l2: float, seed: int) -> float:
    """Test accuracy of esnfed's ``kind`` reservoir with ``config``'s sizes, its federated ridge readout
    over ``split``'s training clients (λ = ``l2``)."""
    from esnfed.classification import federated_classifier, predict_labels
    from esnfed.esn import EchoStateNetwork
    from esnfed.topologies import make_reservoir

    res = config.reservoir
    esn = EchoStateNetwork(n_inputs=len(data.feature_names), n_outputs=data.n_classes,
                           reservoir=make_reservoir(kind, res.units, rng=seed), spectral_radius=res.spectral_radius,
                           input_scaling=res.input_scaling, leaking_rate=res.leaky, ridge=l2, seed=seed)
    pool = config.state_mode
    clients = [(_sequences(data.clients[c]), data.clients[c].y) for c in split.train]
    readout = federated_classifier(esn, clients, data.n_classes, pool=pool, washout=config.washout)
    test = data.pooled(split.test)
    return float(np.mean(predict_labels(esn, _sequences(test), readout, pool=pool, washout=config.washout) == test.y))


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return [{**r, "seed": int(r["seed"]), "accuracy": float(r["accuracy"]) if r["accuracy"] else None,
                 "seconds": float(r["seconds"])} for r in csv.DictReader(f)]


def _write(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["data", "reservoir", "algorithm", "seed", "accuracy", "seconds"])
        writer.writeheader()
        writer.writerows(rows)


def run(seeds: Sequence[int], out: Path, names: Sequence[str] = tuple(SOURCES)) -> list[dict[str, Any]]:
    """Every (data set, reservoir, algorithm, seed) cell; rows of ``OUT/results.csv``, written after each
    data set and seed (a rerun skips the data sets and seeds the file holds)."""
    from tff_esn import runtime

    rows = _read(out / "results.csv")
    for name in names:
        source = SOURCES[name]
        pipeline = defaults.default_pipeline(source)
        dataset = load_source(source, pipeline)
        split = get_split(defaults.default_split(source, pipeline), dataset)
        for seed in seeds:
            if any((r["data"], r["seed"]) == (name, seed) for r in rows):
                continue
            data, dealt, _ = partition_dataset(dataset, split, "iid", CLIENTS, seed=seed)
            base = run_for("incfed", data, pipeline, seed=seed).config
            for label, settings in reservoirs(base.reservoir.units).items():
                incfed = algorithms.run_algorithm(run_for("incfed", data, pipeline, seed=seed, **settings), data, dealt)
                rows.append(_row(name, label, "IncFed", seed, incfed))
                folder = out / "fedavg" / name / label / f"seed{seed}"
                fedavg = run_for("fedavg", data, pipeline, seed=seed, rounds=FEDAVG_ROUNDS, out=str(folder),
                                 progress=False, **settings)
                runtime.ensure_context()
                rows.append(_row(name, label, "FedAvg", seed, algorithms.run_algorithm(fedavg, data, dealt)))
                if not settings:
                    l2 = incfed["l2_selection"]["l2"]
                    for kind in ESNFED_TOPOLOGIES:
                        started = time.perf_counter()
                        accuracy = (esnfed_accuracy(kind, data, dealt, base, l2, seed)
                                    if base.state_mode in ("mean", "last") else None)
                        rows.append({"data": name, "reservoir": f"esnfed {kind}", "algorithm": "IncFed", "seed": seed,
                                     "accuracy": accuracy, "seconds": time.perf_counter() - started})
                print(name, label, seed, [f"{r['algorithm']} {r['accuracy']}" for r in rows[-2:]], flush=True)
            _write(out / "results.csv", rows)
    return rows


def _row(name: str, label: str, algorithm: str, seed: int, record: dict[str, Any]) -> dict[str, Any]:
    return {"data": name, "reservoir": label, "algorithm": algorithm, "seed": seed,
            "accuracy": record["test"]["accuracy"], "seconds": record["seconds"]}


def _labels(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The reservoirs in the order run, esnfed's last."""
    labels = list(dict.fromkeys(r["reservoir"] for r in rows))
    return sorted(labels, key=lambda label: label.startswith("esnfed"))


def _cell(values: list[float], seeds: int) -> str:
    """Mean ± std (%), with the number of seeds when fewer than the table's."""
    if not values:
        return "—"
    return f"{100 * np.mean(values):.1f} ± {100 * np.std(values):.1f}" + ("" if len(values) == seeds else f" (n={len(values)})")


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Test accuracy (%) mean ± std over seeds: a row per reservoir, a column per data set and algorithm."""
    names = list(dict.fromkeys(r["data"] for r in rows))
    labels = _labels(rows)
    columns = [(n, a) for n in names for a in ("IncFed", "FedAvg")]
    seeds = len({r["seed"] for r in rows})
    lines = ["| reservoir | " + " | ".join(f"{n} {a}" for n, a in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for label in labels:
        cells = [_cell([r["accuracy"] for r in rows if (r["data"], r["reservoir"], r["algorithm"]) == (n, label, a)
                        and r["accuracy"] is not None], seeds) for n, a in columns]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figure(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """IncFed's test accuracy per reservoir (bars: mean, whiskers: std over seeds), one panel per data set."""
    names = list(dict.fromkeys(r["data"] for r in rows))
    labels = _labels(rows)
    fig, axes = plt().subplots(1, len(names), figsize=(4 * len(names), 5), sharey=False, squeeze=False)
    for ax, name in zip(axes[0], names):
        values = [[r["accuracy"] for r in rows if (r["data"], r["reservoir"], r["algorithm"]) == (name, label, "IncFed")
                   and r["accuracy"] is not None] for label in labels]
        means = [100 * np.mean(v) if v else np.nan for v in values]
        stds = [100 * np.std(v) if v else 0.0 for v in values]
        colors = ["tab:gray" if label.startswith("esnfed") else "tab:blue" for label in labels]
        ax.barh(range(len(labels)), means, xerr=stds, color=colors)
        ax.set_yticks(range(len(labels)), labels if ax is axes[0][0] else [""] * len(labels), fontsize=8)
        ax.invert_yaxis()
        finite = [m for m in means if np.isfinite(m)]
        ax.set_xlim(max(0.0, min(finite) - 10), 100)
        ax.set_title(name)
        ax.set_xlabel("IncFed test accuracy (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.reservoirs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 … N − 1 (0: only rewrite the table and figure)")
    parser.add_argument("--out", type=Path, default=Path("runs/reservoirs"))
    parser.add_argument("--page", type=Path, default=ROOT / "docs" / "reservoirs.md")
    parser.add_argument("--figure", type=Path, default=ROOT / "docs" / "assets" / "reservoirs.png")
    parser.add_argument("--data", nargs="+", default=list(SOURCES), choices=list(SOURCES))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [r for r in run(range(args.seeds), args.out, args.data) if r["data"] in args.data]
    figure(rows, args.figure)
    page = args.page.read_text()
    start, stop = page.index(MARKER) + len(MARKER), page.rindex(MARKER)
    write_text_atomic(args.page, page[:start] + "\n\n" + table(rows) + "\n\n" + page[stop:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
