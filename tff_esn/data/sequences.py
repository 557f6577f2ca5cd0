"""The in-memory form every pipeline produces and every algorithm consumes.

A :class:`SequenceDataset` maps client ids (subjects, users) to :class:`ClientSequences`:
equal-length sequences ``x`` (n, T, F) float32 with integer labels ``y``, either one per
sequence (n,) or one per step (n, T). Pipelines cut long recordings into chunks of equal
length (IncFed §IV, pFedRR §3, FedIP §3), so one array per client suffices.
"""

from __future__ import annotations

import dataclasses
import warnings
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

SPLIT_GROUPS = ("train", "val", "test")


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
        groups: client id → ``"train"``/``"val"``/``"test"`` when the data brings its own
            split (an npz file's ``split`` column; the ``npz`` split uses it); else empty.
    """

    clients: Mapping[str, ClientSequences]
    n_classes: int
    feature_names: tuple[str, ...]
    label_names: tuple[str, ...]
    source: str
    groups: Mapping[str, str] = dataclasses.field(default_factory=dict)

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
        unknown = sorted(set(self.groups) - set(self.clients))
        bad = sorted({g for g in self.groups.values()} - set(SPLIT_GROUPS))
        if unknown or bad:
            raise ValueError(f"SequenceDataset.groups: unknown client(s) {unknown} or group(s) {bad} "
                             f"(groups are {SPLIT_GROUPS}).")

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


def _npz_member(archive: zipfile.ZipFile, key: str, path: Path) -> np.ndarray:
    """One array of an ``.npz``; object arrays are unpickled through the data allow-list."""
    from tff_esn.data.safe_pickle import read_data_pickle

    fmt = np.lib.format
    with archive.open(f"{key}.npy") as fh:
        version = fmt.read_magic(fh)
        read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, fortran, dtype = read_header(fh)
        if dtype.hasobject:
            return read_data_pickle(fh, f"{path}[{key!r}]")
        data = np.frombuffer(fh.read(), dtype=dtype)
    count = int(np.prod(shape))
    if data.size != count:
        raise ValueError(f"{path}: array {key!r} is truncated ({data.size} of {count} values).")
    return data.reshape(shape, order="F" if fortran else "C")


def load_npz(path: str | Path, *, length: int | None = None) -> SequenceDataset:
    """Bring-your-own sequences: an ``.npz`` with ``X``, ``y``, ``client`` and optional ``split``.

    Args:
        path: file holding ``X`` — (n, T, F) numbers, or an object array of n (T_i, F)
            arrays —, ``y`` (n,) integer labels in [0, C), ``client`` (n,) ids (strings or
            integers) and optionally ``split`` (n,) of ``"train"``/``"val"``/``"test"``, the
            same for all sequences of a client (the ``npz`` split uses it).
        length: steps kept per sequence. ``None``: the shortest sequence's length. Longer
            sequences keep their *last* ``length`` steps (where a per-sequence label is
            decided); a shortening emits a warning.

    Object arrays are read through the data allow-list unpickler (no code runs).

    Raises:
        ValueError: naming the array and what is wrong (missing, shapes, dtypes, NaN, ids).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"npz file {path} does not exist.")
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as err:
        raise ValueError(f"{path}: not an .npz file ({err}).") from None
    with archive:
        keys = {n[:-4] for n in archive.namelist() if n.endswith(".npy")}
        missing = [k for k in ("X", "y", "client") if k not in keys]
        if missing:
            raise ValueError(f"{path}: missing array(s) {missing}; expected X, y, client and optionally split "
                             f"(found {sorted(keys)}).")
        arrays = {k: _npz_member(archive, k, path) for k in ("X", "y", "client", "split") if k in keys}
    x, y, client = arrays["X"], arrays["y"], arrays["client"]
    if x.dtype == object:
        if x.ndim != 1:
            raise ValueError(f"{path}: object array X must be 1-D (n,) of (T_i, F) arrays, got shape {x.shape}.")
        seqs = [np.asarray(s) for s in x]
        bad = [i for i, s in enumerate(seqs) if s.ndim != 2 or not np.issubdtype(s.dtype, np.number)]
        if bad:
            raise ValueError(f"{path}: X[{bad[0]}] must be a numeric (T_i, F) array, got shape "
                             f"{seqs[bad[0]].shape} dtype {seqs[bad[0]].dtype}.")
    elif x.ndim == 3 and np.issubdtype(x.dtype, np.number):
        seqs = list(x)
    else:
        raise ValueError(f"{path}: X must be (n, T, F) numbers or an object array of (T_i, F) arrays, "
                         f"got shape {x.shape} dtype {x.dtype}.")
    n = len(seqs)
    if n == 0:
        raise ValueError(f"{path}: X holds no sequences.")
    features = {s.shape[1] for s in seqs}
    if len(features) != 1:
        raise ValueError(f"{path}: sequences in X disagree on the number of features: {sorted(features)}.")
    for key, arr in (("y", y), ("client", client)) + ((("split", arrays["split"]),) if "split" in arrays else ()):
        if arr.shape != (n,):
            raise ValueError(f"{path}: {key} must have shape ({n},) like X, got {arr.shape}.")
    if not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
        raise ValueError(f"{path}: y must hold integer labels ≥ 0, got dtype {y.dtype} (min {y.min()}).")
    lengths = np.array([s.shape[0] for s in seqs])
    shortest = int(lengths.min())
    length = shortest if length is None else int(length)
    if length < 1 or length > shortest:
        raise ValueError(f"{path}: length must be in [1, {shortest}] (the shortest sequence), got {length}.")
    if lengths.max() > length:
        warnings.warn(f"{path}: sequences of {lengths.min()}–{lengths.max()} steps keep their last {length} steps.",
                      stacklevel=2)
    x = np.stack([s[s.shape[0] - length:] for s in seqs]).astype(np.float32)
    if not np.all(np.isfinite(x)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(x), axis=(1, 2)))[0])
        raise ValueError(f"{path}: X[{bad}] contains NaN or inf.")
    ids = np.array([str(c) for c in client])
    order = list(dict.fromkeys(ids))
    groups = {}
    if "split" in arrays:
        split = np.array([str(s) for s in arrays["split"]])
        bad = sorted(set(split) - set(SPLIT_GROUPS))
        if bad:
            raise ValueError(f"{path}: split values must be {SPLIT_GROUPS}, got {bad}.")
        for cid in order:
            values = set(split[ids == cid])
            if len(values) != 1:
                raise ValueError(f"{path}: client {cid!r} has sequences in several split groups {sorted(values)}; "
                                 "splits are client-wise.")
            groups[cid] = values.pop()
    n_classes = int(y.max()) + 1
    clients = {cid: ClientSequences(x[ids == cid], y[ids == cid]) for cid in order}
    return SequenceDataset(clients, n_classes, tuple(f"f{i}" for i in range(x.shape[2])),
                           tuple(str(i) for i in range(n_classes)), f"npz:{path}", groups=groups)
