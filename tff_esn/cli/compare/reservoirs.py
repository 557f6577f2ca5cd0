"""Algorithms across reservoir topologies and depths (``tff-esn compare --reservoirs``), beside esnfed's
topologies built with the same sizes.

For each source and seed the training sequences are dealt to the clients by one partitioner, and every
reservoir of the comparison (:func:`reservoir_settings`) — ``tff-esn run``'s defaults on the source, a deep
ESN splitting the same N units over its layers — is trained by each algorithm. ``OUT`` receives
``results.csv`` (a row per source, reservoir, algorithm and seed), ``table.md`` and ``reservoirs.png``.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.registry import algorithms, defaults
from tff_esn.cli.compare.heterogeneity import check_folder, run_for, start_tff
from tff_esn.esn.hyperparameters import LEAK_DISTRIBUTIONS, TOPOLOGIES, ReservoirConfig
from tff_esn.common.io import atomic_write, write_csv_atomic, write_text_atomic
from tff_esn.common.progress import progress_bar

DEFAULT_RESERVOIRS = (*TOPOLOGIES, "leak-uniform", "deep-2", "deep-3", "esnfed")
"""The reservoirs compared unless named: every topology, per-unit uniform leak, deep ESNs of 2 and 3
layers, and esnfed's topologies."""

ESNFED_TOPOLOGIES = ("random", "small_world", "scale_free", "ring")
FIELDS = ("data", "reservoir", "algorithm", "seed", "accuracy", "seconds")


def _split_units(units: int, layers: int) -> tuple[int, ...]:
    """``units`` over ``layers`` layers, the first ones one larger when it does not divide."""
    return tuple(units // layers + (i < units % layers) for i in range(layers))


def reservoir_settings(name: str, units: int) -> tuple[str, dict[str, Any]]:
    """Table label and ``tff-esn run`` settings of reservoir ``name`` of ``units`` units: a topology, ``leak-DIST``
    (per-unit leak from DIST in [leak_low, leaky]), or ``deep-L`` / ``deep-L-last``."""
    d = ReservoirConfig()
    labels = {"cycle-jumps": f"cycle-jumps (ℓ = {d.jump})",
              "small-world": f"small-world (k = {d.neighbours}, p = {d.rewiring:g})",
              "scale-free": f"scale-free (m = {d.attachment})"}
    if name in TOPOLOGIES:
        return labels.get(name, name), {} if name == "random" else {"topology": name}
    kind, _, rest = name.partition("-")
    if kind == "leak" and rest in LEAK_DISTRIBUTIONS[1:]:
        return f"random, leak {rest} in [{d.leak_low:g}, a]", {"leak_distribution": rest}
    layers, _, last = rest.partition("-")
    if kind == "deep" and layers.isdigit() and int(layers) >= 2 and last in ("", "last"):
        settings = {"layers": int(layers), "layer_units": _split_units(units, int(layers))}
        return (f"deep, {layers} layers" + (", last-layer readout" if last else ""),
                {**settings, "readout_layers": "last"} if last else settings)
    raise ValueError(f"reservoirs: unknown {name!r}; expected a topology ({', '.join(TOPOLOGIES)}), "
                     f"leak-DIST ({', '.join(LEAK_DISTRIBUTIONS[1:])}), deep-L, deep-L-last (L ≥ 2) or esnfed.")


@dataclasses.dataclass(frozen=True)
class ReservoirComparison:
    """One reservoir comparison: ``(label, source)`` pairs, :func:`reservoir_settings` ``reservoirs`` and ``esnfed``
    topologies, registry ``algorithms``, a ``partition`` to ``clients`` per seed, gradient ``rounds``."""

    sources: tuple[tuple[str, str], ...]
    reservoirs: tuple[str, ...] = DEFAULT_RESERVOIRS
    algorithms: tuple[str, ...] = dataclasses.field(default_factory=algorithms.default_algorithms)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    clients: int = 10
    partition: str = "iid"
    rounds: int = 20
    pipeline: str | None = None
    split: str | None = None

    def __post_init__(self) -> None:
        for name in self.reservoirs:
            if name != "esnfed":
                reservoir_settings(name, 6)
        known = algorithms.available_algorithms()
        unknown = [a for a in self.algorithms if a not in known]
        if unknown or not self.algorithms or not self.sources or not self.seeds:
            raise ValueError(f"reservoir comparison: expected sources, seeds and known algorithms; unknown "
                             f"algorithms {unknown} (available: {', '.join(known)}).")
        if "esnfed" in self.reservoirs and ("random" not in self.reservoirs or self.ridge is None):
            raise ValueError("reservoirs: esnfed's readouts use the λ a federated ridge readout chose for the random "
                             f"reservoir; compare random with one of "
                             f"{', '.join(algorithms.names_where(algorithms.federated_ridge))} too.")

    @property
    def ridge(self) -> str | None:
        """The first federated ridge readout of ``algorithms``: esnfed's readouts take its λ and state mode."""
        return next((n for n in self.algorithms if algorithms.federated_ridge(algorithms.get_algorithm(n))), None)

    def settings(self) -> dict[str, Any]:
        """The settings as JSON (``comparison.json``)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))


def esnfed_accuracy(kind: str, data, split, config, l2: float, seed: int) -> float | None:
    """Test accuracy of esnfed's ``kind`` reservoir with federated ridge (λ = ``l2``); ``None`` for per-step states."""
    from esnfed.classification import federated_classifier, predict_labels
    from esnfed.esn import EchoStateNetwork
    from esnfed.topologies import make_reservoir

    if config.state_mode not in ("mean", "last"):
        return None
    res, pool = config.reservoir, config.state_mode

    def sequences(client) -> list[np.ndarray]:
        return [client.x[i, :int(n)] for i, n in enumerate(client.steps)]

    esn = EchoStateNetwork(n_inputs=len(data.feature_names), n_outputs=data.n_classes,
                           reservoir=make_reservoir(kind, res.units, rng=seed), spectral_radius=res.spectral_radius,
                           input_scaling=res.input_scaling, leaking_rate=res.leaky, ridge=l2, seed=seed)
    clients = [(sequences(data.clients[c]), data.clients[c].y) for c in split.train]
    readout = federated_classifier(esn, clients, data.n_classes, pool=pool, washout=config.washout)
    test = data.pooled(split.test)
    return float(np.mean(predict_labels(esn, sequences(test), readout, pool=pool, washout=config.washout) == test.y))


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return [{**r, "seed": int(r["seed"]), "accuracy": float(r["accuracy"]) if r["accuracy"] else None,
                 "seconds": float(r["seconds"])} for r in csv.DictReader(f)]


def _cells(comparison: ReservoirComparison, label: str, data, split, pipeline: str, seed: int,
           out: Path) -> list[dict[str, Any]]:
    """Every reservoir × algorithm of one source and seed (and esnfed's topologies)."""
    rows = []
    units = run_for(comparison.algorithms[0], data, pipeline, seed=seed).record["units"]["value"]
    for name in (r for r in comparison.reservoirs if r != "esnfed"):
        reservoir, settings = reservoir_settings(name, units)
        for algorithm in comparison.algorithms:
            run: dict[str, Any] = {"seed": seed, **settings}
            if "rounds" in algorithms.config_fields(algorithms.get_algorithm(algorithm).config):
                run.update(rounds=comparison.rounds, progress=False,
                           out=str(out / "runs" / algorithm / label / name / f"seed{seed}"))
            resolved = run_for(algorithm, data, pipeline, **run)
            config = resolved.config
            record = algorithms.run_algorithm(resolved, data, split, start=start_tff)
            rows.append({"data": label, "reservoir": reservoir, "algorithm": algorithm,
                         "seed": seed, "accuracy": record["test"]["accuracy"], "seconds": record["seconds"]})
            if name == "random" and algorithm == comparison.ridge and "esnfed" in comparison.reservoirs:
                l2 = record["l2_selection"]["l2"]  # and the state mode it chose
                chosen = (record.get("selection") or {}).get("state_mode", config.state_mode)
                config = dataclasses.replace(config, state_mode=chosen)
                for kind in ESNFED_TOPOLOGIES:
                    started = time.perf_counter()
                    accuracy = esnfed_accuracy(kind, data, split, config, l2, seed)
                    rows.append({"data": label, "reservoir": f"esnfed {kind}", "algorithm": algorithm, "seed": seed,
                                 "accuracy": accuracy, "seconds": time.perf_counter() - started})
    return rows


def run_reservoir_comparison(comparison: ReservoirComparison, out: str | Path, *,
                             progress: bool = True) -> dict[str, Path]:
    """Runs (or resumes) ``comparison`` into ``out``, writing ``results.csv``, ``table.md`` and ``reservoirs.png``;
    ``FileExistsError`` when ``out`` holds other settings."""
    from tff_esn.data.partition import partition_dataset
    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split

    out = Path(out)
    check_folder(out, comparison)
    rows = _read(out / "results.csv")
    bar = progress_bar(wanted=progress, total=len(comparison.sources) * len(comparison.seeds), desc="compare reservoirs",
                       unit="seed")
    for label, source in comparison.sources:
        pipeline = comparison.pipeline or defaults.default_pipeline(source)
        dataset = load_source(source, pipeline)
        split = get_split(comparison.split or defaults.default_split(source, pipeline), dataset)
        for seed in comparison.seeds:
            if not any((r["data"], r["seed"]) == (label, seed) for r in rows):
                data, dealt, _ = partition_dataset(dataset, split, comparison.partition, comparison.clients, seed=seed)
                rows += _cells(comparison, label, data, dealt, pipeline, seed, out)
                write_csv_atomic(out / "results.csv", rows, fieldnames=list(FIELDS))
            bar.update()
    bar.close()
    rows = [r for r in rows if r["data"] in dict(comparison.sources) and r["seed"] in comparison.seeds]
    paths = {"csv": out / "results.csv", "table": write_text_atomic(out / "table.md", table(rows) + "\n"),
             "figure": out / "reservoirs.png"}
    figure(rows, paths["figure"])
    return paths


def _labels(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The reservoirs in the order run, esnfed's last."""
    labels = list(dict.fromkeys(r["reservoir"] for r in rows))
    return sorted(labels, key=lambda label: label.startswith("esnfed"))


def _cell(values: list[float], seeds: int) -> str:
    """Mean ± std (%), with the number of seeds when fewer than the table's."""
    if not values:
        return "—"
    return f"{100 * np.mean(values):.1f} ± {100 * np.std(values):.1f}" + ("" if len(values) == seeds else f" (n={len(values)})")


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Test accuracy (%) mean ± std over seeds: a row per reservoir, a column per source and algorithm."""
    names = list(dict.fromkeys(r["data"] for r in rows))
    algos = list(dict.fromkeys(r["algorithm"] for r in rows))
    columns = [(n, a) for n in names for a in algos]
    seeds = len({r["seed"] for r in rows})
    lines = ["| reservoir | " + " | ".join(f"{n} {a}" for n, a in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for label in _labels(rows):
        cells = [_cell([r["accuracy"] for r in rows if (r["data"], r["reservoir"], r["algorithm"]) == (n, label, a)
                        and r["accuracy"] is not None], seeds) for n, a in columns]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figure(rows: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """First algorithm's test accuracy per reservoir (mean, std whiskers), a panel per source; esnfed grey."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["data"] for r in rows))
    algorithm = rows[0]["algorithm"]
    labels = _labels(rows)
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 5), squeeze=False)
    for ax, name in zip(axes[0], names):
        values = [[r["accuracy"] for r in rows if (r["data"], r["reservoir"], r["algorithm"]) == (name, label, algorithm)
                   and r["accuracy"] is not None] for label in labels]
        means = [100 * np.mean(v) if v else np.nan for v in values]
        ax.barh(range(len(labels)), means, xerr=[100 * np.std(v) if v else 0.0 for v in values],
                color=["tab:gray" if label.startswith("esnfed") else "tab:blue" for label in labels])
        ax.set_yticks(range(len(labels)), labels if ax is axes[0][0] else [""] * len(labels), fontsize=8)
        ax.invert_yaxis()
        finite = [m for m in means if np.isfinite(m)]
        ax.set_xlim(max(0.0, min(finite, default=10.0) - 10), 100)
        ax.set_title(name)
        ax.set_xlabel(f"{algorithm} test accuracy (%)")
    fig.tight_layout()
    try:
        with atomic_write(path) as fh:
            fig.savefig(fh, format="png", dpi=110)
    finally:
        plt.close(fig)
    return path
