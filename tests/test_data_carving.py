"""Validation carved from training data: seeded, a partition of the training sequences, never the test data."""

import dataclasses

import numpy as np
import pytest

from closed_form_data import many_classes_dataset, random_dataset
from tff_esn.data.carving import FOLDS, carve, sequence_folds, stratified_folds
from tff_esn.data.partition import deal
from tff_esn.data.sequences import ClientSequences, Split


def _rows(client: ClientSequences) -> list[bytes]:
    return sorted(x.tobytes() + y.tobytes() for x, y in zip(client.x, client.y))


def _no_val(dataset, n_test=1):
    ids = dataset.client_ids
    return Split("own", tuple(ids[:-n_test]), (), tuple(ids[-n_test:]))


@pytest.mark.parametrize("seed", range(6))
def test_local_holdout_parts_are_a_partition_of_each_training_client(seed):
    rng = np.random.default_rng(seed)
    data = random_dataset(n_clients=6, seed=seed, sizes=rng.integers(1, 30, size=6))
    split = _no_val(data)
    carving = carve(data, split, seed=seed)
    assert carving.rule == "local hold-out"
    for cid in split.train:
        parts = [p for p, owner in carving.owner.items() if owner == cid]
        pooled = ClientSequences.concat([carving.dataset.clients[p] for p in parts])
        assert _rows(pooled) == _rows(data.clients[cid])
    held = [c for fold in carving.folds for c in fold]
    assert len(held) == len(set(held)) and set(held) == set(carving.split.train)
    assert carving.split.test == split.test
    for cid in split.test:
        assert carving.dataset.clients[cid] is data.clients[cid]


@pytest.mark.parametrize("seed", range(5))
def test_the_pooled_folds_do_not_depend_on_how_the_sequences_are_dealt_to_clients(seed):
    """Property: the same training sequences dealt to other clients in another order give the same
    pooled folds (IncFed on any partition validates on what the centralized readout does)."""
    rng = np.random.default_rng(seed)
    data = random_dataset(n_clients=3, seed=seed, sizes=rng.integers(5, 25, size=3))
    split = _no_val(data)
    pooled = data.pooled(split.train)
    owner = rng.integers(0, 4, size=len(pooled))
    owner[:4] = np.arange(4)
    order = rng.permutation(len(pooled))
    dealt = deal(ClientSequences(pooled.x[order], pooled.y[order]), owner, ("q0", "q1", "q2", "q3"))
    other = dataclasses.replace(data, clients={**dealt, **{c: data.clients[c] for c in split.test}})
    first = carve(data, split, seed=seed)
    second = carve(other, Split("own", tuple(dealt), (), split.test), seed=seed)

    def folds(carving):
        return [sorted(r for c in fold for r in _rows(carving.dataset.clients[c])) for fold in carving.folds]

    assert folds(first) == folds(second)
    assert 3 <= len(first.folds) <= FOLDS


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
    assert held.test == split.test and set(held.train) <= set(split.train)
    assert set(held.val) == {f"{carving.owner[p]}#val" for p in carving.folds[0]}
    for cid in split.train:
        parts = [dataset.clients[c] for c in (cid, f"{cid}#val") if c in dataset.clients]
        assert _rows(ClientSequences.concat(parts)) == _rows(data.clients[cid])
    assert not set(held.val) & set(held.train)


def test_single_sequences_are_folded_as_clients_and_one_sequence_has_no_validation():
    data = random_dataset(n_clients=4, sizes=[1, 1, 1, 1])
    assert carve(data, _no_val(data), seed=0).rule == "client folds"
    assert len(carve(data, _no_val(data), seed=0).folds) == 3
    one = random_dataset(n_clients=2, sizes=[1, 1])
    assert carve(one, _no_val(one), seed=0).rule == "none"


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_every_class_of_two_training_sequences_keeps_one_outside_each_fold(seed):
    data = many_classes_dataset(seed)
    carving = carve(data, _no_val(data), seed=0)
    assert carving.rule == "local hold-out"
    for k in range(len(carving.folds)):
        trained = np.concatenate([carving.dataset.clients[c].y for c in carving.fold(k).train])
        assert sorted(set(trained.tolist())) == list(range(52))
    held, split = carving.holdout()
    assert sorted(set(np.concatenate([held.clients[c].y for c in split.train]).tolist())) == list(range(52))


def test_stratification_moves_one_sequence_of_each_class_hashed_into_one_fold_and_no_other():
    data = many_classes_dataset(2)
    train = data.client_ids[:-1]
    plain = {c: sequence_folds(data.clients[c], FOLDS, 0) for c in train}
    moved = stratified_folds(data.select(train), FOLDS, 0)
    folds_of = {}
    for c in train:
        for label, fold in zip(data.clients[c].y.tolist(), plain[c].tolist()):
            folds_of.setdefault(label, set()).add(fold)
    one_fold = sorted(k for k, folds in folds_of.items() if len(folds) == 1)
    changed = [(c, i) for c in train for i in np.flatnonzero(plain[c] != moved[c])]
    assert {16, 46, 51} <= set(one_fold)  # both sequences in fold 0: the hold-out's validation fold
    assert sorted(int(data.clients[c].y[i]) for c, i in changed) == one_fold
    assert all(moved[c][i] == (plain[c][i] + 1) % FOLDS for c, i in changed)
    single = {"c0": ClientSequences(data.clients["c0"].x[:1], data.clients["c0"].y[:1])}
    assert stratified_folds(single, FOLDS, 0)["c0"].tolist() == sequence_folds(single["c0"], FOLDS, 0).tolist()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_folds_are_the_hashs_whenever_every_class_already_keeps_a_training_sequence(seed):
    data = random_dataset(n_clients=4, steps=6, features=2, n_classes=3, seed=seed, sizes=[8] * 4)
    carving = carve(data, _no_val(data), seed=seed)
    for part, owner in carving.owner.items():
        fold = int(part.rsplit("#f", 1)[1])
        assert set(sequence_folds(carving.dataset.clients[part], FOLDS, seed).tolist()) == {fold}
