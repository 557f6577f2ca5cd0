"""A federated run's round checkpoint ``DIR/checkpoints/state.npz``: the round, the state's leaves in
``tf.nest.flatten`` order, the rows and the run's record (identity, privacy events: :mod:`tff_esn.runs.identity`),
replaced atomically (``os.replace``); SavedModel folders are refused."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.common.io import atomic_write, jsonable
from tff_esn.runs.identity import RECORD_KEY
from tff_esn.runs.run_folder import CHECKPOINT, legacy_message, legacy_round


class CheckpointError(ValueError):
    """A run folder's checkpoint that this version cannot continue from (one line naming the fix)."""


class RoundCheckpoint:
    """The checkpoint in ``out_dir/checkpoints``: :meth:`save` after a round, :meth:`latest` to resume."""

    def __init__(self, out_dir: str | os.PathLike):
        self.out = Path(out_dir)
        self.path = self.out / CHECKPOINT

    def save(self, state: Any, round_num: int, rows: Sequence[Mapping[str, Any]] = (),
             record: Mapping[str, Any] | None = None) -> None:
        """Writes ``state``'s leaves, ``round_num``, the ``rows`` so far and the run's ``record`` atomically."""
        import tensorflow as tf

        leaves = [np.asarray(leaf) for leaf in tf.nest.flatten(state)]
        history = np.array(json.dumps(jsonable(list(rows)), allow_nan=False))
        extra = {} if record is None else {RECORD_KEY: np.array(json.dumps(jsonable(dict(record)), allow_nan=False))}
        with atomic_write(self.path) as fh:
            np.savez(fh, round=np.int64(round_num), rows=history, **extra,
                     **{f"leaf_{i}": leaf for i, leaf in enumerate(leaves)})

    def latest(self, initial_state: Any) -> tuple[Any, int, list[dict[str, Any]]] | None:
        """``(state, round, rows)`` of the checkpoint (``None``: none); :class:`CheckpointError` if unfit."""
        import tensorflow as tf

        legacy = legacy_round(self.out)
        if legacy is not None:
            raise CheckpointError(f"run_federated: {legacy_message(self.out, legacy)}")
        if not self.path.exists():
            return None
        expected = [np.asarray(leaf) for leaf in tf.nest.flatten(initial_state)]
        with np.load(self.path, allow_pickle=False) as saved:
            round_num = int(saved["round"])
            leaves = [saved[f"leaf_{i}"] for i in range(sum(name.startswith("leaf_") for name in saved.files))]
            rows = json.loads(str(saved["rows"])) if "rows" in saved.files else []
        if [(a.shape, a.dtype) for a in leaves] != [(a.shape, a.dtype) for a in expected]:
            raise CheckpointError(
                f"run_federated: {self.path} holds a state of shapes {[a.shape for a in leaves]}, but this run's "
                f"model has {[a.shape for a in expected]} (another model, algorithm or number of classes); resume "
                "it with the settings that started it, or start over with --force or in a new output folder.")
        return tf.nest.pack_sequence_as(initial_state, leaves), round_num, rows
