"""Every algorithm under controlled client heterogeneity: one data source, a grid of
partitioners, several seeds (``tff-esn compare``).

Each fitting algorithm runs on each partition and seed with ``tff-esn run``'s settings (closed form on
``numpy``), beside the centralized readout, logistic regression and the majority class; ``OUT`` gets the cells'
runs, ``results.csv`` (every metric of the task), ``table.md`` and ``table.tex`` (the selection objective:
accuracy on the seeds' data, balanced accuracy on own data, NRMSE on a real-valued task) and the figure
``METRIC.pdf``/``.svg``/``.png`` with its caption, and a rerun resumes from the finished cells.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.registry import algorithms, defaults
from tff_esn.data.errors import DataError
from tff_esn.data.partition import Partitioner, partition_dataset
from tff_esn.data.source_names import own_data
from tff_esn.common.io import write_csv_atomic, write_json_atomic, write_text_atomic
from tff_esn.common.progress import progress_bar
from tff_esn.common.validation import check_field, is_count
from tff_esn.runs.figures import (METRIC_NAMES, dataset_title, grouped_points, legend_outside, metric_label, pyplot,
                                  reference_line, save_figure)
from tff_esn.runs.tables import Cell, Table

DEFAULT_PARTITIONS = ("dirichlet:100", "dirichlet:1", "dirichlet:0.3", "dirichlet:0.1")


@dataclasses.dataclass(frozen=True)
class CompareProfile:
    """A grid size: partitioners, seeds, client count and FedAvg/FedCurv rounds (``None``: their own)."""

    partitions: tuple[str, ...]
    seeds: tuple[int, ...]
    clients: int
    rounds: int | None = None


PROFILES = {
    "quick": CompareProfile(("dirichlet:100", "dirichlet:1", "dirichlet:0.1"), (0, 1), 5, 10),
    "full": CompareProfile(("iid", *DEFAULT_PARTITIONS), (0, 1, 2, 3, 4), 20),
}


@dataclasses.dataclass(frozen=True)
class Comparison:
    """One comparison: ``source`` with ``pipeline`` (``None`` for own data, read as it is) and ``split``, dealt by each
    of ``partitions`` to ``clients`` clients, one run per seed and algorithm (``None``: :func:`fitting_algorithms`);
    ``options`` as ``load_source``'s."""

    source: str
    pipeline: str | None
    split: str
    partitions: tuple[str, ...] = DEFAULT_PARTITIONS
    clients: int = 20
    seeds: tuple[int, ...] = (0, 1, 2)
    algorithms: tuple[str, ...] | None = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    cache_dir: str | None = None
    rounds: int | None = None

    def __post_init__(self) -> None:
        texts = list(self.partitions)
        if not texts or len(set(texts)) != len(texts) or any(Partitioner.parse(t).kind == "natural" for t in texts):
            raise ValueError(f"partitions: expected at least one partitioner, none repeated, none natural ('natural' "
                             f"has no client count; compare re-deals the training sequences: use iid for the "
                             f"unskewed end of the grid), got {texts}.")
        check_field(self, "clients", is_count(self.clients, 1), "an integer ≥ 1", flag="")
        check_field(self, "rounds", self.rounds is None or is_count(self.rounds, 1), "an integer ≥ 1 or None", flag="")
        check_field(self, "seeds", bool(self.seeds) and len(set(self.seeds)) == len(self.seeds)
                    and all(is_count(s, 0) for s in self.seeds), "distinct integers ≥ 0", flag="")
        if self.algorithms is not None:
            known = algorithms.available_algorithms()
            unknown = [a for a in self.algorithms if a not in known]
            if unknown or not self.algorithms:
                raise ValueError(f"algorithms: unknown {unknown}; available: {', '.join(known)}.")

    def settings(self) -> dict[str, Any]:
        """The settings as JSON (``comparison.json``)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))


def _family(algo: algorithms.Algorithm) -> str:
    from tff_esn.closed_form.configs import ReadoutConfig
    from tff_esn.federated.configs import FedAvgConfig

    if issubclass(algo.config, ReadoutConfig):
        return "closed form"
    return "federated" if issubclass(algo.config, FedAvgConfig) else "other"


def reference(names: Sequence[str]) -> str | None:
    """The algorithm of ``names`` that pools the training data: a reference line (``None``: none)."""
    return next((name for name in names if algorithms.get_algorithm(name).pooled), None)


def fitting_algorithms(dataset: Any) -> tuple[str, ...]:
    """Registry algorithms a comparison runs on ``dataset``: the closed-form family (:func:`reference` first)
    and FedAvg/FedCurv, each where its entry takes the label kind (and ragged data)."""
    kind = "multiclass" if dataset.n_classes > 2 else "binary"
    chosen = []
    for name, algo in algorithms.available_algorithms().items():
        fits = (_family(algo) in ("closed form", "federated") and dataset.task.kind in algo.tasks
                and (dataset.task.real or kind in algo.labels))
        if fits and (algo.ragged or not dataset.ragged):
            chosen.append(name)
    pooled = reference(chosen)
    return tuple(sorted(chosen, key=lambda n: n != pooled))


def run_for(name: str, dataset: Any, pipeline: str | None = None, **given: Any) -> algorithms.ResolvedRun:
    """``name``'s run as ``tff-esn run`` resolves it on ``dataset`` with ``given`` settings (unknown ignored),
    on the ``numpy`` backend where offered."""
    algo = algorithms.get_algorithm(name)
    fields = algorithms.config_fields(algo.config)
    if "numpy" in (fields["backend"].metadata.get("choices", ()) if "backend" in fields else ()):
        given.setdefault("backend", "numpy")
    return algorithms.resolve_run(algo, dataset, pipeline=pipeline, **{k: v for k, v in given.items() if k in fields})


def start_tff(run: algorithms.ResolvedRun) -> None:
    """``run_algorithm``'s ``start``: TFF's local context when ``run`` executes TFF."""
    if run.tff:
        from tff_esn import runtime

        runtime.ensure_context()


def _slug(text: str) -> str:
    return text.replace(":", "-").replace("/", "_")


CLASS_METRICS = ("accuracy", "balanced_accuracy", "f1_macro", "auc")
REAL_METRICS = ("nrmse", "rmse", "mae", "r2")
FIELDS = ("source", "algorithm", "partition", "seed", "clients", "scored_on", *CLASS_METRICS, *REAL_METRICS,
          "majority", "logistic_regression", "training_mean", "lagged_ridge", "up_floats_per_client",
          "down_floats_per_client", "rounds", "seconds", "flags", "error")
"""``results.csv``'s columns: every metric of the task, and the baselines on the table's metric."""


@dataclasses.dataclass(frozen=True)
class Measure:
    """What the table and figure read: the ``metric`` of a row, its baselines (a constant ``floor`` and a pooled
    model ``baseline``) and how to say them."""

    metric: str
    floor: str
    baseline: str
    floor_name: str
    baseline_name: str
    flag_text: str

    @property
    def lower_is_better(self) -> bool:
        """Whether a smaller value is better (an error)."""
        return self.metric in ("nrmse", "rmse", "mae")


NRMSE = Measure("nrmse", "training_mean", "lagged_ridge", "training mean", "ridge on lagged inputs",
                "does not beat the training mean")


def measure(dataset: Any, source: str | None = None) -> Measure:
    """:data:`NRMSE` for a real-valued task (forecast, regress), else the class score runs select on
    (:func:`~tff_esn.registry.defaults.class_objective`: balanced accuracy on own data) beside the majority class
    and the stronger logistic regression."""
    if dataset.task.real:
        return NRMSE
    metric = defaults.class_objective(source or dataset.source, {})
    return Measure(metric, "majority", "logistic_regression", "majority class", "logistic regression",
                   "predicts one class or does not beat the majority class")


def _score(record: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The group a record is scored on (test, else validation) and its metrics."""
    group = "test" if record.get("test") else "val"
    return group, record.get(group) or {}


def _baseline_values(record: Mapping[str, Any], group: str, metric: str) -> dict[str, float | None]:
    """The record's baselines on ``group``: the majority class and the stronger logistic regression on ``metric``,
    the training mean's and lagged ridge's NRMSE."""
    baselines = record.get("baselines") or {}
    stronger = (baselines.get("reference") or {}).get("logistic_regression", "logistic_regression")

    def value(key: str, name: str) -> float | None:
        return ((baselines.get(key) or {}).get(group) or {}).get(name)

    return {"majority": value("majority", metric), "logistic_regression": value(stronger, metric),
            "training_mean": value("training_mean", "nrmse"), "lagged_ridge": value("lagged_ridge", "nrmse")}


def _row(comparison: Comparison, name: str, partition: str, seed: int, record: Mapping[str, Any],
         metric: str) -> dict[str, Any]:
    row = {**dict.fromkeys(FIELDS), "source": comparison.source, "algorithm": name, "partition": partition,
           "seed": seed, "flags": "", "error": ""}
    if "error" in record:
        return {**row, "error": record["error"]}
    group, metrics = _score(record)
    comm = record["communication"]
    row.update({k: metrics.get(k) for k in (*CLASS_METRICS, *REAL_METRICS)})
    row.update(_baseline_values(record, group, metric))
    row.update({"clients": record["partition"]["clients"], "scored_on": group,
                "up_floats_per_client": comm["up_floats_per_client"],
                "down_floats_per_client": comm["down_floats_per_client"], "rounds": comm["rounds"],
                "seconds": record["seconds"], "flags": "; ".join((record.get("result_check") or {}).get(group, ()))})
    return row


def run_cell(comparison: Comparison, name: str, data: Any, split: Any, partition: Mapping[str, Any], seed: int,
             folder: Path) -> dict[str, Any]:
    """One algorithm on one partitioned dataset (:func:`~tff_esn.data.partition.partition_dataset`) with ``seed``:
    ``metrics.json``'s record (with ``"partition"``), or ``{"error": message}`` when refused."""
    run = {"seed": seed, "out": str(folder), "progress": False, "resume": (folder / "checkpoints").exists()}
    if comparison.rounds is not None and _family(algorithms.get_algorithm(name)) == "federated":
        run["rounds"] = comparison.rounds
    resolved = run_for(name, data, comparison.pipeline, **run)
    try:
        return algorithms.run_algorithm(resolved, data, split, start=start_tff, partition=partition)
    except (DataError, ValueError) as err:
        return {"error": " ".join(f"{type(err).__name__}: {err}".split())}


def _cells(comparison: Comparison, names: Sequence[str]) -> list[tuple[str, int, str]]:
    """``(partition, seed, algorithm)`` cells: the reference once per seed on the own clients, others on every
    partition; grouped so one dealt dataset serves a group."""
    pooled = reference(names)
    cells = [("natural", seed, pooled) for seed in comparison.seeds if pooled is not None]
    for partition in comparison.partitions:
        for seed in comparison.seeds:
            cells += [(partition, seed, name) for name in names if name != pooled]
    return cells


def check_folder(out: Path, comparison: Any) -> None:
    """Records ``comparison.settings()`` in ``out/comparison.json``; refuses a folder holding other settings."""
    path = out / "comparison.json"
    if path.exists():
        try:
            previous = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            previous = None
        if previous != comparison.settings():
            raise FileExistsError(f"{out}: holds a comparison with other settings ({path}); choose another "
                                  "folder or remove it.")
    write_json_atomic(path, comparison.settings())


def run_comparison(comparison: Comparison, out: str | Path, *, progress: bool = True) -> dict[str, Path]:
    """Runs (or resumes) ``comparison`` into ``out``; returns the CSV, table and figure paths;
    ``FileExistsError`` where ``out`` holds other settings."""
    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split

    out = Path(out)
    start = time.perf_counter()
    dataset = load_source(comparison.source, comparison.pipeline, cache_dir=comparison.cache_dir,
                          **dict(comparison.options))
    split = get_split(comparison.split, dataset)
    names = comparison.algorithms or fitting_algorithms(dataset)
    m = measure(dataset, comparison.source)
    for text in comparison.partitions:  # refuse an impossible grid before any run
        partition_dataset(dataset, split, text, comparison.clients, seed=comparison.seeds[0])
    check_folder(out, comparison)
    rows = []
    dealt: dict[tuple[str, int], tuple] = {}
    bar = progress_bar(_cells(comparison, names), wanted=progress, desc=f"compare {comparison.source}", unit="run")
    for partition, seed, name in bar:
        bar.set_postfix(now=f"{name} {partition} seed {seed}", refresh=False)
        folder = out / "runs" / name / _slug(partition) / f"seed{seed}"
        done = folder / "metrics.json"
        if done.exists():
            record = json.loads(done.read_text())
        else:
            if (partition, seed) not in dealt:  # the group's dataset, dealt once (the previous one freed)
                clients = None if partition == "natural" else comparison.clients
                dealt = {(partition, seed): partition_dataset(dataset, split, partition, clients, seed=seed)}
            record = run_cell(comparison, name, *dealt[(partition, seed)], seed, folder)
            write_json_atomic(done, record)
        rows.append(_row(comparison, name, partition, seed, record, m.metric))
    bar.close()
    order = {name: i for i, name in enumerate(names)}
    rows.sort(key=lambda r: (order[r["algorithm"]], r["partition"] != "natural" and
                             comparison.partitions.index(r["partition"]), comparison.seeds.index(r["seed"])))
    seconds = time.perf_counter() - start
    table = results_table(comparison, dataset, rows, seconds)
    figure = save_figure(draw_figure(comparison, dataset, rows), out / m.metric, figure_caption(comparison, dataset, rows))
    return {"csv": write_csv_atomic(out / "results.csv", rows, fieldnames=list(FIELDS)),
            "table": write_text_atomic(out / "table.md", table.markdown() + _notes(rows, seconds, m)),
            "latex": write_text_atomic(out / "table.tex", table.latex()),
            "figure": figure["pdf"], **{f"figure_{k}": v for k, v in figure.items()}}


def _mean_std(values: Sequence[float | None]) -> tuple[float, float, int]:
    cell = Cell(tuple(values), 0)
    return cell.mean, cell.std, cell.finite.size


FLAG_MARK = "⚠"
"""Marks a cell where some seed's model predicts one class or does not beat the majority class
(:func:`tff_esn.common.result_check.check_result`)."""


def _label(partition: str) -> str:
    p = Partitioner.parse(partition)
    names = {"dirichlet": "α", "pathological": "k", "quantity": "size α", "powerlaw": "size a"}
    return "own clients" if p.kind == "natural" else p.kind if p.value is None else f"{names[p.kind]}={p.value:g}"


def _settings_text(comparison: Comparison, dataset: Any, rows: Sequence[Mapping[str, Any]]) -> str:
    """The budget and settings a table and figure state: seeds, clients, partitions, classes, rounds."""
    what = f"task {dataset.task.kind}" if dataset.task.real else f"{dataset.n_classes} classes"
    rounds = sorted({int(r["rounds"]) for r in rows if r["rounds"] is not None and _federated(r["algorithm"])})
    budget = (f"FedAvg/FedCurv {comparison.rounds} rounds" if comparison.rounds is not None else
              f"FedAvg/FedCurv rounds run {', '.join(map(str, rounds))}" if rounds else "")
    files = own_data(comparison.source)  # read as they are: no pipeline
    return (f"{dataset_title(comparison.source)} ({comparison.source}; "
            f"{'' if files else 'pipeline ' + comparison.pipeline + ', '}split {comparison.split}; {what}); "
            f"seeds {list(comparison.seeds)}; {comparison.clients} training clients dealt by each "
            f"partitioner ({', '.join(comparison.partitions)}); closed-form readouts on the numpy backend with "
            f"tff-esn run's settings" + (f"; {budget}" if budget else ""))


def _federated(name: str) -> bool:
    return _family(algorithms.get_algorithm(name)) == "federated"


def results_table(comparison: Comparison, dataset: Any, rows: Sequence[Mapping[str, Any]],
                  seconds: float) -> Table:
    """The table metric (:func:`measure`) mean ± std per algorithm and partition, the pooled reference rows, floats
    per client, rounds and seconds; best per partition in bold; :data:`FLAG_MARK` on a seed flagged by the result
    check."""
    m = measure(dataset, comparison.source)
    scored = sorted({r["scored_on"] for r in rows if r["scored_on"]}) or ["test"]
    n = len(comparison.seeds)
    pooled = reference([r["algorithm"] for r in rows])
    body = []
    for name in dict.fromkeys(r["algorithm"] for r in rows):
        mine = [r for r in rows if r["algorithm"] == name]
        ok = [r for r in mine if not r["error"]]
        groups = [mine] * len(comparison.partitions) if name == pooled else [
            [r for r in mine if r["partition"] == p] for p in comparison.partitions]
        cells = tuple(Cell(tuple(r[m.metric] for r in g), n, FLAG_MARK if any(r["flags"] for r in g) else "")
                      for g in groups)
        comm = [_mean_std([r[k] for r in ok])[0] for k in ("up_floats_per_client", "down_floats_per_client",
                                                         "rounds", "seconds")]
        extra = (*(f"{v:.0f}" if not math.isnan(v) else "-" for v in comm[:3]),
                 f"{comm[3]:.1f}" if not math.isnan(comm[3]) else "-")
        body.append((f"{name} (pooled data, reference)" if name == pooled else name, cells, extra))
    reference_rows = [r for r in rows if r["algorithm"] == pooled] or [r for r in rows if not r["error"]]
    for key, label in ((m.baseline, f"{m.baseline_name} (pooled data, reference)"),
                       (m.floor, f"{m.floor_name} (constant, reference)")):
        values = [r[key] for r in reference_rows if r["partition"] == reference_rows[0]["partition"]]
        if any(v is not None for v in values):
            body.append((label, (Cell(tuple(values), n),) * len(comparison.partitions), ("-", "-", "-", "-")))
    algorithms_run = tuple(dict.fromkeys(r["algorithm"] for r in rows if r["algorithm"] != pooled))
    caption = (f"{' / '.join(scored)} {METRIC_NAMES[m.metric]}{' (lower is better)' if m.lower_is_better else ''}, "
               f"mean ± std over seeds, per partition: {_settings_text(comparison, dataset, rows)}. "
               f"Best federated value per partition in bold.")
    return Table(caption, "algorithm", tuple(_label(p) for p in comparison.partitions), tuple(body),
                 ("up floats/client", "down floats/client", "rounds", "s/run"), m.lower_is_better,
                 marked=algorithms_run)


def _notes(rows: Sequence[Mapping[str, Any]], seconds: float, m: Measure) -> str:
    lines = ["", f"Wall time {seconds:.0f} s (cells read from an earlier run count 0 s)."]
    if any(r["flags"] for r in rows):
        lines.append(f"{FLAG_MARK}: in some seed the model {m.flag_text} "
                     "(`result_check` and `warnings` of its metrics.json).")
    lines += [f"Failed: {e}" for e in sorted({f"{r['algorithm']}: {r['error']}" for r in rows if r["error"]})]
    return "\n".join(lines) + "\n"


def figure_caption(comparison: Comparison, dataset: Any, rows: Sequence[Mapping[str, Any]]) -> str:
    """The figure's caption file: what is drawn, the reference lines and the settings."""
    m = measure(dataset, comparison.source)
    return (f"Test {METRIC_NAMES[m.metric]} of each algorithm per partition of the training sequences (left to "
            f"right: more heterogeneous), mean with ± std error bars over the seeds; points of one partition are "
            f"spread sideways so equal values stay visible. Horizontal lines: the pooled-data reference readout, "
            f"{m.baseline_name} on pooled data and the {m.floor_name}. "
            f"Settings: {_settings_text(comparison, dataset, rows)}.")


def draw_figure(comparison: Comparison, dataset: Any, rows: Sequence[Mapping[str, Any]]):
    """The table metric (:func:`measure`) per partition as grouped points with ± std error bars, one marker and
    colour per algorithm (red ring: a flagged seed); the pooled reference, logistic regression / lagged ridge and
    the majority class / training mean as horizontal lines. Returns the figure."""
    plt = pyplot()
    m = measure(dataset, comparison.source)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    pooled = reference([r["algorithm"] for r in rows])
    series = {}
    for name in dict.fromkeys(r["algorithm"] for r in rows):
        if name == pooled:
            continue
        stats = [_mean_std([r[m.metric] for r in rows if r["algorithm"] == name and r["partition"] == p])
                 for p in comparison.partitions]
        series[name] = ([s[0] for s in stats], [s[1] for s in stats])
    drawn = grouped_points(ax, [_label(p) for p in comparison.partitions], series)
    for (name, _), container in zip(series.items(), drawn):
        flagged = [i for i, p in enumerate(comparison.partitions)
                   if any(r["flags"] for r in rows if r["algorithm"] == name and r["partition"] == p)]
        if flagged:
            x, y = container.lines[0].get_data()
            ax.plot(np.asarray(x)[flagged], np.asarray(y)[flagged], linestyle="none", marker="o", markersize=11,
                    markerfacecolor="none", markeredgecolor="#D55E00", markeredgewidth=1.2, zorder=4)
    if any(r["flags"] for r in rows):
        ax.plot([], [], linestyle="none", marker="o", markerfacecolor="none", markeredgecolor="#D55E00",
                label=f"some seed {m.flag_text}")
    lines = ((m.metric, f"{pooled} (pooled data)"), (m.baseline, f"{m.baseline_name} (pooled data)"),
             (m.floor, m.floor_name))
    reference_rows = [r for r in rows if r["algorithm"] == pooled] or [r for r in rows if not r["error"]]
    for index, (key, label) in enumerate(lines):
        first = reference_rows[0]["partition"] if reference_rows else None
        mean, std, count = _mean_std([r[key] for r in reference_rows if r["partition"] == first])
        if count:
            reference_line(ax, mean, label, index, spread=std if index == 0 else None)
    ax.set_xlabel("partition of the training sequences (more heterogeneous →)")
    group = next((r["scored_on"] for r in rows if r["scored_on"]), "test")
    ax.set_ylabel(metric_label(m.metric, group))
    what = f"task {dataset.task.kind}" if dataset.task.real else f"{dataset.n_classes} classes"
    ax.set_title(f"{dataset_title(comparison.source)}: {what}, {comparison.clients} clients, "
                 f"{len(comparison.seeds)} seeds")
    ax.grid(axis="y", alpha=0.3)
    legend_outside(ax)
    fig.tight_layout()
    return fig
