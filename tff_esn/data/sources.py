"""``load_source``: a data source run through a pipeline, cached on disk.

Sources: ``synthetic-wesad``, ``synthetic-hhar``, ``wesad:DIR``, ``hhar:DIR``, ``npz:FILE``, ``ts:DIR/NAME`` and
the generated series (``narmaN``, ``mackey-glass``, ``lorenz``, ``sine``; not cached). Options configure the
source or the pipeline; the cache key is the source (files: names, sizes, times), pipeline and options.
"""

from __future__ import annotations

import os
from typing import Any

from tff_esn.data import cache
from tff_esn.data.hhar_source import hhar_loader
from tff_esn.data.pipelines import PIPELINES, Pipeline, make_pipeline
from tff_esn.data.layout import DataLayout
from tff_esn.data.sequences import SequenceDataset, load_npz, npz_layout
from tff_esn.data.errors import DataError
from tff_esn.data.source_names import is_series, parse_source
from tff_esn.tasks import Task
from tff_esn.data.wesad_source import wesad_loader


def source_layout(source: str, **options: Any) -> DataLayout | None:
    """The :class:`~tff_esn.data.layout.DataLayout` of an own-data source (``npz:``, ``ts:``) read
    without loading its values (``options`` as :func:`load_source`'s; a crop applied); ``None``
    for the generated and preprocessed sources and for an ``npz`` object array."""
    kind, arg = parse_source(source)
    if kind == "npz":
        layout = npz_layout(arg)
    elif kind == "ts":
        from tff_esn.data.ts import ts_layout

        layout = ts_layout(arg)
    else:
        return None
    crop = options.get("length") is not None or options.get("ragged") == "crop"
    return layout.cropped(options.get("length")) if layout is not None and crop else layout


def load_source(source: str, pipeline: str, *, cache_dir: str | os.PathLike | None = None,
                **options: Any) -> SequenceDataset:
    """The ``source`` preprocessed by ``pipeline`` (module docstring lists both and the options).

    Raises:
        ValueError: unknown source/pipeline/option, a pipeline for the other data set, or a
            data error (message names the file and key).
        FileNotFoundError: the directory or file does not exist.
    """
    kind, arg = parse_source(source)
    options = dict(options)
    task = options.pop("task", None)
    if is_series(kind):
        from tff_esn.data.generators import series_dataset

        return series_dataset(kind, task or Task("forecast", 1), **options)
    if kind == "npz":
        length = options.pop("length", None)
        ragged = options.pop("ragged", "pad")
        if options:
            raise ValueError(f"source {source!r}: unknown option(s) {sorted(options)} (npz takes 'ragged' and "
                             "'length').")
        return _as_task(load_npz(arg, length=length, ragged=ragged), task)
    if kind == "ts":
        from tff_esn.data.ts import load_ts

        settings = {k: options.pop(k) for k in ("missing", "ragged", "length") if k in options}
        if options:
            raise ValueError(f"source {source!r}: unknown option(s) {sorted(options)} (ts takes 'missing', 'ragged' "
                             "and 'length').")
        return _as_task(load_ts(arg, **settings), task)
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
    """``dataset`` when it holds ``task`` (``None``: whatever it holds), its own channels forecast for a
    ``forecast`` task (:func:`tff_esn.data.generators.forecast_dataset`), else a one-line :class:`DataError`."""
    if task is None or task.kind == dataset.task.kind:
        return dataset
    if task.kind == "forecast":
        from tff_esn.data.generators import forecast_dataset

        return forecast_dataset(dataset, task)
    held = "real targets (--task regress)" if dataset.task.real else "integer class labels (--task classify)"
    raise DataError(f"{dataset.source}: --task {task.kind}: its y holds {held}.")
