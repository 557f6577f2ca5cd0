"""``load_source``: a data source run through a pipeline, cached on disk.

Sources: ``synthetic-wesad``, ``synthetic-hhar``, ``wesad:DIR``, ``hhar:DIR``, ``npz:FILE``, ``csv:FILE``,
``ts:DIR/NAME`` (each kind one :data:`SOURCES` entry) and the generated series (``narmaN``, ``mackey-glass``,
``lorenz``, ``sine``; not cached). Options configure the source or the pipeline; the cache key is the source (files:
names, sizes, times), pipeline and options.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.data import cache
from tff_esn.data.seed_sources.hhar_source import hhar_loader
from tff_esn.data.seed_sources.pipelines import PIPELINES, Pipeline, make_pipeline
from tff_esn.data.layout import DataLayout
from tff_esn.data.sequences import (SequenceDataset, as_classes, class_like, load_npz, npz_holds_series, npz_layout,
                                    npz_real_targets, npz_stand_in)
from tff_esn.data.series_files import load_series_csv, load_series_npz
from tff_esn.data.errors import DataError
from tff_esn.data.source_names import is_series
from tff_esn.common.run_warnings import warn
from tff_esn.common.tasks import Task
from tff_esn.data.ts import load_ts, ts_layout
from tff_esn.data.seed_sources.wesad_source import wesad_loader


def _nothing(arg: str) -> None:
    """No layout or stand-in before the values load (the seed sources)."""
    return None


def _own(read: Callable[..., SequenceDataset], names: tuple[str, ...]) -> Callable[..., SequenceDataset]:
    """The loader of an own-data kind: ``read(arg, **options)`` after the options are checked against ``names``."""

    def load(source: str, kind: str, arg: str, pipeline: str, cache_dir: Any, options: dict) -> SequenceDataset:
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise ValueError(f"source {source!r}: unknown option(s) {unknown} ({kind} takes "
                             f"{', '.join(map(repr, names))}).")
        return read(arg, **options)

    return load


def _seed(loader: Callable[..., tuple[Callable, dict]]) -> Callable[..., SequenceDataset]:
    """The loader of a seed source: ``loader(kind, arg, options, pipeline class)``'s build run through the named
    pipeline, cached under the source's key, the pipeline and its options."""

    def load(source: str, kind: str, arg: str, pipeline: str, cache_dir: Any, options: dict) -> SequenceDataset:
        build, key = loader(kind, arg, options, PIPELINES.get(pipeline, Pipeline))
        pipe = make_pipeline(pipeline, **options)
        data = kind.removeprefix("synthetic-")
        if pipe.data != data:
            raise ValueError(f"pipeline {pipeline!r} reads {pipe.data.upper()}, but source {source!r} is "
                             f"{data.upper()}.")
        name = f"{pipeline}-{cache.cache_key({'source': key, 'pipeline': pipeline, 'options': pipe.options()})}"
        path = cache.cache_root(cache_dir) / "datasets" / f"{name}.npz"
        if path.exists():
            return cache.load_dataset(path)
        dataset = build(pipe, source)
        cache.save_dataset(path, dataset)
        return dataset

    return load


def _npz(path: str, task: Task | None = None, **options: Any) -> SequenceDataset:
    """An ``.npz``'s sequences: own series forecast (:func:`load_series_npz`), else :func:`load_npz`; a float ``y``
    with no task given is read as a regression's targets with a warning (:data:`AMBIGUOUS_Y`; for targets that read
    like class labels, :func:`_as_task`'s)."""
    if npz_holds_series(path):
        return load_series_npz(path, task=task, **options)
    dataset = load_npz(path, **options)
    if task is None and dataset.task.kind == "regress" and not class_like(
            np.concatenate([c.y.reshape(-1) for c in dataset.clients.values()])):  # class-like: the sharper warning
        warn(f"npz:{path}: {AMBIGUOUS_Y}; read as a regression (--task regress).")
    return dataset


AMBIGUOUS_Y = ("y holds real numbers; say what they are: --task regress (y is the target) or --task forecast "
               "(forecast X's channel, y unused), or save the series as `series` without y")
"""What a float ``y`` with no task given is told: ``tff-esn run`` refuses it, a library load warns."""


def ambiguous_targets(source: str) -> bool:
    """Whether ``source`` is an ``.npz`` of X and a float ``y`` (a regression's targets, or a dummy beside series)."""
    kind, arg = parse_source(source)
    return kind == "npz" and Path(arg).expanduser().is_file() and not npz_holds_series(arg) and npz_real_targets(arg)


def _npz_task(path: str) -> str | None:
    """``forecast`` for an ``.npz`` of own series (the only task it can mean), else ``None`` (a missing file too:
    its loader says so)."""
    return "forecast" if Path(path).expanduser().is_file() and npz_holds_series(path) else None


def _forecast(path: str) -> str:
    """``forecast``: a CSV of own series can mean nothing else."""
    return "forecast"


@dataclasses.dataclass(frozen=True)
class SourceKind:
    """One kind of source: ``load(source, kind, arg, pipeline, cache_dir, options)`` reads its dataset;
    ``layout(arg)`` and ``stand_in(arg)`` give its :class:`DataLayout` and its clients and labels (one zero step per
    sequence) before the values load, ``None`` when they cannot; ``task(arg)`` the task its content alone can mean
    (``None``: its own labels' or the one asked); ``takes_task``: ``load`` reads the task asked (``task=``)."""

    load: Callable[..., SequenceDataset]
    layout: Callable[[str], DataLayout | None] = _nothing
    stand_in: Callable[[str], SequenceDataset | None] = _nothing
    task: Callable[[str], str | None] = _nothing
    takes_task: bool = False


def _hhar(kind: str, arg: str, options: dict, pipeline: type[Pipeline]) -> tuple[Callable, dict]:
    """:func:`hhar_loader`, whose synthetic users do not depend on the pipeline."""
    return hhar_loader(kind, arg, options)


SOURCES: dict[str, SourceKind] = {
    "synthetic-wesad": SourceKind(_seed(wesad_loader)),
    "synthetic-hhar": SourceKind(_seed(_hhar)),
    "wesad": SourceKind(_seed(wesad_loader)),
    "hhar": SourceKind(_seed(_hhar)),
    "npz": SourceKind(_own(_npz, ("ragged", "length", "task")), layout=npz_layout, stand_in=npz_stand_in,
                      task=_npz_task, takes_task=True),
    "csv": SourceKind(_own(load_series_csv, ("ragged", "length", "task")), task=_forecast, takes_task=True),
    "ts": SourceKind(_own(load_ts, ("missing", "ragged", "length")), layout=ts_layout),
}
"""Each source kind's loader; the generated series (:func:`~tff_esn.data.source_names.is_series`) are not kinds."""


def parse_source(source: str) -> tuple[str, str]:
    """``(kind, argument)`` of a source (``~`` expanded); a ``ValueError`` names the forms (``npz:PATH``)."""
    if not isinstance(source, str):
        raise ValueError(f"source: expected a string, got {type(source).__name__}.")
    kind, _, arg = source.partition(":")
    if is_series(kind) and not arg and ":" not in source:
        return kind, ""
    if kind not in SOURCES or (kind.startswith("synthetic") != (arg == "")):
        bare = kind not in SOURCES and (source.endswith(".npz") or Path(source).expanduser().is_file())
        hint = f" (a file? write npz:{source})" if bare else ""
        raise ValueError(f"source: expected synthetic-wesad, synthetic-hhar, wesad:DIR, hhar:DIR, npz:FILE, "
                         f"csv:FILE, ts:DIR/NAME or a series (narma10, narmaN, mackey-glass, lorenz, sine), got "
                         f"{source!r}{hint}.")
    return kind, os.path.expanduser(arg)


def source_layout(source: str, **options: Any) -> DataLayout | None:
    """The ``DataLayout`` of an own-data source without loading values (``length``/``ragged`` applied); ``None``
    for the other sources."""
    kind, arg = parse_source(source)
    layout = SOURCES[kind].layout(arg) if kind in SOURCES else None
    length = options.get("length")
    if layout is None or (length is None and options.get("ragged") != "crop"):
        return layout
    length = min(int(b.min()) for b in layout.blocks if b.size) if length is None else int(length)
    return dataclasses.replace(layout, blocks=tuple(np.minimum(b, length) for b in layout.blocks))


def source_stand_in(source: str) -> SequenceDataset | None:
    """A source's clients, groups and labels with one zero step per sequence, before its values load (an ``npz:``
    source of class labels); ``None`` for the others."""
    kind, arg = parse_source(source)
    return SOURCES[kind].stand_in(arg) if kind in SOURCES else None


def source_task(source: str) -> str | None:
    """The task ``source``'s content alone can mean (``forecast`` for an ``.npz`` of series), before it loads."""
    kind, arg = parse_source(source)
    return SOURCES[kind].task(arg) if kind in SOURCES else None


def load_source(source: str, pipeline: str, *, cache_dir: str | os.PathLike | None = None,
                **options: Any) -> SequenceDataset:
    """``source`` preprocessed by ``pipeline`` (module docstring); ``ValueError`` / ``FileNotFoundError`` on bad input."""
    kind, arg = parse_source(source)
    options = dict(options)
    task = options.pop("task", None)
    if is_series(kind):
        from tff_esn.data.seed_sources.generators import series_dataset

        return series_dataset(kind, task or Task("forecast", 1), **options)
    entry = SOURCES[kind]
    if entry.takes_task:
        return _as_task(entry.load(source, kind, arg, pipeline, cache_dir, {**options, "task": task}), task)
    return _as_task(entry.load(source, kind, arg, pipeline, cache_dir, options), task)


def _as_task(dataset: SequenceDataset, task: Task | None) -> SequenceDataset:
    """``dataset`` if it holds ``task``, its channels forecast for ``forecast``, float class labels classified for
    ``classify``, else a :class:`DataError`; without ``task``, float targets that read like class labels are a
    warning naming ``--task classify``."""
    if task is None:
        targets = np.concatenate([c.y.reshape(-1) for c in dataset.clients.values()])
        if dataset.task.kind == "regress" and class_like(targets):
            warn(f"{dataset.source}: y: float values 0.0 … {targets.max():.1f} read like class labels but are float, "
                 "so the run is a regression; give --task classify to classify them (or store y as integers)")
        return dataset
    if task.kind == dataset.task.kind:
        return dataset
    if task.kind == "classify" and dataset.task.kind == "regress":
        return as_classes(dataset)
    if task.kind == "forecast":
        from tff_esn.data.seed_sources.generators import forecast_dataset

        return forecast_dataset(dataset, task)
    held = "real targets (--task regress)" if dataset.task.real else "integer class labels (--task classify)"
    raise DataError(f"{dataset.source}: --task {task.kind}: its y holds {held}.")
