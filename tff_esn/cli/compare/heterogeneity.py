"""Every algorithm under controlled client heterogeneity: one data source, a grid of
partitioners, several seeds (``tff-esn compare``).

Each fitting algorithm runs on each partition and seed with ``tff-esn run``'s settings (closed form on
``numpy``), beside the centralized readout and logistic regression; ``OUT`` gets the cells' runs,
``results.csv``, ``table.md`` (accuracy; NRMSE on a real-valued task) and ``accuracy.png``, and a rerun resumes from the finished cells.
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

from tff_esn.registry import algorithms
from tff_esn.data.errors import DataError
from tff_esn.data.partition import Partitioner, partition_dataset
from tff_esn.common.io import atomic_write, write_csv_atomic, write_json_atomic, write_text_atomic
from tff_esn.common.progress import progress_bar
from tff_esn.common.validation import check_field, is_count

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


@dataclasses.dataclass(frozen=True)
class Measure:
    """What the table and figure read: the ``metric`` of a row, its pooled-data ``baseline`` and how to say them."""

    metric: str
    baseline: str
    name: str
    baseline_name: str
    flag_text: str


ACCURACY = Measure("accuracy", "logistic_regression", "accuracy", "logistic regression",
                   "predicts one class or does not beat the majority class")
NRMSE = Measure("nrmse", "lagged_ridge", "NRMSE (lower is better)", "ridge on lagged inputs",
                "does not beat the training mean")


def measure(dataset: Any) -> Measure:
    """:data:`NRMSE` for a real-valued task (forecast, regress), else :data:`ACCURACY`."""
    return NRMSE if dataset.task.real else ACCURACY


def _score(record: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The group a record is scored on (test, else validation) and its metrics."""
    group = "test" if record.get("test") else "val"
    return group, record.get(group) or {}


def _row(comparison: Comparison, name: str, partition: str, seed: int, record: Mapping[str, Any]) -> dict[str, Any]:
    if "error" in record:
        return {"source": comparison.source, "algorithm": name, "partition": partition, "seed": seed,
                **dict.fromkeys(("clients", "scored_on", "accuracy", "f1_macro", "logistic_regression", "nrmse",
                                 "lagged_ridge", "up_floats_per_client", "down_floats_per_client", "rounds",
                                 "seconds")), "flags": "", "error": record["error"]}
    group, metrics = _score(record)
    baselines = record.get("baselines") or {}
    logistic, lagged = (((baselines.get(key) or {}).get(group) or {}) for key in ("logistic_regression", "lagged_ridge"))
    comm = record["communication"]
    return {"source": comparison.source, "algorithm": name, "partition": partition, "seed": seed,
            "clients": record["partition"]["clients"], "scored_on": group, "accuracy": metrics.get("accuracy"),
            "f1_macro": metrics.get("f1_macro"), "logistic_regression": logistic.get("accuracy"),
            "nrmse": metrics.get("nrmse"), "lagged_ridge": lagged.get("nrmse"),
            "up_floats_per_client": comm["up_floats_per_client"],
            "down_floats_per_client": comm["down_floats_per_client"], "rounds": comm["rounds"],
            "seconds": record["seconds"], "flags": "; ".join((record.get("result_check") or {}).get(group, ())),
            "error": ""}


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
        rows.append(_row(comparison, name, partition, seed, record))
    bar.close()
    order = {name: i for i, name in enumerate(names)}
    rows.sort(key=lambda r: (order[r["algorithm"]], r["partition"] != "natural" and
                             comparison.partitions.index(r["partition"]), comparison.seeds.index(r["seed"])))
    seconds = time.perf_counter() - start
    paths = {"csv": write_csv_atomic(out / "results.csv", rows, fieldnames=list(rows[0])),
             "table": write_text_atomic(out / "table.md", markdown_table(comparison, dataset, rows, seconds)),
             "figure": out / "accuracy.png"}
    draw_figure(comparison, dataset, rows, paths["figure"])
    return paths


def _mean_std(values: Sequence[float | None]) -> tuple[float, float, int]:
    arr = np.array([v for v in values if v is not None and not math.isnan(v)], dtype=np.float64)
    return (float(arr.mean()), float(arr.std()), arr.size) if arr.size else (math.nan, math.nan, 0)


FLAG_MARK = "⚠"
"""Marks a cell where some seed's model predicts one class or does not beat the majority class
(:func:`tff_esn.common.result_check.check_result`)."""


def _cell_text(values: Sequence[float | None], expected: int, flagged: bool = False) -> str:
    mean, std, n = _mean_std(values)
    if n == 0:
        return "failed"
    return (f"{mean:.3f} ± {std:.3f}" + ("" if n == expected else f" ({n}/{expected})")
            + (f" {FLAG_MARK}" if flagged else ""))


def _label(partition: str) -> str:
    p = Partitioner.parse(partition)
    names = {"dirichlet": "α", "pathological": "k", "quantity": "size α", "powerlaw": "size a"}
    return "own clients" if p.kind == "natural" else p.kind if p.value is None else f"{names[p.kind]}={p.value:g}"


def markdown_table(comparison: Comparison, dataset: Any, rows: Sequence[Mapping[str, Any]], seconds: float) -> str:
    """Accuracy (real-valued: NRMSE, :func:`measure`) mean ± std per algorithm and partition, pooled baselines,
    floats per client, seconds; :data:`FLAG_MARK` marks a seed that predicts one class or loses to the majority."""
    m = measure(dataset)
    what = f"task {dataset.task.kind}" if dataset.task.real else f"{dataset.n_classes} classes"
    scored = sorted({r["scored_on"] for r in rows if r["scored_on"]}) or ["test"]
    n = len(comparison.seeds)
    head = ["algorithm", *(_label(p) for p in comparison.partitions), "up floats/client", "down floats/client",
            "rounds", "s/run"]
    files = comparison.source.partition(":")[0] in ("npz", "ts")  # read as they are: no pipeline
    lines = [f"**{comparison.source}** ({'' if files else comparison.pipeline + ', '}split {comparison.split}): "
             f"{' / '.join(scored)} "
             f"{m.name}, mean ± std over seeds {list(comparison.seeds)}; {comparison.clients} training clients "
             f"dealt by each partitioner; {what}"
             f"{'' if comparison.rounds is None else f'; FedAvg/FedCurv {comparison.rounds} rounds'}.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    pooled = reference([r["algorithm"] for r in rows])
    reference_rows = [r for r in rows if r["algorithm"] == pooled]
    for name in dict.fromkeys(r["algorithm"] for r in rows):
        mine = [r for r in rows if r["algorithm"] == name]
        ok = [r for r in mine if not r["error"]]
        if name == pooled:
            cells = [_cell_text([r[m.metric] for r in mine], n, any(r["flags"] for r in mine))
                     ] * len(comparison.partitions)
        else:
            cells = [_cell_text([r[m.metric] for r in mine if r["partition"] == p], n,
                                any(r["flags"] for r in mine if r["partition"] == p)) for p in comparison.partitions]
        comm = [_mean_std([r[k] for r in ok])[0] for k in ("up_floats_per_client", "down_floats_per_client",
                                                         "rounds", "seconds")]
        label = f"{name} (pooled data, reference)" if name == pooled else name
        lines.append("| " + " | ".join([label, *cells, *(f"{v:.0f}" if not math.isnan(v) else "-" for v in comm[:3]),
                                         f"{comm[3]:.1f}" if not math.isnan(comm[3]) else "-"]) + " |")
    if reference_rows:
        lr = _cell_text([r[m.baseline] for r in reference_rows], n)
        lines.append("| " + " | ".join([f"{m.baseline_name} (pooled data, reference)",
                                         *[lr] * len(comparison.partitions), "-", "-", "-", "-"]) + " |")
    errors = sorted({f"{r['algorithm']}: {r['error']}" for r in rows if r["error"]})
    lines += ["", f"Wall time {seconds:.0f} s (cells read from an earlier run count 0 s)."]
    if any(r["flags"] for r in rows):
        lines.append(f"{FLAG_MARK}: in some seed the model {m.flag_text} "
                     "(`result_check` and `warnings` of its metrics.json).")
    lines += [f"Failed: {e}" for e in errors]
    return "\n".join(lines) + "\n"


def draw_figure(comparison: Comparison, dataset: Any, rows: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """Accuracy (:func:`measure`) mean ± std band against partitions, one line per algorithm (red cross: flagged);
    pooled centralized readout and logistic regression dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = measure(dataset)
    x = np.arange(len(comparison.partitions))
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    pooled = reference([r["algorithm"] for r in rows])
    for name in dict.fromkeys(r["algorithm"] for r in rows):
        if name == pooled:
            continue
        stats = np.array([_mean_std([r[m.metric] for r in rows if r["algorithm"] == name and r["partition"] == p])
                          for p in comparison.partitions])
        line, = ax.plot(x, stats[:, 0], marker="o", label=name)
        ax.fill_between(x, stats[:, 0] - stats[:, 1], stats[:, 0] + stats[:, 1], color=line.get_color(), alpha=0.15)
        flagged = [i for i, p in enumerate(comparison.partitions)
                   if any(r["flags"] for r in rows if r["algorithm"] == name and r["partition"] == p)]
        if flagged:
            ax.plot(x[flagged], stats[flagged, 0], linestyle="none", marker="X", markersize=10, color="red",
                    label=f"{name}: {m.flag_text}")
    for key, label, color in ((m.metric, f"{pooled} (pooled)", "black"),
                              (m.baseline, f"{m.baseline_name} (pooled)", "grey")):
        mean, std, n = _mean_std([r[key] for r in rows if r["algorithm"] == pooled])
        if n:
            ax.axhline(mean, color=color, linestyle="--", label=label)
            ax.axhspan(mean - std, mean + std, color=color, alpha=0.08)
    ax.set_xticks(x, [_label(p) for p in comparison.partitions])
    ax.set_xlabel("partition of the training sequences (more heterogeneous →)")
    group = next((r["scored_on"] for r in rows if r["scored_on"]), "test")
    ax.set_ylabel(f"{group} {m.name}")
    ax.set_title(f"{comparison.source}: {comparison.clients} clients, {len(comparison.seeds)} seeds, "
                 f"{f'task {dataset.task.kind}' if dataset.task.real else f'{dataset.n_classes} classes'}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    try:
        with atomic_write(path) as fh:
            fig.savefig(fh, format="png", dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path
