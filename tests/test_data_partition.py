"""Partitioners: determinism, exact coverage, non-empty clients, the skew each one promises, and
IncFed's readout independent of the partition."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.incfed import fit_incfed
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.errors import DataError
from tff_esn.data.partition import PARTITIONERS, Partitioner, assign, partition_dataset, sequence_labels
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split

SPECS = ("iid", "dirichlet:0.1", "dirichlet:100", "pathological:1", "pathological:2", "quantity:0.5",
         "powerlaw:1.5", "powerlaw:0")


def tagged_dataset(sizes, n_classes=3, steps=6, seed=0, ragged=False, per_step=False):
    """Training clients ``c{i}`` plus clients ``v`` and ``t``; x[i, 0, 0] is a unique sequence tag."""
    rng = np.random.default_rng(seed)
    clients, tag = {}, 0
    for i, n in enumerate([*sizes, 3, 3]):
        y = rng.integers(0, n_classes, size=(n, steps) if per_step else n)
        x = rng.normal(size=(n, steps, 2)).astype(np.float32) + (y if per_step else y[:, None])[..., None]
        x[:, 0, 0] = np.arange(tag, tag + n)
        tag += n
        lengths = rng.integers(2, steps + 1, size=n) if ragged else None
        cid = f"c{i}" if i < len(sizes) else ("v", "t")[i - len(sizes)]
        clients[cid] = ClientSequences(x, y, lengths)
    data = SequenceDataset(clients, n_classes, ("a", "b"), tuple(f"k{j}" for j in range(n_classes)), "tagged")
    return data, Split("s", tuple(f"c{i}" for i in range(len(sizes))), ("v",), ("t",))


def _tags(data, ids):
    return np.concatenate([data.clients[c].x[:, 0, 0] for c in ids]).astype(int)


@settings(max_examples=60, deadline=None)
@given(spec=st.sampled_from(SPECS), sizes=st.lists(st.integers(1, 12), min_size=1, max_size=5),
       clients=st.integers(1, 9), seed=st.integers(0, 2**31), classes=st.integers(2, 4))
def test_every_partitioner_covers_each_sequence_once_keeps_clients_nonempty_and_is_seeded(spec, sizes, clients,
                                                                                          seed, classes):
    data, split = tagged_dataset(sizes, classes, seed=seed % 100)
    n = sum(sizes)
    labels = sequence_labels(data.pooled(split.train))
    present = len(np.unique(labels))
    k = int(spec[-1]) if spec.startswith("pathological") else None
    if clients > n or (k is not None and (k > present or clients + k - 1 < present)):
        with pytest.raises(DataError):
            partition_dataset(data, split, spec, clients, seed=seed)
        return
    new, new_split, record = partition_dataset(data, split, spec, clients, seed=seed)
    assert len(new_split.train) == clients and new_split.val == ("v",) and new_split.test == ("t",)
    assert new.clients["v"] is data.clients["v"] and set(new.clients) == {*new_split.train, "v", "t"}
    tags = _tags(new, new_split.train)
    np.testing.assert_array_equal(np.sort(tags), np.arange(n))  # every training sequence exactly once
    pooled = data.pooled(split.train)
    for cid in new_split.train:
        c = new.clients[cid]
        assert len(c) >= 1
        np.testing.assert_array_equal(c.y, pooled.y[c.x[:, 0, 0].astype(int)])
        np.testing.assert_array_equal(c.x, pooled.x[c.x[:, 0, 0].astype(int)])
    assert record["sizes"] == {cid: len(new.clients[cid]) for cid in new_split.train}
    assert np.array(list(record["label_histogram"].values())).sum(axis=0).tolist() == \
        np.bincount(pooled.y, minlength=classes).tolist()
    again = partition_dataset(data, split, spec, clients, seed=seed)[0]
    np.testing.assert_array_equal(_tags(again, new_split.train), tags)
    if spec.startswith("pathological"):
        assert all(np.count_nonzero(h) <= int(spec[-1]) for h in record["label_histogram"].values())


def test_a_different_seed_gives_a_different_partition():
    labels = np.repeat(np.arange(4), 50)
    for spec in SPECS:
        a, b = (assign(labels, 8, Partitioner.parse(spec), seed) for seed in (0, 1))
        assert not np.array_equal(a, b), spec


def test_dirichlet_skew_grows_as_alpha_shrinks_and_iid_and_quantity_keep_labels_mixed():
    labels = np.repeat(np.arange(4), 250)

    def top_share(spec):
        owner = assign(labels, 10, Partitioner.parse(spec), 3)
        counts = np.array([np.bincount(labels[owner == i], minlength=4) for i in range(10)])
        return (counts.max(axis=1) / counts.sum(axis=1)).mean()

    assert top_share("dirichlet:0.05") > 0.85 > 0.4 > top_share("dirichlet:1000")
    assert top_share("iid") < 0.4 and top_share("quantity:100") < 0.45
    assert top_share("pathological:1") == 1.0


def test_sizes_of_iid_quantity_and_powerlaw():
    labels = np.zeros(103, int)
    assert sorted(np.bincount(assign(labels, 10, Partitioner("iid"), 0))) == [10] * 7 + [11] * 3
    assert sorted(np.bincount(assign(labels, 10, Partitioner("powerlaw", 0.0), 0))) == [10] * 7 + [11] * 3
    zipf = np.sort(np.bincount(assign(labels, 4, Partitioner("powerlaw", 1.0), 0)))[::-1]
    # 99 · (12, 6, 4, 3)/25 = 47.52, 23.76, 15.84, 11.88 → 47, 24, 16, 12 by largest remainder, + 1 each
    np.testing.assert_array_equal(zipf, [48, 25, 17, 13])
    skewed = np.bincount(assign(labels, 10, Partitioner("quantity", 0.1), 0), minlength=10)
    assert skewed.min() >= 1 and skewed.max() > 30 and skewed.sum() == 103


@pytest.mark.parametrize("text, message", [
    ("dirichlet", "expects a concentration α > 0"), ("dirichlet:0", "expected a concentration"),
    ("dirichlet:x", "after ':'"), ("iid:3", "takes no parameter"), ("pathological:1.5", "classes per client"),
    ("shards:2", "expected one of"), ("powerlaw:-1", "exponent a ≥ 0"), ("quantity:nan", "concentration"),
])
def test_bad_partitioner_texts(text, message):
    with pytest.raises(ValueError, match=message):
        Partitioner.parse(text)


def test_natural_keeps_the_data_and_refuses_a_client_count():
    data, split = tagged_dataset([3, 4])
    new, new_split, record = partition_dataset(data, split, "natural")
    assert new is data and new_split is split and record["sizes"] == {"c0": 3, "c1": 4}
    assert record["partitioner"] == "natural" and set(PARTITIONERS) >= {"natural", "iid"}
    with pytest.raises(ValueError, match="keeps the data's own clients"):
        partition_dataset(data, split, "natural", 5)
    with pytest.raises(ValueError, match="needs the number of clients"):
        partition_dataset(data, split, "iid")
    with pytest.raises(DataError, match="20 clients need at least 20 sequences"):
        partition_dataset(data, split, "iid", 20)
    with pytest.raises(DataError, match="cover at most 2 of the 3 classes"):
        partition_dataset(*tagged_dataset([30]), "pathological:1", 2)


def test_validation_and_test_are_dealt_only_when_named():
    data, split = tagged_dataset([6, 6], seed=4)
    new, new_split, record = partition_dataset(data, split, "iid", 3, seed=1, groups=("test",))
    assert new_split.val == ("v",) and new_split.test == ("t0", "t1", "t2") and record["groups"] == ["train", "test"]
    np.testing.assert_array_equal(np.sort(_tags(new, new_split.test)), np.sort(_tags(data, ("t",))))
    assert set(record["sizes"]) == {"p0", "p1", "p2", "t0", "t1", "t2"} and record["sizes"]["t0"] == 1
    same = partition_dataset(data, split, "iid", 3, seed=1)[0]
    np.testing.assert_array_equal(_tags(new, new_split.train), _tags(same, new_split.train))  # own seed streams
    with pytest.raises(DataError, match=r"val clients \['v'\]: partition iid: 4 clients need at least 4 .*got 3"):
        partition_dataset(data, split, "iid", 4, groups=("val",))
    with pytest.raises(ValueError, match=r"expected some of \('train', 'val', 'test'\)"):
        partition_dataset(data, split, "iid", 3, groups=("extra",))
    with pytest.raises(ValueError, match="groups: partition 'natural'"):
        partition_dataset(data, split, "natural", groups=("test",))
    clash = Split("s", ("c0",), ("p0",), ())
    renamed = SequenceDataset({"c0": data.clients["c0"], "p0": data.clients["v"]}, 3, ("a", "b"),
                              data.label_names, "tagged")
    with pytest.raises(ValueError, match=r"new client ids \['p0'\] clash"):
        partition_dataset(renamed, clash, "iid", 2)


def test_ragged_and_per_step_data_keep_lengths_and_labels():
    data, split = tagged_dataset([5, 6], ragged=True)
    new, new_split, _ = partition_dataset(data, split, "dirichlet:0.5", 3, seed=2)
    pooled = data.pooled(split.train)
    for cid in new_split.train:
        rows = new.clients[cid].x[:, 0, 0].astype(int)
        np.testing.assert_array_equal(new.clients[cid].steps, pooled.steps[rows])
    data, split = tagged_dataset([5, 6], per_step=True)
    pooled = data.pooled(split.train)
    labels = sequence_labels(pooled)
    for i in range(len(pooled)):
        counts = np.bincount(pooled.y[i], minlength=3)
        assert labels[i] == counts.argmax()
    new, new_split, record = partition_dataset(data, split, "pathological:1", 3, seed=0)
    assert sum(sum(h) for h in record["label_histogram"].values()) == pooled.y.size


@settings(max_examples=12, deadline=None)
@given(spec=st.sampled_from(SPECS), clients=st.integers(3, 7), seed=st.integers(0, 1000),
       mode=st.sampled_from(["all", "mean", "last"]))
def test_incfed_readout_does_not_depend_on_the_partition(spec, clients, seed, mode):
    data, split = tagged_dataset([7, 5, 8], seed=seed % 7, ragged=mode != "all")
    new, new_split, _ = partition_dataset(data, split, spec, clients, seed=seed)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=12, seed=seed % 5), n_inputs=2)
    state_spec = StateSpec(mode, washout=1 if mode == "all" else 0)
    # one sequence per reservoir batch: each sequence's float32 states are then the same bits
    # whichever client holds it, and only the float64 sums' order differs
    parts, natural = Harvester(new, state_spec, batch_size=1), Harvester(data, state_spec, batch_size=1)
    readout = fit_incfed([parts.stats(weights, c) for c in new_split.train], 1e-3)
    np.testing.assert_allclose(readout, fit_incfed([natural.stats(weights, c) for c in split.train], 1e-3),
                               rtol=1e-8, atol=1e-10)
    pooled = natural.stats_of(weights, data.pooled(split.train))
    np.testing.assert_allclose(readout, pooled.solve(1e-3), rtol=1e-8, atol=1e-10)
