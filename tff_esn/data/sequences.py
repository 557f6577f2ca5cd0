"""The in-memory form every pipeline produces and every algorithm consumes.

A :class:`SequenceDataset` maps client ids to :class:`ClientSequences`: ``x`` (n, T, F) float32, labels
``y`` (n,) or (n, T), and ``lengths`` for right-padded sequences of unequal length. Own data enters
through :func:`dataset_from_arrays` (and :func:`load_npz`), which refuses misleading labels and shapes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.common import run_warnings
from tff_esn.data.errors import DataError, MissingDataError
from tff_esn.data.layout import DataLayout
from tff_esn.common.tasks import CLASSIFY, Task

SPLIT_GROUPS = ("train", "val", "test")
RAGGED_MODES = ("pad", "crop")
"""How :func:`load_npz` reads sequences of unequal length: each at its own length (``pad``) or all cut to one."""


@dataclasses.dataclass(frozen=True, eq=False)
class ClientSequences:
    """One client's sequences: ``x`` (n, T, F) float32, ``y`` (n,)/(n, T) int64 classes or float64 targets,
    ``lengths`` (n,) valid steps (``None``: all T)."""

    x: np.ndarray
    y: np.ndarray
    lengths: np.ndarray | None = None

    def __post_init__(self) -> None:
        x = np.asarray(self.x, np.float32)
        y = np.asarray(self.y)
        if x.ndim != 3 or y.shape not in ((x.shape[0],), x.shape[:2]) or y.dtype.kind not in "iuf":
            raise ValueError(f"ClientSequences: expected x (n, T, F) and integer or real labels y (n,) or (n, T), "
                             f"got x {x.shape}, y {y.shape} {y.dtype}.")
        lengths = self.lengths
        if lengths is not None:
            lengths = np.asarray(lengths, np.int64)
            if np.all(lengths == x.shape[1]):
                lengths = None
            else:
                x = np.where(np.arange(x.shape[1])[None, :, None] < lengths[:, None, None], x, np.float32(0))
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y.astype(np.float64 if y.dtype.kind == "f" else np.int64, copy=False))
        object.__setattr__(self, "lengths", lengths)

    def __len__(self) -> int:
        return int(self.x.shape[0])

    @property
    def real(self) -> bool:
        """Whether ``y`` holds real targets (float64) rather than integer classes."""
        return self.y.dtype.kind == "f"

    @property
    def per_step(self) -> bool:
        """Whether labels are given per time step."""
        return self.y.ndim == 2

    @property
    def ragged(self) -> bool:
        """Whether the sequences have unequal lengths (``x`` is padded; see ``lengths``)."""
        return self.lengths is not None

    @property
    def steps(self) -> np.ndarray:
        """(n,) valid steps of each sequence."""
        return np.full(len(self), self.x.shape[1], np.int64) if self.lengths is None else self.lengths

    @property
    def shortest(self) -> int:
        """Steps of the shortest sequence (what a washout must stay below)."""
        return int(self.steps.min()) if len(self) else int(self.x.shape[1])

    @staticmethod
    def concat(parts: Iterable["ClientSequences"]) -> "ClientSequences":
        """Rows of several clients pooled (the centralized view); unequal lengths are padded."""
        parts = list(parts)
        if len(parts) == 1:  # frozen: no copy, no second validation
            return parts[0]
        steps = max(p.x.shape[1] for p in parts)
        if all(p.x.shape[1] == steps for p in parts) and not any(p.ragged for p in parts):
            return ClientSequences(np.concatenate([p.x for p in parts]), np.concatenate([p.y for p in parts]))
        if any(p.per_step for p in parts):
            raise ValueError("ClientSequences.concat: per-step labels of sequences with different lengths "
                             "cannot be pooled.")
        x = np.concatenate([np.pad(p.x, ((0, 0), (0, steps - p.x.shape[1]), (0, 0))) for p in parts])
        return ClientSequences(x, np.concatenate([p.y for p in parts]), np.concatenate([p.steps for p in parts]))


@dataclasses.dataclass(frozen=True)
class Split:
    """A named client-wise train/val/test split (disjoint ids); ``rule`` is recorded, not compared."""

    name: str
    train: tuple[str, ...]
    val: tuple[str, ...] = ()
    test: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    rule: str = dataclasses.field(default="given by the caller", compare=False)

    @property
    def groups(self) -> dict[str, tuple[str, ...]]:
        """Group name → client ids: ``train``, ``val``, ``test`` and every extra group."""
        return {"train": self.train, "val": self.val, "test": self.test, **dict(self.extra)}

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        twice = [f"client {cid!r} is in both {seen[cid]!r} and {group!r}" for group, ids in self.groups.items()
                 for cid in ids if seen.setdefault(cid, group) != group]
        if twice or not self.train:
            raise ValueError(f"Split {self.name!r}: {twice[0] if twice else 'no training clients'}.")


@dataclasses.dataclass(frozen=True, eq=False)
class SequenceDataset:
    """Clients' sequences with ``n_classes`` classes (real-valued ``task``: 1), feature/class names, ``source``,
    and ``groups`` (client → ``train``/``val``/``test``) when the data brings its split; ``labelled=False``: the
    source held no labels or targets, ``y`` is zeros standing in for them (sequences to predict on, not to score)."""

    clients: Mapping[str, ClientSequences]
    n_classes: int
    feature_names: tuple[str, ...]
    label_names: tuple[str, ...]
    source: str
    groups: Mapping[str, str] = dataclasses.field(default_factory=dict)
    task: Task = CLASSIFY
    labelled: bool = True

    def __post_init__(self) -> None:
        features = {c.x.shape[2] for c in self.clients.values()}
        if features != {len(self.feature_names)} or len(self.label_names) != self.n_classes:
            raise ValueError(f"SequenceDataset: clients with features {sorted(features)}, {len(self.feature_names)} "
                             f"feature names, {len(self.label_names)} label names for {self.n_classes} classes.")
        for cid, c in self.clients.items():
            if not c.real and c.y.size and (c.y.min() < 0 or c.y.max() >= self.n_classes):
                raise ValueError(f"SequenceDataset: client {cid!r} has labels outside [0, {self.n_classes}): "
                                 f"{sorted(set(np.unique(c.y).tolist()) - set(range(self.n_classes)))}.")

    @property
    def client_ids(self) -> tuple[str, ...]:
        return tuple(self.clients)

    @property
    def ragged(self) -> bool:
        """Whether sequences differ in length (within a client, or between clients)."""
        return len({c.x.shape[1] for c in self.clients.values()}) > 1 or any(c.ragged for c in self.clients.values())

    @property
    def shortest(self) -> int:
        """Steps of the shortest sequence of any client."""
        return min(c.shortest for c in self.clients.values())

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


_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, TypeError, SyntaxError,
               NotImplementedError, RuntimeError)  # the last two: zip features (encryption, methods)


def _npz_member(archive: zipfile.ZipFile, key: str, path: Path, *, header: bool = False):
    """One ``.npz`` array (object arrays via the allow-list), or with ``header`` its ``(shape, dtype)``."""
    from tff_esn.data.safe_pickle import read_data_pickle

    try:
        with archive.open(f"{key}.npy") as fh:
            version = np.lib.format.read_magic(fh)
            shape, fortran, dtype = (np.lib.format.read_array_header_1_0 if version == (1, 0) else
                                     np.lib.format.read_array_header_2_0)(fh)
            if header:
                return shape, dtype
            if dtype.hasobject:
                return read_data_pickle(fh, f"{path}: {key}")
            return np.frombuffer(fh.read(), dtype=dtype).reshape(shape, order="F" if fortran else "C")
    except DataError:
        raise
    except _ZIP_ERRORS as err:
        raise DataError(f"{path}: {key}: not a readable .npy member (truncated or corrupt): {type(err).__name__}: "
                        f"{err}") from None


def _sequence_list(sequences, source: str) -> list[np.ndarray]:
    """The (T_i, F) sequences of ``sequences``: (n, T, F) numbers, or a list/object array of (T_i, F)."""
    x = None if isinstance(sequences, (list, tuple)) else np.asarray(sequences)
    if x is not None and not (x.ndim == 3 and x.dtype.kind in "biuf" or x.ndim == 1 and x.dtype == object):
        raise DataError(f"{source}: X: must be (n, T, F) real numbers or a 1-D object array of (T_i, F) arrays, "
                        f"got shape {x.shape} dtype {x.dtype}.")
    seqs = [_real_array(item) for item in (sequences if x is None else x)]
    bad = next((i for i, s in enumerate(seqs) if s.ndim != 2 or s.dtype.kind not in "biuf" or not s.shape[0]), None)
    if bad is not None:
        raise DataError(f"{source}: X[{bad}]: must be a real-valued (T_i, F) array of ≥ 1 step, got shape "
                        f"{seqs[bad].shape} dtype {seqs[bad].dtype}.")
    features = sorted({s.shape[1] for s in seqs})
    if len(features) != 1 or features[0] < 1:
        raise DataError(f"{source}: X: must hold sequences sharing a number of features ≥ 1, got {features}.")
    return seqs


def _real_array(item) -> np.ndarray:
    """``item`` as an array; an object array (refused by the caller) when it is none."""
    try:
        return np.asarray(item)
    except (ValueError, TypeError):
        return np.asarray(None)


def _listing(values) -> str:
    values = [int(v) for v in values]
    return ", ".join(map(str, values[:10])) + (", …" if len(values) > 10 else "")


def _check_labels(y: np.ndarray, n: int, source: str, label_names: tuple[str, ...] | None) -> int:
    """K after checking ``y`` codes exactly classes 0…K−1, each present; errors suggest ``np.unique``."""
    if y.shape != (n,) or y.dtype.kind not in "iu":
        raise DataError(f"{source}: y: must be ({n},) integer labels 0…K−1 like X (or float targets for a "
                        f"regression), got shape {y.shape} dtype {y.dtype}.")
    present = np.unique(y)
    n_classes = len(label_names) if label_names is not None else int(present[-1]) + 1
    outside = present[(present < 0) | (present >= n_classes)]
    inside = set(present[(present >= 0) & (present < n_classes)].tolist())
    missing = list(itertools.islice((k for k in range(n_classes) if k not in inside), 11))
    if outside.size or missing or len(present) == 1:
        found = "; ".join(part for part in (f"codes outside it: {_listing(outside)}" if outside.size else "",
                                            f"no sequence of {_listing(missing)}" if missing else "") if part)
        named = f"{n_classes} label names' " if label_names is not None else ""
        raise DataError(f"{source}: y: " + (
            f"every label is {int(present[0])}: one class only; a classifier needs the labels of at least 2 classes."
            if len(present) == 1 else f"labels must be exactly the {named}classes 0…{n_classes - 1}, each present; "
            f"got {_listing(present)} ({found}); recode them with classes, y = np.unique(y, return_inverse=True)."))
    return n_classes


def dataset_from_arrays(sequences, y, client, split=None, *, source: str, ragged: str = "pad",
                        length: int | None = None, label_names=None,
                        unlabelled_task: Task = CLASSIFY) -> SequenceDataset:
    """The one own-data builder: ``sequences``, ``y`` (classes 0…K−1 or real targets), ``client`` and ``split``;
    ``ragged="crop"`` or ``length`` crops (a warning). Bad input is a :class:`DataError` naming ``source``.
    ``y=None``: sequences to predict on (``labelled=False``), zeros standing in for ``unlabelled_task``'s labels
    (one class ``""`` for a classification)."""
    if ragged not in RAGGED_MODES:
        raise ValueError(f"ragged: expected one of {RAGGED_MODES}, got {ragged!r}.")
    seqs = _sequence_list(sequences, source)
    n = len(seqs)
    _check_client_kinds(client, source)
    client = np.asarray(client)
    split = None if split is None else np.asarray(split)
    for key, values in (("client", client), ("split", split)):
        if values is not None and values.shape != (n,):
            raise DataError(f"{source}: {key}: must have shape ({n},) like X, got {values.shape}.")
    label_names = None if label_names is None else tuple(str(name) for name in label_names)
    labelled = y is not None
    if not labelled:
        real = unlabelled_task.real
        y, n_classes = np.zeros(n, np.float64 if real else np.int64), 1
        label_names = ("",) if label_names is None and not real else label_names
    else:
        y = np.asarray(y)
        real = y.dtype.kind == "f"
        n_classes = _check_targets(y, seqs, source) if real else _check_labels(y, n, source, label_names)
    lengths = np.array([s.shape[0] for s in seqs])
    if length is not None or ragged == "crop":
        seqs, lengths = _cropped(seqs, lengths, length, source)
    x = _padded(seqs, lengths, source)
    ids = np.array([str(c) for c in client])
    empty = np.flatnonzero(np.char.strip(ids) == "") if ids.size else []
    if len(empty):
        raise DataError(f"{source}: client: sequence {int(empty[0])} has an empty client id {str(ids[empty[0]])!r} "
                        f"({len(empty)} such); give every sequence a non-empty client id.")
    order = list(dict.fromkeys(ids))
    groups = {} if split is None else _client_groups(ids, order, split, source)
    clients = {}
    for cid in order:
        rows = ids == cid
        clients[cid] = ClientSequences(x[rows, :lengths[rows].max()], y[rows], lengths[rows])
    names = label_names if label_names is not None else ("y",) if real else tuple(str(i) for i in range(n_classes))
    return SequenceDataset(clients, n_classes, tuple(f"f{i}" for i in range(x.shape[2])), names, source,
                           groups=groups, task=Task("regress") if real else CLASSIFY, labelled=labelled)


def class_like(y: np.ndarray) -> bool:
    """Whether real targets ``y`` read like class labels: whole numbers that are exactly 0…K−1 for some K ≥ 2."""
    y = np.asarray(y)
    if y.size == 0 or not np.all(np.isfinite(y)) or not np.all(y == np.round(y)):
        return False
    present = np.unique(y)
    return present.size >= 2 and np.array_equal(present, np.arange(present.size))


def as_classes(dataset: SequenceDataset) -> SequenceDataset:
    """A regression ``dataset`` whose float targets are class labels (:func:`class_like`, one per sequence) as a
    classification of those classes; other targets are a :class:`DataError` naming them."""
    y = np.concatenate([c.y.reshape(len(c), -1) for c in dataset.clients.values()])
    if y.shape[1] != 1 or not class_like(y):
        raise DataError(f"{dataset.source}: --task classify: y holds real targets "
                        f"({'one per step' if y.shape[1] != 1 else 'not the whole numbers 0…K−1'}); class labels "
                        "are one whole number 0…K−1 per sequence (or give --task regress).")
    k = int(y.max()) + 1
    clients = {cid: dataclasses.replace(c, y=c.y.astype(np.int64)) for cid, c in dataset.clients.items()}
    return dataclasses.replace(dataset, clients=clients, n_classes=k, label_names=tuple(str(i) for i in range(k)),
                               task=CLASSIFY)


def _check_targets(y: np.ndarray, seqs: list[np.ndarray], source: str) -> int:
    """1 after checking real targets ``y``: (n,) or (n, T) of equal-length sequences, finite, not constant."""
    n, steps = len(seqs), {s.shape[0] for s in seqs}
    if not (y.shape == (n,) or (len(steps) == 1 and y.shape == (n, *steps))):
        raise DataError(f"{source}: y: real targets must have shape ({n},) (one per sequence) or ({n}, T) (one per "
                        f"step of sequences of T steps), got {y.shape}.")
    return _check_real_values(y, source)


def _check_real_values(y: np.ndarray, source: str) -> int:
    """1 (the readout's outputs) after checking that real targets ``y`` are finite and not constant."""
    finite = np.all(np.isfinite(y))
    if not finite or np.ptp(y) == 0:
        raise DataError(f"{source}: y: " + (f"every target is {float(y.flat[0])!r}; a regression needs targets that "
                                            "vary." if finite else "real targets contain NaN or inf."))
    return 1


def _check_client_kinds(client, source: str) -> None:
    """Refuses client ids that mix integers and strings (``1`` and ``"1"`` would become one client)."""
    values = np.asarray(client, dtype=object) if isinstance(client, (list, tuple)) else np.asarray(client)
    if values.dtype != object:
        return
    numbers = [v for v in values.ravel() if isinstance(v, (int, np.integer)) and not isinstance(v, bool)]
    texts = [v for v in values.ravel() if isinstance(v, (str, np.str_))]
    if numbers and texts:
        raise DataError(f"{source}: client: ids mix integers (e.g. {numbers[0]!r}) and strings (e.g. {texts[0]!r}); "
                        "both are read as text, so 1 and '1' would be one client: give the ids as one kind.")


def _cropped(seqs: list[np.ndarray], lengths: np.ndarray, length: int | None,
             source: str) -> tuple[list[np.ndarray], np.ndarray]:
    """Every sequence cut to its last ``length`` steps (``None``: shortest) and new lengths; warns on shortening."""
    shortest = int(lengths.min())
    length = shortest if length is None else int(length)
    if length < 1 or length > shortest:
        raise DataError(f"{source}: length: must be in [1, {shortest}] (the shortest sequence), got {length}.")
    if lengths.max() > length:
        run_warnings.warn(f"{source}: sequences of {lengths.min()}–{lengths.max()} steps keep their last "
                          f"{length} steps (ragged='pad' keeps them whole).", stacklevel=4)
    return [s[s.shape[0] - length:] for s in seqs], np.full(len(seqs), length)


def _padded(seqs: list[np.ndarray], lengths: np.ndarray, source: str) -> np.ndarray:
    """The sequences zero-padded to (n, max T_i, F) float32; non-finite or out-of-range values are an error."""
    x = np.zeros((len(seqs), int(lengths.max()), seqs[0].shape[1]), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for i, s in enumerate(seqs):
            x[i, :s.shape[0]] = s
    finite = np.all(np.isfinite(x), axis=(1, 2))
    if not finite.all():
        raise DataError(f"{source}: X[{int(np.flatnonzero(~finite)[0])}]: contains NaN or inf "
                        "(or values beyond float32).")
    return x


def _client_groups(ids: np.ndarray, order: list[str], split: np.ndarray, source: str) -> dict[str, str]:
    """Client id → group from per-sequence ``split``: one group per client, some client in ``train``."""
    split = np.array([str(s) for s in split])
    bad = sorted(set(split) - set(SPLIT_GROUPS))
    if bad:
        raise DataError(f"{source}: split: values must be {SPLIT_GROUPS}, got {bad}.")
    groups = {}
    for cid in order:
        values = set(split[ids == cid])
        if len(values) != 1:
            raise DataError(f"{source}: split: client {cid!r} has sequences in several groups "
                            f"{sorted(values)}; splits are client-wise.")
        groups[cid] = values.pop()
    if "train" not in groups.values():
        raise DataError(f"{source}: split: no client is in 'train'.")
    return groups


def npz_holds_series(path: str | Path) -> bool:
    """Whether an ``.npz`` holds own series (a ``series`` array, forecast by :mod:`tff_esn.data.series_files`)."""
    with _npz_archive(path, need_y=False) as (_, _, keys):
        return "series" in keys


def npz_real_targets(path: str | Path) -> bool:
    """Whether an ``.npz``'s ``y`` holds real numbers (a float dtype), from its header."""
    with _npz_archive(path, need_y=False) as (archive, path, keys):
        return "y" in keys and _npz_member(archive, "y", path, header=True)[1].kind == "f"


def npz_arrays(path: str | Path, names: Iterable[str]) -> dict[str, Any]:
    """The ``.npz``'s arrays of ``names`` that it holds (object arrays through the allow-list)."""
    with _npz_archive(path) as (archive, path, keys):
        return {name: _npz_member(archive, name, path) for name in names if name in keys}


def load_npz(path: str | Path, *, length: int | None = None, ragged: str = "pad",
             without_y: Task | None = None) -> SequenceDataset:
    """Own sequences: an ``.npz`` with ``X``, ``y``, ``client``, optional ``split``, via :func:`dataset_from_arrays`;
    with ``without_y``, a file without ``y`` is sequences to predict on (``labelled=False``, zeros standing in for
    the labels of that task)."""
    with _npz_archive(path, need_y=without_y is None) as (archive, path, keys):
        if "series" in keys:
            raise DataError(f"npz:{path}: holds series (no X and y): load it with "
                            "tff_esn.data.series_files.load_series_npz, or as the source npz:FILE.")
        arrays = _npz_labelling(archive, path, keys) if "y" in keys else _npz_grouping(archive, path, keys)
        arrays["X"] = _npz_member(archive, "X", path)
    return dataset_from_arrays(arrays["X"], arrays.get("y"), arrays["client"], arrays.get("split"),
                               source=f"npz:{path}", ragged=ragged, length=length,
                               unlabelled_task=without_y or CLASSIFY)


@contextlib.contextmanager
def _npz_archive(path: str | Path, *, need_y: bool = True) -> Iterator[tuple[zipfile.ZipFile, Path, set[str]]]:
    """The open ``.npz`` holding ``X``, ``y`` (unless not ``need_y``) and ``client`` (or ``series`` and ``client``:
    own series, :mod:`tff_esn.data.series_files`), its path and its arrays' names."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise MissingDataError(f"{path}: npz file does not exist.")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as err:
        raise DataError(f"{path}: not an .npz file ({err}).") from None
    with archive:
        keys = {n[:-4] for n in archive.namelist() if n.endswith(".npy")}
        needed = ("series", "client") if "series" in keys else ("X", "y", "client") if need_y else ("X", "client")
        missing = [k for k in needed if k not in keys]
        if missing:
            raise DataError(f"{path}: missing array(s) {missing}; expected X, {'y, ' if need_y else ''}client and "
                            f"optionally {'' if need_y else 'y, '}split, or "
                            f"series, client and optionally split, exog, stream (found {sorted(keys)}).")
        yield archive, path, keys


def _npz_labelling(archive: zipfile.ZipFile, path: Path, keys: set[str]) -> dict[str, np.ndarray]:
    """Every member but ``X``, labels checked against ``X``'s header before either is read."""
    source = f"npz:{path}"
    shape, _ = _npz_member(archive, "X", path, header=True)
    labels, _ = _npz_member(archive, "y", path, header=True)
    if not shape or labels[:1] != shape[:1]:
        raise DataError(f"{source}: y: must have shape ({shape[0] if shape else 'n'},) like X, got {labels} "
                        f"(X: {shape}).")
    y = _npz_member(archive, "y", path)
    if y.dtype.kind == "f":  # real targets: their shape against the sequences once X is read
        _check_real_values(y, source)
    else:
        _check_labels(y, int(shape[0]), source, None)
    return {"y": y, **_npz_grouping(archive, path, keys)}


def _npz_grouping(archive: zipfile.ZipFile, path: Path, keys: set[str]) -> dict[str, np.ndarray]:
    """The ``client`` and (when it holds one) ``split`` arrays of an ``.npz``."""
    return {k: _npz_member(archive, k, path) for k in ("client", "split") if k in keys}


def npz_stand_in(path: str | Path) -> SequenceDataset | None:
    """An ``.npz``'s clients, groups and labels with one zero step per sequence; ``None`` for real/object data and
    a file without ``y``."""
    with _npz_archive(path, need_y=False) as (archive, path, keys):
        if "series" in keys or "y" not in keys:
            return None
        arrays = _npz_labelling(archive, path, keys)
        shape, dtype = _npz_member(archive, "X", path, header=True)
    if dtype.hasobject or len(shape) != 3 or arrays["y"].ndim != 1 or arrays["y"].dtype.kind == "f":
        return None
    return dataset_from_arrays(np.zeros((shape[0], 1, shape[2]), np.float32), arrays["y"], arrays["client"],
                               arrays.get("split"), source=f"npz:{path}")


def npz_layout(path: str | Path) -> DataLayout | None:
    """The ``DataLayout`` of an ``.npz``'s ``X`` from its header; ``None`` for an object array."""
    with _npz_archive(path, need_y=False) as (archive, path, keys):
        if "series" in keys:
            return None
        shape, dtype = _npz_member(archive, "X", path, header=True)
    if dtype.hasobject or len(shape) != 3 or 0 in shape:
        return None
    n, steps, features = (int(v) for v in shape)
    return DataLayout(f"npz:{path}", (np.full(n, steps, np.int64),), features, n * steps * features * dtype.itemsize)
