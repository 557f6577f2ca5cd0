"""On-disk cache of preprocessed data sets, keyed by everything that determines them.

Under ``cache_dir``, else ``$TFF_ESN_CACHE``, else ``~/.cache/tff_esn``: one ``.npz`` per entry (a JSON header,
each client's ``x``, ``y`` and unequal ``lengths``), written atomically, named by the pipeline and a key hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.data.sequences import ClientSequences, SequenceDataset
from tff_esn.common.io import atomic_write
from tff_esn.common.tasks import Task

CACHE_VERSION = 2
"""Bumped whenever a pipeline or generator changes its output, so stale entries are not reused."""


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir``, else ``$TFF_ESN_CACHE``, else ``~/.cache/tff_esn``."""
    if cache_dir is not None:
        return Path(cache_dir)
    return Path(os.environ.get("TFF_ESN_CACHE") or Path.home() / ".cache" / "tff_esn")


def cache_key(payload: dict[str, Any]) -> str:
    """A short stable hash of a JSON-serialisable ``payload`` (plus :data:`CACHE_VERSION`)."""
    text = json.dumps({"version": CACHE_VERSION, **payload}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def files_key(paths: Iterable[str | os.PathLike]) -> list[tuple[str, int, int]]:
    """The cache-key part naming source files: resolved path, size and mtime (an edited file is read again)."""
    return [(str(Path(p).resolve()), os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in paths]


def save_dataset(path: str | os.PathLike, dataset: SequenceDataset) -> Path:
    """Writes ``dataset`` to ``path`` (``.npz``) atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ids = list(dataset.client_ids)
    header = {"clients": ids, "n_classes": dataset.n_classes, "feature_names": list(dataset.feature_names),
              "label_names": list(dataset.label_names), "source": dataset.source,
              "groups": dict(dataset.groups), "task": dataclasses.asdict(dataset.task)}
    arrays = {"header": np.array(json.dumps(header))}
    for i, cid in enumerate(ids):
        arrays[f"x{i}"] = dataset.clients[cid].x
        arrays[f"y{i}"] = dataset.clients[cid].y
        if dataset.clients[cid].lengths is not None:
            arrays[f"lengths{i}"] = dataset.clients[cid].lengths
    with atomic_write(path) as fh:
        np.savez(fh, **arrays)
    return path


def load_dataset(path: str | os.PathLike) -> SequenceDataset:
    """Reads a dataset written by :func:`save_dataset` (no pickles involved)."""
    with np.load(path, allow_pickle=False) as data:
        header = json.loads(str(data["header"]))
        clients = {cid: ClientSequences(data[f"x{i}"], data[f"y{i}"],
                                        data[f"lengths{i}"] if f"lengths{i}" in data else None)
                   for i, cid in enumerate(header["clients"])}
    return SequenceDataset(clients, header["n_classes"], tuple(header["feature_names"]),
                           tuple(header["label_names"]), header["source"], groups=header["groups"],
                           task=Task(**header["task"]))
