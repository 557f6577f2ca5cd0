"""Validation data for every run: the split's validation clients, or folds carved from training.

:func:`carve` gives a :class:`Carving`: ``validation clients``; ``client folds`` (≥
:data:`MIN_CLIENTS_FOR_CLIENT_FOLDS` training clients dealt round-robin to :data:`FOLDS` folds); ``local
hold-out`` (each sequence's fold from a hash of its values, label and seed, stratified so that every class of two
or more training sequences keeps one outside each fold); or ``none``. Only training clients are carved; the record
goes into ``metrics.json["validation"]``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import numpy as np

from tff_esn.common import streams
from tff_esn.data.partition import deal
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split

FOLDS = 5
"""Folds of a carved validation (a fifth of the training data validates in each)."""

MIN_CLIENTS_FOR_CLIENT_FOLDS = 2 * FOLDS
"""Training clients needed for folds over clients (at least two clients per fold)."""

RULES = ("validation clients", "client folds", "local hold-out", "none")


@dataclasses.dataclass(frozen=True)
class Carving:
    """Where a run's validation data comes from (:func:`carve`): ``rule`` (:data:`RULES`), the folds' ``dataset``,
    its ``split``, each fold's validation clients, each training id's ``owner`` client and the draws' ``seed``."""

    rule: str
    dataset: SequenceDataset
    split: Split
    folds: tuple[tuple[str, ...], ...]
    owner: dict[str, str]
    seed: int

    @property
    def carved(self) -> bool:
        """Whether validation data was carved from training (no validation clients)."""
        return bool(self.folds)

    def fold(self, k: int) -> Split:
        """Split of fold ``k``: the fold validates, the rest trains, test unchanged (``validation clients``: :attr:`split`)."""
        if not self.folds:
            return self.split
        held = set(self.folds[k])
        return dataclasses.replace(self.split, train=tuple(c for c in self.split.train if c not in held),
                                   val=self.folds[k])

    def holdout(self) -> tuple[SequenceDataset, Split]:
        """``(dataset, split)`` for a model trained once: fold 0 validates (local hold-out: ``<client>#val``), the rest trains."""
        if self.rule != "local hold-out":
            return self.dataset, self.fold(0)
        held = set(self.folds[0])
        kept: dict[str, list] = {}
        val: dict[str, Any] = {}
        for cid in self.split.train:
            part = self.dataset.clients[cid]
            if cid in held:
                val[f"{self.owner[cid]}#val"] = part
            else:
                kept.setdefault(self.owner[cid], []).append(part)
        clients = {c: ClientSequences.concat(parts) for c, parts in kept.items()}
        others = [c for c in self.dataset.clients if c not in self.owner]
        clients.update(val)
        clients.update({c: self.dataset.clients[c] for c in others})
        dataset = dataclasses.replace(self.dataset, clients=clients, groups={})
        split = dataclasses.replace(self.split, train=tuple(kept), val=tuple(val),
                                    rule=f"{self.split.rule}; {self.describe()} (fold 0 held out)")
        return dataset, split

    def describe(self) -> str:
        """One line saying how the validation data was made."""
        if self.rule == "validation clients":
            return "validation on the split's validation clients"
        if self.rule == "none":
            return "no validation data: a single training sequence"
        if self.rule == "client folds":
            return (f"{len(self.folds)} folds over the {len(self.split.train)} training clients, dealt "
                    f"round-robin after a permutation drawn from seed {self.seed}")
        return (f"local hold-out: each training sequence in one of {len(self.folds)} folds by a hash of its "
                f"values, its label and seed {self.seed}, stratified so that a class of two or more keeps a "
                "training sequence; each client holds out its sequences of the fold")

    def to_dict(self) -> dict[str, Any]:
        """``metrics.json["validation"]``: the rule, its seed and each fold's validation data."""
        out: dict[str, Any] = {"rule": self.rule, "text": self.describe(), "test_used": False}
        if self.folds:
            out["seed"] = self.seed
            out["folds"] = len(self.folds)
            out["fold_sequences"] = [sum(len(self.dataset.clients[c]) for c in fold) for fold in self.folds]
            if self.rule == "client folds":
                out["fold_clients"] = [list(fold) for fold in self.folds]
        return out


def _client_folds(dataset: SequenceDataset, split: Split, seed: int, folds: int) -> Carving:
    """``min(folds, clients)`` folds over the training clients, dealt round-robin after a seeded permutation."""
    train = tuple(split.train)
    folds = min(folds, len(train))
    order = streams.CLIENT_FOLDS.generator(seed, len(train)).permutation(len(train))
    dealt = tuple(tuple(sorted((train[i] for i in order[k::folds]), key=train.index)) for k in range(folds))
    return Carving("client folds", dataset, split, dealt, {c: c for c in train}, seed)


def sequence_digests(client: ClientSequences, seed: int) -> list[int]:
    """The BLAKE2b digest (8 bytes, little-endian) of ``seed``, valid values and labels of each of ``client``'s
    sequences."""
    out = []
    steps = client.steps
    for i in range(len(client)):
        digest = hashlib.blake2b(np.int64(seed).tobytes(), digest_size=8)
        digest.update(np.ascontiguousarray(client.x[i, :steps[i]], np.float32).tobytes())
        digest.update(np.ascontiguousarray(client.y[i], np.int64).tobytes())
        out.append(int.from_bytes(digest.digest(), "little"))
    return out


def sequence_folds(client: ClientSequences, folds: int, seed: int) -> np.ndarray:
    """(n,) fold of each of ``client``'s sequences: :func:`sequence_digests` mod ``folds``."""
    return np.array([d % folds for d in sequence_digests(client, seed)], np.int64).reshape(len(client))


def stratified_folds(clients: dict[str, ClientSequences], folds: int, seed: int) -> dict[str, np.ndarray]:
    """Each client's :func:`sequence_folds`, where every class of two or more sequences (pooled over ``clients``,
    one label per sequence) that hashed into one fold f has its sequence of the largest digest moved to fold
    f + 1 (mod ``folds``): whichever fold validates, the class keeps a training sequence."""
    digests = {cid: sequence_digests(c, seed) for cid, c in clients.items()}
    out = {cid: np.array([d % folds for d in digests[cid]], np.int64).reshape(len(c)) for cid, c in clients.items()}
    if any(c.per_step for c in clients.values()):
        return out
    members: dict[int, list[tuple[int, str, int]]] = {}
    for cid, client in clients.items():
        for i, label in enumerate(np.asarray(client.y).reshape(-1).tolist()):
            members.setdefault(int(label), []).append((digests[cid][i], cid, i))
    for label in sorted(members):
        held = members[label]
        if len(held) >= 2 and len({int(out[cid][i]) for _, cid, i in held}) == 1:
            _, cid, i = max(held)
            out[cid][i] = (out[cid][i] + 1) % folds
    return out


def carve(dataset: SequenceDataset, split: Split, *, seed: int, folds: int = FOLDS) -> Carving:
    """Validation data: the validation clients, else ``folds`` folds of training clients, else hashed local hold-out."""
    train = tuple(split.train)
    if split.val:
        return Carving("validation clients", dataset, split, (), {c: c for c in train}, seed)
    singles = all(len(dataset.clients[c]) == 1 for c in train)
    if singles and len(train) < 2:
        return Carving("none", dataset, split, (), {c: c for c in train}, seed)
    if len(train) >= 2 * folds or singles:
        return _client_folds(dataset, split, seed, folds)
    parts: dict[str, Any] = {}
    owner: dict[str, str] = {}
    fold_ids: list[list[str]] = [[] for _ in range(folds)]
    folds_of = (stratified_folds(dataset.select(train), folds, seed) if not dataset.task.real else
                {cid: sequence_folds(dataset.clients[cid], folds, seed) for cid in train})
    for cid in train:
        client = dataset.clients[cid]
        fold_of = folds_of[cid]
        present = sorted(set(fold_of.tolist()))
        ids = tuple(f"{cid}#f{k}" for k in present)
        clash = sorted(set(ids) & set(dataset.clients))
        if clash:
            raise ValueError(f"carve: part ids {clash} clash with the data's client ids.")
        parts.update(deal(client, np.searchsorted(present, fold_of), ids))
        for k, part_id in zip(present, ids):
            owner[part_id] = cid
            fold_ids[k].append(part_id)
    if sum(1 for f in fold_ids if f) < 2:  # every sequence hashed to one fold: nothing would train
        return _client_folds(dataset, split, seed, folds) if len(train) >= 2 else \
            Carving("none", dataset, split, (), {c: c for c in train}, seed)
    others = {c: dataset.clients[c] for c in dataset.clients if c not in set(train)}
    carved = dataclasses.replace(dataset, clients={**parts, **others}, groups={})
    carved_split = dataclasses.replace(split, train=tuple(parts))
    return Carving("local hold-out", carved, carved_split, tuple(tuple(f) for f in fold_ids if f), owner, seed)
