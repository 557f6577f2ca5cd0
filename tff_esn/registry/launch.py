"""A run request carried out: ``tff-esn run`` and library users launch a run through :func:`launch`.

It resolves the run once, checks the run folder and the source's memory before the data loads, loads,
splits and partitions the data, runs the algorithm (checks once, TFF's context when the run needs it)
and writes ``metrics.json``.
"""

from __future__ import annotations

import dataclasses
import shutil
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tff_esn.registry.algorithms import ResolvedRun, get_algorithm, resolve_run, run_algorithm
from tff_esn.data.errors import DataError
from tff_esn.common.run_warnings import RunWarning, merged, recording

if TYPE_CHECKING:
    from tff_esn.data.sequences import SequenceDataset, Split

SHARED = ("out", "cache_dir")
"""Request fields that are settings of some configs too (the federated runs' ``out`` and ``cache_dir``)."""


class RequestError(ValueError):
    """A request that cannot run as asked (a setting, the data, the run folder or the memory): one line."""


@dataclasses.dataclass(frozen=True)
class RunRequest:
    """One run as asked: ``algorithm`` on ``data`` into ``out``, setting ``layers`` (the first wins), ``options``,
    the training clients' ``partition``, TFF ``workers`` (``None``: one local), other ``cli`` flags and
    ``standardize`` (:mod:`tff_esn.runs.standardize`; ``series_range``: by stated public ranges) and ``free_run``
    steps (:mod:`tff_esn.runs.free_run`)."""

    algorithm: str
    out: str | Path
    data: str = "synthetic-wesad"
    layers: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    train_fraction: float = 1.0
    partition: str = "natural"
    clients: int | None = None
    partition_groups: tuple[str, ...] = ("train",)
    cache_dir: str | None = None
    force: bool = False
    test_required: bool = True
    workers: Sequence[str] | None = None
    worker_timeout: float | None = None
    cli: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    standardize: str = "auto"
    free_run: int | None = None
    series_range: tuple[float, ...] | None = None


def resolved(request: RunRequest) -> ResolvedRun:
    """``request``'s run (:func:`~tff_esn.registry.algorithms.resolve_run`): its layers, ``out``, ``cache_dir``."""
    algo = get_algorithm(request.algorithm)
    shared = {k: str(v) for k in SHARED if k in algo.settings() and (v := getattr(request, k)) is not None}
    from tff_esn.data.sources import source_task

    task = getattr(request.options.get("task"), "kind", None) or source_task(request.data)
    return resolve_run(algo, request.data, ("flag", shared), *request.layers, task=task)


def launch(request: RunRequest) -> tuple[dict[str, Any], Path]:
    """Carries out ``request``: its ``metrics.json`` record and path (:class:`RequestError` before any work)."""
    from tff_esn import runtime
    from tff_esn.data.checks import check_split
    from tff_esn.data.partition import partition_dataset
    from tff_esn.data.seed_sources.pipelines import PIPELINES
    from tff_esn.data.sources import load_source, source_layout, source_stand_in
    from tff_esn.data.splits import get_split
    from tff_esn.common.io import write_json_atomic
    from tff_esn.runs.memory import MemoryLimitError, check_memory
    from tff_esn.runs.identity import check_resume
    from tff_esn.runs.run_folder import check_run_folder, clear_run

    with recording() as said:
        try:
            run = resolved(request)
            config, own = run.config, run.record["pipeline"]["value"] is None
            if request.workers is not None and not run.tff:
                raise ValueError(f"--workers: {request.algorithm} with these settings runs no TFF computation "
                                 "(numpy or sim backend, or no federated computation at all); drop --workers, or "
                                 "give --backend tff.")
            squares = [n for n, cls in sorted(PIPELINES.items()) if "squared" in cls.__dataclass_fields__]
            if request.options.get("squared") and (own or run.pipeline not in squares):
                raise ValueError(f"--squared-inputs: applies to the pipelines {', '.join(squares)}, got "
                                 f"{'an npz:FILE source' if own else '--pipeline ' + run.pipeline}.")
            out = check_run_folder(request.out, force=request.force, resume=getattr(config, "resume", False),
                                   rounds=getattr(config, "rounds", None), resumable=hasattr(config, "resume"))
            layout = source_layout(request.data, **request.options)
            if layout is not None:  # own data: its memory, then an npz's split, before its values load
                check_memory(config, layout, tff=run.tff)
            stand_in = source_stand_in(request.data)

            def dealt(dataset: SequenceDataset) -> tuple[SequenceDataset, Split, dict]:
                seed = getattr(run.config, "seed", 0)
                split = get_split(run.split, dataset, train_fraction=request.train_fraction, seed=seed)
                return partition_dataset(dataset, split, request.partition, request.clients, seed=seed,
                                         groups=request.partition_groups)

            if stand_in is not None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RunWarning)
                    check_split(*dealt(stand_in)[:2], federated=not run.algorithm.pooled,
                                test_required=request.test_required)
            dataset, split, partition = dealt(load_source(request.data, run.pipeline, cache_dir=request.cache_dir,
                                                          **request.options))
            if getattr(config, "resume", False):  # another run's folder: refused before the harvest
                check_resume(out, config, dataset, split)
        except DataError:
            raise
        except (TypeError, ValueError) as err:
            raise RequestError(str(err)) from None

    def start(run: ResolvedRun) -> None:  # once the run's checks pass
        if request.force:
            clear_run(out)
        if run.tff:  # no workers given: a local worker, a fresh one after other workers
            fresh = request.workers is None and runtime.current_workers() is not None
            runtime.ensure_context(request.workers, timeout=request.worker_timeout, force=fresh, prestart=True)

    try:
        record = run_algorithm(run, dataset, split, test_required=request.test_required, start=start,
                               partition=partition, standardize=request.standardize,
                               free_run=request.free_run, series_range=request.series_range)
    except MemoryLimitError as err:
        raise RequestError(str(err)) from None
    record.update(warnings=merged(said, record["warnings"]), cli=dict(request.cli))
    model = record.model.save(out / "model")
    try:
        return record, write_json_atomic(out / "metrics.json", record)
    except BaseException:  # a model without its metrics.json is no published run
        shutil.rmtree(model, ignore_errors=True)
        raise
