"""Checks of a dataset against a split, before any algorithm runs (one line each).

:func:`check_split` raises a :class:`~tff_esn.data.errors.DataError` for no test clients, classes unseen in
training or with fewer than 2 training labels, and records warnings for one training client, a one-class
group and evaluation sequences that copy training ones (SHA-256).
"""

from __future__ import annotations

import hashlib

import numpy as np

from tff_esn.common import run_warnings
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import SequenceDataset, Split

MIN_TRAINING_LABELS = 2
"""Labels each class needs among the training clients."""


def _label_counts(dataset: SequenceDataset, ids) -> np.ndarray:
    """(K,) labels of each class among the clients ``ids`` (sequences, or steps for per-step labels)."""
    counts = np.zeros(dataset.n_classes, np.int64)
    for cid in ids:
        counts += np.bincount(dataset.clients[cid].y.ravel(), minlength=dataset.n_classes)
    return counts


def _names(dataset: SequenceDataset, classes) -> str:
    return ", ".join(repr(dataset.label_names[k]) for k in classes)


def check_split(dataset: SequenceDataset, split: Split, *, federated: bool, test_required: bool = True) -> None:
    """Refuses a misleading ``split`` (module docstring); warns on one training client of a ``federated`` algorithm."""
    source = dataset.source
    unknown = [cid for ids in split.groups.values() for cid in ids if cid not in dataset.clients]
    if unknown:
        raise DataError(f"{source}: split {split.name!r} names client id(s) {unknown[:5]} that the data does not "
                        f"have; its clients are {list(dataset.client_ids)[:10]}.")
    if test_required and not split.test:
        raise DataError(f"{source}: split {split.name!r} has no test clients ({split.rule}); give the data test "
                        "clients (an npz 'split' array with 'test', or more clients), or run without a test group on "
                        "purpose (--no-test; run_algorithm(..., test_required=False)).")
    if not dataset.task.real:
        _check_classes(dataset, split)
    if federated and len(split.train) == 1:
        run_warnings.warn(f"{source}: one training client ({split.train[0]!r}): the federation fits that client "
                          "alone, a centralized fit; split the data into more clients to federate.", stacklevel=3)
    for group in ("val", "test"):
        present = [] if dataset.task.real else np.flatnonzero(_label_counts(dataset, getattr(split, group)))
        if len(present) == 1 and dataset.n_classes > 1:
            run_warnings.warn(f"{source}: the {group} clients hold one class only ({_names(dataset, present)}): AUC "
                              "and the other classes' recall are undefined and accuracy is that class's recall; give "
                              f"the {group} group sequences of every class.", stacklevel=3)
        copies = _copies(dataset, split.train, getattr(split, group))
        if copies:
            run_warnings.warn(f"{source}: {copies} {group} sequence(s) are exact copies of training sequences "
                              f"(leakage: the {group} scores overstate what the model does on new data); drop them "
                              f"from the {group} clients.", stacklevel=3)


def _check_classes(dataset: SequenceDataset, split: Split) -> None:
    """A :class:`DataError` for val/test classes absent from training or under :data:`MIN_TRAINING_LABELS` labels."""
    source = dataset.source
    per_step = any(c.per_step for c in dataset.clients.values())
    unit = "labelled steps" if per_step else "sequences"
    train = _label_counts(dataset, split.train)
    for group in ("val", "test"):
        ids = getattr(split, group)
        unseen = np.flatnonzero((_label_counts(dataset, ids) > 0) & (train == 0))
        if unseen.size:
            raise DataError(f"{source}: class(es) {_names(dataset, unseen)} occur in the {group} clients but in no "
                            f"training client (training: {list(split.train)[:5]}); move clients between the groups so "
                            "that training sees every class, or drop those sequences.")
    scarce = np.flatnonzero(train < MIN_TRAINING_LABELS)
    if scarce.size:
        counts = ", ".join(f"{dataset.label_names[k]!r}: {train[k]}" for k in scarce)
        raise DataError(f"{source}: class(es) with fewer than {MIN_TRAINING_LABELS} training {unit} ({counts}); a "
                        "classifier cannot learn them: add training data of those classes, or merge or drop them and "
                        "recode the labels 0…K−1.")


def _fingerprints(dataset: SequenceDataset, ids) -> list[bytes]:
    """A SHA-256 of each sequence of the clients ``ids`` (its valid steps' float32 values and its shape)."""
    prints = []
    for cid in ids:
        c = dataset.clients[cid]
        for i, steps in enumerate(c.steps):
            values = np.ascontiguousarray(c.x[i, :steps])
            prints.append(hashlib.sha256(values.tobytes() + repr(values.shape).encode()).digest())
    return prints


def _copies(dataset: SequenceDataset, train, others) -> int:
    """Sequences of the clients ``others`` whose values equal those of a sequence of the clients ``train``."""
    if not others:
        return 0
    seen = set(_fingerprints(dataset, train))
    return sum(p in seen for p in _fingerprints(dataset, others))
