"""Seeded partitioners: the training sequences of a split spread over clients under control.

``natural``, ``iid``, ``dirichlet:α`` (Hsu et al. 2019), ``pathological:k`` (McMahan et al. 2017),
``quantity:α`` and ``powerlaw:a`` (Li et al. 2022) deal the pooled training sequences to ``clients`` new
clients (``p00``, …), each keeping ≥ 1 sequence; validation and test groups are dealt only when named.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from tff_esn.common import streams
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split

PARTITIONERS = ("natural", "iid", "dirichlet", "pathological", "quantity", "powerlaw")
LABEL_SKEWS = ("dirichlet", "pathological")
"""The partitioners that deal by class (a dataset of real targets has none)."""
_PARAMETER = {"dirichlet": "concentration α > 0", "pathological": "classes per client k ≥ 1",
              "quantity": "concentration α > 0", "powerlaw": "exponent a ≥ 0"}


@dataclasses.dataclass(frozen=True)
class Partitioner:
    """A partitioner and its parameter (module docstring); ``str()`` gives ``kind[:value]``."""

    kind: str = "natural"
    value: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in PARTITIONERS:
            raise ValueError(f"partition: expected one of {', '.join(PARTITIONERS)}, got {self.kind!r}.")
        value = self.value
        ok = (self.kind in _PARAMETER) == (value is not None) and (value is None or math.isfinite(value) and (
            value >= 0 if self.kind == "powerlaw" else value > 0) and (
            self.kind != "pathological" or float(value).is_integer()))
        if not ok:
            raise ValueError(f"partition {self.kind!r}: " + (
                "takes no parameter" if self.kind not in _PARAMETER else
                f"expects a {_PARAMETER[self.kind]}, e.g. '{self.kind}:1'" if value is None else
                f"expected a {_PARAMETER[self.kind]}, got {value!r}."))

    @classmethod
    def parse(cls, text: str) -> "Partitioner":
        """``natural``, ``iid``, ``dirichlet:0.1``, ``pathological:2``, ``quantity:0.5``, ``powerlaw:1.5``."""
        kind, _, value = str(text).partition(":")
        try:
            number = float(value) if value else None
        except ValueError:
            raise ValueError(f"partition {kind!r}: expected a {_PARAMETER.get(kind, 'number')} after ':', "
                             f"got {value!r}.") from None
        return cls(kind, number)

    def __str__(self) -> str:
        return self.kind if self.value is None else f"{self.kind}:{self.value:g}"


def _sizes_to_assignment(sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random permutation of n = Σ sizes sequences cut into consecutive parts of ``sizes``."""
    owner = np.repeat(np.arange(sizes.size), sizes)
    out = np.empty_like(owner)
    out[rng.permutation(owner.size)] = owner
    return out


def _largest_remainder(weights: np.ndarray, total: int) -> np.ndarray:
    """Integers ≥ 0 summing to ``total`` proportional to ``weights`` (Hamilton's method)."""
    share = weights / weights.sum() * total
    sizes = np.floor(share).astype(np.int64)
    sizes[np.argsort(-(share - sizes), kind="stable")[:total - sizes.sum()]] += 1
    return sizes


def _fill_empty(assignment: np.ndarray, clients: int, rng: np.random.Generator) -> np.ndarray:
    """Gives every empty client one sequence of the fullest client (chosen at random)."""
    assignment = assignment.copy()
    counts = np.bincount(assignment, minlength=clients)
    for empty in np.flatnonzero(counts == 0):
        donor = int(counts.argmax())
        moved = rng.choice(np.flatnonzero(assignment == donor))
        assignment[moved] = empty
        counts[donor] -= 1
        counts[empty] += 1
    return assignment


def _dirichlet(labels: np.ndarray, clients: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    assignment = np.empty(labels.size, np.int64)
    for c in np.unique(labels):
        rows = rng.permutation(np.flatnonzero(labels == c))
        shares = rng.dirichlet(np.full(clients, alpha))
        assignment[rows] = _sizes_to_assignment(_largest_remainder(shares, rows.size), rng)
    return _fill_empty(assignment, clients, rng)


def _pathological(labels: np.ndarray, clients: int, k: int, rng: np.random.Generator) -> np.ndarray:
    classes = rng.permutation(np.unique(labels))
    if k > classes.size:
        raise DataError(f"partition pathological:{k}: the training sequences hold only {classes.size} classes.")
    if clients + k - 1 < classes.size:
        raise DataError(f"partition pathological:{k}: {clients} clients holding {k} classes each cover at most "
                        f"{clients + k - 1} of the {classes.size} classes; use more clients or a larger k.")
    holders: dict[int, list[int]] = {int(c): [] for c in classes}
    for i in range(clients):
        for j in range(k):
            holders[int(classes[(i + j) % classes.size])].append(i)
    assignment = np.empty(labels.size, np.int64)
    for c, owners in holders.items():
        rows = rng.permutation(np.flatnonzero(labels == c))
        assignment[rows] = np.asarray(owners)[np.arange(rows.size) % len(owners)]
    return _fill_empty(assignment, clients, rng)


def assign(labels: np.ndarray, clients: int, partitioner: Partitioner, seed: int, *, stream: int = 0) -> np.ndarray:
    """Client index in [0, ``clients``) of each sequence of class ``labels`` (n,) under ``partitioner`` (``stream``: draw)."""
    labels = np.asarray(labels)
    n = labels.size
    if not isinstance(clients, (int, np.integer)) or not 1 <= clients <= n:
        raise DataError(f"partition {partitioner}: {clients!r} clients need at least {clients} sequences "
                        f"(every client keeps one; clients an integer ≥ 1), got {n}.")
    rng = streams.PARTITION.generator(seed, PARTITIONERS.index(partitioner.kind), stream)
    kind, value = partitioner.kind, partitioner.value
    if kind == "iid":
        return _sizes_to_assignment(_largest_remainder(np.ones(clients), n), rng)
    if kind == "dirichlet":
        return _dirichlet(labels, clients, value, rng)
    if kind == "pathological":
        return _pathological(labels, clients, int(value), rng)
    if kind == "quantity":
        sizes = 1 + rng.multinomial(n - clients, rng.dirichlet(np.full(clients, value)))
    else:
        weights = rng.permutation(np.arange(1, clients + 1, dtype=np.float64) ** -value)
        sizes = 1 + _largest_remainder(weights, n - clients)
    return _sizes_to_assignment(sizes, rng)


def sequence_labels(client: ClientSequences) -> np.ndarray:
    """(n,) one class per sequence: its label, or its most frequent step label (ties to the smaller class)."""
    if not client.per_step:
        return client.y
    n_classes = int(client.y.max()) + 1
    counts = (client.y[:, :, None] == np.arange(n_classes)).sum(axis=1)
    return counts.argmax(axis=1)


def label_histogram(dataset: SequenceDataset, ids: tuple[str, ...]) -> dict[str, list[int]] | None:
    """Client id → label counts per class (counts of steps for per-step labels); ``None`` for real targets."""
    if dataset.task.real:
        return None
    return {cid: np.bincount(dataset.clients[cid].y.reshape(-1), minlength=dataset.n_classes).tolist()
            for cid in ids}


PARTITION_GROUPS = ("train", "val", "test")
_PREFIX = {"train": "p", "val": "v", "test": "t"}


def deal(pooled: ClientSequences, owner: np.ndarray, ids: tuple[str, ...]) -> dict[str, ClientSequences]:
    """The clients ``ids``: client i holds the rows of ``pooled`` whose ``owner`` is i."""
    parts = {}
    for i, cid in enumerate(ids):
        rows = np.flatnonzero(owner == i)
        lengths = None if pooled.lengths is None else pooled.lengths[rows]
        steps = pooled.x.shape[1] if lengths is None else int(lengths.max())
        parts[cid] = ClientSequences(pooled.x[rows, :steps], pooled.y[rows], lengths)
    return parts


def partition_rule(split: Split, partitioner: Partitioner, groups: tuple[str, ...], clients: int, seed: int) -> str:
    """``split_rule`` of a dealt split: the split's own rule, then how ``partitioner`` dealt ``groups`` anew."""
    return (f"{split.rule}; then the {', '.join(groups)} sequences dealt to {clients} clients per group by "
            f"{partitioner} (seed {seed})")


def partition_dataset(dataset: SequenceDataset, split: Split, partitioner: Partitioner | str,
                      clients: int | None = None, *, seed: int = 0,
                      groups: tuple[str, ...] = ("train",)) -> tuple[SequenceDataset, Split, dict[str, Any]]:
    """``(dataset, split, record)``: ``split``'s training sequences (and named ``groups``' on own seed streams) dealt
    to ``clients`` new clients per group by ``partitioner``; split ``SPLIT+PARTITIONER``; per-client size/labels record."""
    if isinstance(partitioner, str):
        partitioner = Partitioner.parse(partitioner)
    groups = tuple(dict.fromkeys(("train", *groups)))
    bad = [g for g in groups if g not in PARTITION_GROUPS or not split.groups[g]]
    if bad:
        raise ValueError(f"groups: expected some of {PARTITION_GROUPS} that split {split.name!r} has clients in, "
                         f"got {bad}.")
    natural = partitioner.kind == "natural"
    if natural != (clients is None) or natural and groups != ("train",):
        raise ValueError(f"{'groups' if clients is None else 'clients'}: partition 'natural' keeps the data's own "
                         "clients; give a partitioner (e.g. iid or dirichlet:0.3) to deal them anew." if natural else
                         f"clients: partition {partitioner} needs the number of clients.")
    if natural:
        new_dataset, new_split, dealt = dataset, split, split.train
    else:
        if dataset.task.real and partitioner.kind in LABEL_SKEWS:
            raise DataError(f"{dataset.source}: partition {partitioner}: skews the classes, and this "
                            f"{dataset.task.kind} dataset has real targets; use iid, quantity or powerlaw.")
        new_ids, parts = {}, {}
        width = len(str(clients - 1))
        for stream, group in enumerate((*PARTITION_GROUPS, "extra")):
            if group == "extra":
                new = dataset.select(c for ids in split.extra.values() for c in ids)
            elif group not in groups:
                new = dataset.select(getattr(split, group))
            else:
                pooled = dataset.pooled(getattr(split, group))
                try:
                    owner = assign(sequence_labels(pooled), clients, partitioner, seed, stream=stream)
                except DataError as err:
                    where = f"{dataset.source}: {group} clients {list(getattr(split, group))}"
                    raise DataError(f"{where}: {err}") from None
                new = deal(pooled, owner, tuple(f"{_PREFIX[group]}{i:0{width}d}" for i in range(clients)))
            clash = sorted(set(parts) & set(new))
            if clash:
                raise ValueError(f"partition: new client ids {clash} clash with the split's kept clients.")
            new_ids[group] = tuple(new)
            parts.update(new)
        dealt = tuple(c for g in groups for c in new_ids[g])
        labels = {cid: g for g in PARTITION_GROUPS for cid in new_ids[g]}
        kept = {c: g for c, g in dataset.groups.items() if c in parts}
        new_dataset = SequenceDataset(parts, dataset.n_classes, dataset.feature_names, dataset.label_names,
                                      dataset.source, groups=kept | {c: labels[c] for c in dealt}
                                      if dataset.groups else {}, task=dataset.task)
        new_split = Split(f"{split.name}+{partitioner}", new_ids["train"], new_ids["val"], new_ids["test"],
                          dict(split.extra), rule=partition_rule(split, partitioner, groups, clients, seed))
    record = {"partitioner": str(partitioner), "clients": len(new_split.train), "seed": seed, "groups": list(groups),
              "label_names": list(dataset.label_names),
              "sizes": {cid: len(new_dataset.clients[cid]) for cid in dealt},
              "label_histogram": label_histogram(new_dataset, dealt)}
    return new_dataset, new_split, record
