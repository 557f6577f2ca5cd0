"""The in-memory form every pipeline produces and every algorithm consumes.

A :class:`SequenceDataset` maps client ids (subjects, users) to :class:`ClientSequences`:
equal-length sequences ``x`` (n, T, F) float32 with integer labels ``y``, either one per
sequence (n,) or one per step (n, T). Pipelines cut long recordings into chunks of equal
length (IncFed §IV, pFedRR §3, FedIP §3), so one array per client suffices.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class ClientSequences:
    """One client's labelled sequences.

    Attributes:
        x: (n, T, F) float32 inputs.
        y: (n,) int64 per-sequence labels, or (n, T) int64 per-step labels.
    """

    x: np.ndarray
    y: np.ndarray

    def __post_init__(self) -> None:
        x = np.asarray(self.x)
        y = np.asarray(self.y)
        if x.ndim != 3:
            raise ValueError(f"ClientSequences.x: expected (n, T, F), got shape {x.shape}.")
        if y.ndim not in (1, 2) or y.shape[0] != x.shape[0] or (y.ndim == 2 and y.shape[1] != x.shape[1]):
            raise ValueError(
                f"ClientSequences.y: expected ({x.shape[0]},) or ({x.shape[0]}, {x.shape[1]}) labels, got {y.shape}."
            )
        if not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"ClientSequences.y: labels must be integers, got dtype {y.dtype}.")
        if not np.all(np.isfinite(x)):
            raise ValueError("ClientSequences.x: contains NaN or inf.")
        object.__setattr__(self, "x", x.astype(np.float32, copy=False))
        object.__setattr__(self, "y", y.astype(np.int64, copy=False))

    def __len__(self) -> int:
        return int(self.x.shape[0])

    @property
    def per_step(self) -> bool:
        """Whether labels are given per time step."""
        return self.y.ndim == 2

    @staticmethod
    def concat(parts: Iterable["ClientSequences"]) -> "ClientSequences":
        """Rows of several clients pooled (the centralized view)."""
        parts = list(parts)
        if not parts:
            raise ValueError("ClientSequences.concat: nothing to pool.")
        return ClientSequences(np.concatenate([p.x for p in parts]), np.concatenate([p.y for p in parts]))


@dataclasses.dataclass(frozen=True)
class Split:
    """A named client-wise train/validation/test split (disjoint client ids)."""

    name: str
    train: tuple[str, ...]
    val: tuple[str, ...] = ()
    test: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        groups = {"train": self.train, "val": self.val, "test": self.test, **dict(self.extra)}
        seen: dict[str, str] = {}
        for group, ids in groups.items():
            for cid in ids:
                if cid in seen:
                    raise ValueError(f"Split {self.name!r}: client {cid!r} is in both {seen[cid]!r} and {group!r}.")
                seen[cid] = group
        if not self.train:
            raise ValueError(f"Split {self.name!r}: no training clients.")


@dataclasses.dataclass(frozen=True, eq=False)
class SequenceDataset:
    """Clients' sequences plus what describes them.

    Attributes:
        clients: client id → :class:`ClientSequences` (same T and F for all clients).
        n_classes: number of label classes (labels lie in [0, n_classes)).
        feature_names: one name per input feature.
        label_names: one name per class.
        source: where the data came from, e.g. ``"synthetic-wesad"`` or ``"wesad:/data/WESAD"``
            (reports state it next to every number).
    """

    clients: Mapping[str, ClientSequences]
    n_classes: int
    feature_names: tuple[str, ...]
    label_names: tuple[str, ...]
    source: str

    def __post_init__(self) -> None:
        if not self.clients:
            raise ValueError("SequenceDataset: no clients.")
        feats = {cid: c.x.shape[2] for cid, c in self.clients.items()}
        if len(set(feats.values())) != 1:
            raise ValueError(f"SequenceDataset: clients disagree on the number of features: {feats}.")
        if next(iter(feats.values())) != len(self.feature_names):
            raise ValueError(
                f"SequenceDataset: {len(self.feature_names)} feature names for {next(iter(feats.values()))} features."
            )
        if len(self.label_names) != self.n_classes:
            raise ValueError(f"SequenceDataset: {len(self.label_names)} label names for {self.n_classes} classes.")
        for cid, c in self.clients.items():
            if len(c) == 0:
                raise ValueError(f"SequenceDataset: client {cid!r} has no sequences.")
            if c.y.min() < 0 or c.y.max() >= self.n_classes:
                raise ValueError(
                    f"SequenceDataset: client {cid!r} has labels outside [0, {self.n_classes}): "
                    f"[{c.y.min()}, {c.y.max()}]."
                )

    @property
    def client_ids(self) -> tuple[str, ...]:
        return tuple(self.clients)

    def select(self, ids: Iterable[str]) -> dict[str, ClientSequences]:
        """The named clients, in the given order; unknown ids raise a clear error."""
        ids = list(ids)
        missing = [cid for cid in ids if cid not in self.clients]
        if missing:
            raise KeyError(f"unknown client id(s) {missing}; available: {sorted(self.clients)}.")
        return {cid: self.clients[cid] for cid in ids}

    def pooled(self, ids: Iterable[str]) -> ClientSequences:
        """The named clients' sequences concatenated (the centralized training set)."""
        return ClientSequences.concat(self.select(ids).values())
