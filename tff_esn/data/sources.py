"""``load_source``: a data source run through a pipeline, cached on disk.

Sources: ``synthetic-wesad``, ``synthetic-hhar``, ``wesad:DIR``, ``hhar:DIR``, ``npz:FILE``, ``ts:DIR/NAME`` and
the generated series (``narmaN``, ``mackey-glass``, ``lorenz``, ``sine``; not cached). Options configure the
source or the pipeline; the cache key is the source (files: names, sizes, times), pipeline and options.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.data import cache
from tff_esn.data.seed_sources.hhar_source import hhar_loader
from tff_esn.data.seed_sources.pipelines import PIPELINES, Pipeline, make_pipeline
from tff_esn.data.layout import DataLayout
from tff_esn.data.sequences import SequenceDataset, load_npz, npz_layout
from tff_esn.data.errors import DataError
from tff_esn.data.source_names import is_series
from tff_esn.common.tasks import Task
from tff_esn.data.seed_sources.wesad_source import wesad_loader


SOURCE_KINDS = ("synthetic-wesad", "synthetic-hhar", "wesad", "hhar", "npz", "ts")
_OWN_OPTIONS = {"npz": ("ragged", "length"), "ts": ("missing", "ragged", "length")}
"""The options of each own-data source."""


def parse_source(source: str) -> tuple[str, str]:
    """``(kind, argument)`` of a source (``~`` expanded); a ``ValueError`` names the forms (``npz:PATH``)."""
    if not isinstance(source, str):
        raise ValueError(f"source: expected a string, got {type(source).__name__}.")
    kind, _, arg = source.partition(":")
    if is_series(kind) and not arg and ":" not in source:
        return kind, ""
    if kind not in SOURCE_KINDS or (kind.startswith("synthetic") != (arg == "")):
        bare = kind not in SOURCE_KINDS and (source.endswith(".npz") or Path(source).expanduser().is_file())
        hint = f" (a file? write npz:{source})" if bare else ""
        raise ValueError(f"source: expected synthetic-wesad, synthetic-hhar, wesad:DIR, hhar:DIR, npz:FILE, "
                         f"ts:DIR/NAME or a series (narma10, narmaN, mackey-glass, lorenz, sine), got "
                         f"{source!r}{hint}.")
    return kind, os.path.expanduser(arg)


def source_layout(source: str, **options: Any) -> DataLayout | None:
    """The ``DataLayout`` of an ``npz:`` or ``ts:`` source without loading values; ``None`` otherwise."""
    kind, arg = parse_source(source)
    if kind == "npz":
        layout = npz_layout(arg)
    elif kind == "ts":
        from tff_esn.data.ts import ts_layout

        layout = ts_layout(arg)
    else:
        return None
    length = options.get("length")
    if layout is None or (length is None and options.get("ragged") != "crop"):
        return layout
    length = min(int(b.min()) for b in layout.blocks if b.size) if length is None else int(length)
    return dataclasses.replace(layout, blocks=tuple(np.minimum(b, length) for b in layout.blocks))


def load_source(source: str, pipeline: str, *, cache_dir: str | os.PathLike | None = None,
                **options: Any) -> SequenceDataset:
    """``source`` preprocessed by ``pipeline`` (module docstring); ``ValueError`` / ``FileNotFoundError`` on bad input."""
    kind, arg = parse_source(source)
    options = dict(options)
    task = options.pop("task", None)
    if is_series(kind):
        from tff_esn.data.seed_sources.generators import series_dataset

        return series_dataset(kind, task or Task("forecast", 1), **options)
    if kind in _OWN_OPTIONS:
        unknown = sorted(set(options) - set(_OWN_OPTIONS[kind]))
        if unknown:
            raise ValueError(f"source {source!r}: unknown option(s) {unknown} ({kind} takes "
                             f"{', '.join(map(repr, _OWN_OPTIONS[kind]))}).")
        if kind == "npz":
            return _as_task(load_npz(arg, **options), task)
        from tff_esn.data.ts import load_ts

        return _as_task(load_ts(arg, **options), task)
    data = kind.removeprefix("synthetic-")
    if data == "wesad":
        loader, key = wesad_loader(kind, arg, options, PIPELINES.get(pipeline, Pipeline))
    else:
        loader, key = hhar_loader(kind, arg, options)
    pipe = make_pipeline(pipeline, **options)
    if pipe.data != data:
        raise ValueError(f"pipeline {pipeline!r} reads {pipe.data.upper()}, but source {source!r} is {data.upper()}.")
    path = cache.cache_root(cache_dir) / "datasets" / f"{pipeline}-{cache.cache_key({'source': key, 'pipeline': pipeline, 'options': pipe.options()})}.npz"
    if path.exists():
        return cache.load_dataset(path)
    dataset = loader(pipe, source)
    cache.save_dataset(path, dataset)
    return dataset


def _as_task(dataset: SequenceDataset, task: Task | None) -> SequenceDataset:
    """``dataset`` if it holds ``task``, its channels forecast for ``forecast``, else a :class:`DataError`."""
    if task is None or task.kind == dataset.task.kind:
        return dataset
    if task.kind == "forecast":
        from tff_esn.data.seed_sources.generators import forecast_dataset

        return forecast_dataset(dataset, task)
    held = "real targets (--task regress)" if dataset.task.real else "integer class labels (--task classify)"
    raise DataError(f"{dataset.source}: --task {task.kind}: its y holds {held}.")
