"""Validation carved from training data: seeded, a partition of the training sequences, never the test data."""

import dataclasses

import numpy as np
import pytest

from closed_form_data import random_dataset
from tff_esn.data.carving import FOLDS, carve
from tff_esn.data.sequences import ClientSequences, Split


def _rows(client: ClientSequences) -> list[bytes]:
    return sorted(x.tobytes() + y.tobytes() for x, y in zip(client.x, client.y))


def _no_val(dataset, n_test=1):
    ids = dataset.client_ids
    return Split("own", tuple(ids[:-n_test]), (), tuple(ids[-n_test:]))


@pytest.mark.parametrize("seed", range(6))
def test_local_holdout_parts_are_a_stratified_partition_of_each_training_client(seed):
    rng = np.random.default_rng(seed)
    data = random_dataset(n_clients=6, seed=seed, sizes=rng.integers(1, 30, size=6))
    split = _no_val(data)
    carving = carve(data, split, seed=seed)
    assert carving.rule == "local hold-out"
    for cid in split.train:
        parts = [p for p, owner in carving.owner.items() if owner == cid]
        pooled = ClientSequences.concat([carving.dataset.clients[p] for p in parts])
        assert _rows(pooled) == _rows(data.clients[cid])
        n = len(data.clients[cid])
        if n == 1:
            assert not any(p in fold for fold in carving.folds for p in parts)
        for p in parts:  # stratified round-robin: each class spread over the folds as evenly as dealt
            assert abs(len(carving.dataset.clients[p]) - n / FOLDS) < 1 + (n % FOLDS > 0) + 1
    held = [c for fold in carving.folds for c in fold]
    assert len(held) == len(set(held))
    assert set(held) <= set(carving.split.train)
    assert carving.split.test == split.test
    for cid in split.test:
        assert carving.dataset.clients[cid] is data.clients[cid]


def test_same_seed_same_folds_other_seed_other_folds():
    data = random_dataset(n_clients=4, sizes=[20, 20, 20, 20])
    split = _no_val(data)
    a, b, c = carve(data, split, seed=3), carve(data, split, seed=3), carve(data, split, seed=4)
    assert a.folds == b.folds and a.to_dict() == b.to_dict()
    assert all(_rows(a.dataset.clients[p]) == _rows(b.dataset.clients[p]) for p in a.split.train)
    assert any(_rows(a.dataset.clients[p]) != _rows(c.dataset.clients[p]) for p in a.split.train)


@pytest.mark.parametrize("n_test", [1, 3])
def test_the_test_data_never_changes_a_fold(n_test):
    data = random_dataset(n_clients=12)
    split = _no_val(data, n_test)
    noisy = {c: ClientSequences(v.x + 100.0, v.y[::-1].copy()) if c in split.test else v
             for c, v in data.clients.items()}
    other = dataclasses.replace(data, clients=noisy)
    for source in (data, other):
        for sub in (split, dataclasses.replace(split, train=split.train[:4])):
            carving = carve(source, sub, seed=0)
            assert not set(split.test) & {c for fold in carving.folds for c in fold}
    assert carve(data, split, seed=0).folds == carve(other, split, seed=0).folds
    small = dataclasses.replace(split, train=split.train[:4])
    first, second = carve(data, small, seed=0), carve(other, small, seed=0)
    assert first.folds == second.folds
    assert all(_rows(first.dataset.clients[p]) == _rows(second.dataset.clients[p]) for p in first.split.train)


def test_client_folds_with_enough_training_clients():
    data = random_dataset(n_clients=13)
    split = _no_val(data)
    carving = carve(data, split, seed=1)
    assert carving.rule == "client folds" and len(carving.folds) == FOLDS
    assert sorted(c for fold in carving.folds for c in fold) == sorted(split.train)
    assert all(len(fold) >= 2 for fold in carving.folds)
    fold = carving.fold(2)
    assert set(fold.val) == set(carving.folds[2]) and not set(fold.train) & set(fold.val)
    assert fold.test == split.test
    assert carving.to_dict()["fold_clients"] == [list(f) for f in carving.folds]


def test_validation_clients_are_kept_and_holdout_is_the_input():
    data = random_dataset(n_clients=5)
    ids = data.client_ids
    split = Split("given", ids[:3], (ids[3],), (ids[4],))
    carving = carve(data, split, seed=0)
    assert carving.rule == "validation clients" and not carving.carved
    assert carving.holdout() == (data, split)
    assert carving.to_dict() == {"rule": "validation clients", "text": carving.describe(), "test_used": False}


def test_holdout_trains_on_each_client_without_fold_zero():
    data = random_dataset(n_clients=4, sizes=[11, 7, 1, 9])
    split = _no_val(data)
    carving = carve(data, split, seed=5)
    dataset, held = carving.holdout()
    assert held.train == split.train and held.test == split.test
    assert set(held.val) == {f"{c}#val" for c in ("c0", "c1")}
    for cid in held.train:
        pooled = dataset.clients[cid] if f"{cid}#val" not in dataset.clients else ClientSequences.concat(
            [dataset.clients[cid], dataset.clients[f"{cid}#val"]])
        assert _rows(pooled) == _rows(data.clients[cid])
    assert len(dataset.clients["c2"]) == 1


def test_single_sequences_are_folded_as_clients_and_one_sequence_has_no_validation():
    data = random_dataset(n_clients=4, sizes=[1, 1, 1, 1])
    assert carve(data, _no_val(data), seed=0).rule == "client folds"
    assert len(carve(data, _no_val(data), seed=0).folds) == 3
    one = random_dataset(n_clients=2, sizes=[1, 1])
    assert carve(one, _no_val(one), seed=0).rule == "none"
