"""Algorithms across reservoir topologies and depths (``tff-esn compare --reservoirs``), beside esnfed's
topologies built with the same sizes.

For each source and seed the training sequences are dealt to the clients by one partitioner, and every
reservoir of the comparison (:func:`reservoir_settings`) — ``tff-esn run``'s defaults on the source, a deep
ESN splitting the same N units over its layers — is trained by each algorithm. ``OUT`` receives
``results.csv`` (a row per source, reservoir, algorithm and seed: every class metric), ``table.md`` and
``table.tex`` (the selection objective) and the figure ``reservoirs.pdf``/``.svg``/``.png`` with its caption.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.registry import algorithms, defaults
from tff_esn.cli.compare.heterogeneity import check_folder, run_for, start_tff
from tff_esn.esn.hyperparameters import LEAK_DISTRIBUTIONS, TOPOLOGIES, ReservoirConfig
from tff_esn.common.io import write_csv_atomic, write_text_atomic
from tff_esn.common.progress import progress_bar
from tff_esn.common.run_warnings import warn
from tff_esn.runs.figures import (METRIC_NAMES, REFERENCE_STYLES, dataset_title, legend_outside, metric_label, pyplot,
                                  save_figure, series_style)
from tff_esn.runs.tables import Cell, Table

DEFAULT_RESERVOIRS = (*TOPOLOGIES, "leak-uniform", "deep-2", "deep-3", "esnfed")
"""The reservoirs compared unless named: every topology, per-unit uniform leak, deep ESNs of 2 and 3
layers, and esnfed's topologies."""

ESNFED_TOPOLOGIES = ("random", "small_world", "scale_free", "ring")
ESNFED_MISSING = "esnfed is not installed, so its topologies have no rows (pip install 'tff_esn[compare]')"
METRICS = ("accuracy", "balanced_accuracy", "f1_macro", "auc")
FIELDS = ("data", "reservoir", "algorithm", "seed", *METRICS, "objective", "majority", "logistic_regression",
          "seconds")
"""``results.csv``'s columns: every class metric on the test clients; ``majority`` and ``logistic_regression``
(the stronger one) on ``objective``, the score the runs select on."""


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


def esnfed_metrics(kind: str, data, split, config, l2: float, seed: int) -> dict[str, float | None]:
    """Test metrics of esnfed's ``kind`` reservoir with federated ridge (λ = ``l2``) from its predicted labels (AUC
    needs scores: ``None``); every metric ``None`` for per-step states."""
    from esnfed.classification import federated_classifier, predict_labels
    from esnfed.esn import EchoStateNetwork
    from esnfed.topologies import make_reservoir

    from tff_esn.common.metrics import classification_metrics

    if config.state_mode not in ("mean", "last"):
        return dict.fromkeys(METRICS)
    res, pool = config.reservoir, config.state_mode

    def sequences(client) -> list[np.ndarray]:
        return [client.x[i, :int(n)] for i, n in enumerate(client.steps)]

    esn = EchoStateNetwork(n_inputs=len(data.feature_names), n_outputs=data.n_classes,
                           reservoir=make_reservoir(kind, res.units, rng=seed), spectral_radius=res.spectral_radius,
                           input_scaling=res.input_scaling, leaking_rate=res.leaky, ridge=l2, seed=seed)
    clients = [(sequences(data.clients[c]), data.clients[c].y) for c in split.train]
    readout = federated_classifier(esn, clients, data.n_classes, pool=pool, washout=config.washout)
    test = data.pooled(split.test)
    predicted = np.asarray(predict_labels(esn, sequences(test), readout, pool=pool, washout=config.washout))
    scores = np.eye(data.n_classes)[predicted] if data.n_classes > 2 else predicted.astype(np.float64)
    return {**classification_metrics(test.y, scores, data.n_classes), "auc": None}


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    numbers = (*METRICS, "majority", "logistic_regression", "seconds")
    with open(path, newline="") as f:
        return [{**r, "seed": int(r["seed"]), **{k: float(r[k]) if r.get(k) else None for k in numbers}}
                for r in csv.DictReader(f)]


def _record_row(label: str, reservoir: str, algorithm: str, seed: int, record: dict[str, Any],
                objective: str) -> dict[str, Any]:
    """A ``results.csv`` row of a run's ``metrics.json`` record."""
    baselines = record.get("baselines") or {}
    stronger = (baselines.get("reference") or {}).get("logistic_regression", "logistic_regression")
    return {"data": label, "reservoir": reservoir, "algorithm": algorithm, "seed": seed,
            **{k: record["test"].get(k) for k in METRICS}, "objective": objective,
            **{key: ((baselines.get(name) or {}).get("test") or {}).get(objective)
               for key, name in (("majority", "majority"), ("logistic_regression", stronger))},
            "seconds": record["seconds"]}


def _gradient_trained(algorithm: str) -> bool:
    """Whether registry ``algorithm`` trains in rounds (takes the comparison's ``rounds``)."""
    return "rounds" in algorithms.config_fields(algorithms.get_algorithm(algorithm).config)


def esnfed_missing(comparison: ReservoirComparison) -> bool:
    """Whether ``comparison`` asks for esnfed's topologies and the peer library (the ``compare`` extra) is missing."""
    return "esnfed" in comparison.reservoirs and importlib.util.find_spec("esnfed") is None


def _cells(comparison: ReservoirComparison, label: str, data, split, pipeline: str, seed: int,
           out: Path) -> list[dict[str, Any]]:
    """Every reservoir × algorithm of one source and seed (and esnfed's topologies)."""
    rows, peer = [], "esnfed" in comparison.reservoirs and not esnfed_missing(comparison)
    units = run_for(comparison.algorithms[0], data, pipeline, seed=seed).record["units"]["value"]
    for name in (r for r in comparison.reservoirs if r != "esnfed"):
        reservoir, settings = reservoir_settings(name, units)
        for algorithm in comparison.algorithms:
            run: dict[str, Any] = {"seed": seed, **settings}
            if _gradient_trained(algorithm):
                run.update(rounds=comparison.rounds, progress=False,
                           out=str(out / "runs" / algorithm / label / name / f"seed{seed}"))
            resolved = run_for(algorithm, data, pipeline, **run)
            config = resolved.config
            record = algorithms.run_algorithm(resolved, data, split, start=start_tff)
            objective = defaults.class_objective(data.source, resolved.record)
            rows.append(_record_row(label, reservoir, algorithm, seed, record, objective))
            if name == "random" and algorithm == comparison.ridge and peer:
                l2 = record["l2_selection"]["l2"]  # and the state mode it chose
                chosen = (record.get("selection") or {}).get("state_mode", config.state_mode)
                config = dataclasses.replace(config, state_mode=chosen)
                for kind in ESNFED_TOPOLOGIES:
                    started = time.perf_counter()
                    scores = esnfed_metrics(kind, data, split, config, l2, seed)
                    rows.append({**rows[-1], "reservoir": f"esnfed {kind}", **{k: scores[k] for k in METRICS},
                                 "seconds": time.perf_counter() - started})
    return rows


def run_reservoir_comparison(comparison: ReservoirComparison, out: str | Path, *,
                             progress: bool = True) -> dict[str, Path]:
    """Runs (or resumes) ``comparison`` into ``out``, writing ``results.csv``, the tables and the figure;
    ``FileExistsError`` when ``out`` holds other settings."""
    from tff_esn.data.partition import partition_dataset
    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split

    out = Path(out)
    check_folder(out, comparison)
    if esnfed_missing(comparison):
        warn(f"compare --reservoirs esnfed: {ESNFED_MISSING}")
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
    drawn = save_figure(figure(comparison, rows), out / "reservoirs", caption(comparison, rows))
    results = results_table(comparison, rows)
    return {"csv": out / "results.csv", "table": write_text_atomic(out / "table.md", results.markdown()),
            "latex": write_text_atomic(out / "table.tex", results.latex()), "figure": drawn["pdf"],
            **{f"figure_{k}": v for k, v in drawn.items()}}


def _labels(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The reservoirs in the order run, esnfed's last."""
    labels = list(dict.fromkeys(r["reservoir"] for r in rows))
    return sorted(labels, key=lambda label: label.startswith("esnfed"))


def _objective(rows: Sequence[Mapping[str, Any]]) -> str:
    """The score the runs selected on (one for the whole comparison: balanced accuracy on own data)."""
    return next((r["objective"] for r in rows if r.get("objective")), "accuracy")


def _settings(comparison: ReservoirComparison, rows: Sequence[Mapping[str, Any]]) -> str:
    """The budget and settings a table and figure state."""
    seeds = sorted({r["seed"] for r in rows})
    rounds = (f" (gradient-trained: {comparison.rounds} rounds)" if any(map(_gradient_trained, comparison.algorithms))
              else "")
    peer = ESNFED_MISSING if esnfed_missing(comparison) else (
        f"esnfed's topologies read by {comparison.ridge or 'no'} federated ridge at the λ chosen for the random reservoir")
    return (f"data {', '.join(f'{label} ({source})' for label, source in comparison.sources)}; seeds {seeds}; "
            f"{comparison.clients} training clients dealt {comparison.partition}; algorithms "
            f"{', '.join(comparison.algorithms)}{rounds}; each reservoir of "
            f"tff-esn run's size on the source, a deep ESN splitting the same units over its layers; {peer}")


def results_table(comparison: ReservoirComparison, rows: Sequence[Mapping[str, Any]]) -> Table:
    """Test score (the selection objective, %) mean ± std over seeds: a row per reservoir, a column per source and
    algorithm, the majority class and the stronger logistic regression last; the best reservoir per column bold."""
    names = list(dict.fromkeys(r["data"] for r in rows))
    algos = list(dict.fromkeys(r["algorithm"] for r in rows))
    columns = [(n, a) for n in names for a in algos]
    seeds = len({r["seed"] for r in rows})
    objective = _objective(rows)
    body = []
    for label in _labels(rows):
        cells = tuple(Cell(tuple(r[objective] for r in rows if (r["data"], r["reservoir"], r["algorithm"]) ==
                                 (n, label, a)), seeds) for n, a in columns)
        body.append((label, tuple(c if c.values else None for c in cells), ()))
    for key, label in (("logistic_regression", "logistic regression (pooled data, reference)"),
                       ("majority", "majority class (constant, reference)")):
        first = {(r["data"], r["algorithm"], r["seed"]): r[key] for r in reversed(rows)}
        body.append((label, tuple(Cell(tuple(v for (d, a, _), v in first.items() if (d, a) == c), seeds)
                                  for c in columns), ()))
    caption = (f"Test {METRIC_NAMES[objective]} (%), mean ± std over seeds, per reservoir: {_settings(comparison, rows)}. "
               "Best reservoir per column in bold.")
    return Table(caption, "reservoir", tuple(f"{n} {a}" for n, a in columns), tuple(body), scale=100.0, digits=1,
                 marked=tuple(_labels(rows)))


def caption(comparison: ReservoirComparison, rows: Sequence[Mapping[str, Any]]) -> str:
    """The figure's caption file."""
    return (f"Test {METRIC_NAMES[_objective(rows)]} per reservoir (bars from 0, ± std over seeds; a bar per "
            f"algorithm, told apart by colour and hatch), a panel per source; vertical lines: the majority class "
            f"and the stronger logistic regression on pooled data. Settings: {_settings(comparison, rows)}.")


HATCHES = ("", "//", "..", "xx", "\\\\", "++")
"""One hatch per algorithm, beside its colour."""


def figure(comparison: ReservoirComparison, rows: Sequence[Mapping[str, Any]]):
    """Every algorithm's test score (the selection objective) per reservoir: grouped horizontal bars from 0 with
    ± std whiskers, a panel per source, the majority class and logistic regression as vertical lines."""
    plt = pyplot()
    names = list(dict.fromkeys(r["data"] for r in rows))
    algos = list(dict.fromkeys(r["algorithm"] for r in rows))
    labels = _labels(rows)
    objective = _objective(rows)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names) + 2.2, 0.35 * len(labels) * len(algos) + 1.8),
                             squeeze=False, sharey=True)
    height = 0.8 / len(algos)
    for ax, name in zip(axes[0], names):
        for i, algorithm in enumerate(algos):
            values = [[r[objective] for r in rows if (r["data"], r["reservoir"], r["algorithm"]) ==
                       (name, label, algorithm) and r[objective] is not None] for label in labels]
            y = np.arange(len(labels)) - 0.4 + height * (i + 0.5)
            style = series_style(i)
            ax.barh(y, [np.mean(v) if v else 0.0 for v in values], height=height * 0.92,
                    xerr=[np.std(v) if v else 0.0 for v in values], color=style["color"], edgecolor="black",
                    linewidth=0.5, hatch=HATCHES[i % len(HATCHES)], capsize=2, label=algorithm, zorder=2)
        for index, (key, label) in enumerate((("majority", "majority class"),
                                              ("logistic_regression", "logistic regression (pooled)"))):
            values = [r[key] for r in rows if r["data"] == name and r[key] is not None]
            if values:
                style, colour = REFERENCE_STYLES[index]
                ax.axvline(float(np.mean(values)), color=colour, linestyle=style, linewidth=1.2, label=label, zorder=3)
        ax.set_yticks(np.arange(len(labels)), labels)
        ax.set_xlim(0.0, 1.0)
        title = dataset_title(dict(comparison.sources)[name])
        ax.set_title(title if title.startswith(name) else f"{name}: {title}")
        ax.set_xlabel(metric_label(objective))
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].invert_yaxis()
    legend_outside(axes[0][-1])
    fig.tight_layout()
    return fig

