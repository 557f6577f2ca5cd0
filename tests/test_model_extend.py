"""A closed-form model keeps its aggregate ridge statistics (``keep_stats``) and ``incfed --add-to`` extends it with
new clients: the model IncFed trains on all clients together (IncFed eqs. 8–10), refused in one line where the new
data or settings cannot extend it."""

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tff_esn import resolve_run, run_algorithm
from tff_esn.cli import main
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.model import Member, Model
from tff_esn.esn.ridge import RidgeStats
from tff_esn.esn.weights import ReservoirWeights

from closed_form_data import random_dataset, write_npz

FIXED = {"units": 8, "backend": "numpy", "reservoir_search": ()}


def _part(dataset: SequenceDataset, train, name: str) -> tuple[SequenceDataset, Split]:
    """``dataset``'s clients ``train`` for training and its last two clients for validation and test, as ``name``."""
    ids = dataset.client_ids
    keep = [*train, ids[-2], ids[-1]]
    return (dataclasses.replace(dataset, clients={c: dataset.clients[c] for c in keep}, source=name),
            Split("s", tuple(train), (ids[-2],), (ids[-1],)))


def _balanced(n_clients: int, seed: int, per_step: bool, steps: int = 8) -> SequenceDataset:
    """Clients of six sequences, two of each of three classes (any client set trains every class), the class
    shifting the inputs' mean; per-step labels repeat the sequence's."""
    rng = np.random.default_rng(seed)
    clients = {}
    for i in range(n_clients):
        y = rng.permutation(np.arange(6) % 3)
        x = rng.normal(size=(6, steps, 3)) + 0.5 * y[:, None, None]
        clients[f"c{i}"] = ClientSequences(x.astype(np.float32), np.repeat(y[:, None], steps, 1) if per_step else y)
    return SequenceDataset(clients, 3, ("f0", "f1", "f2"), ("k0", "k1", "k2"), "random")


def _readout(record) -> np.ndarray:
    return record.model.members[0].readout.weights


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_adding_clients_b_to_a_model_of_a_is_incfed_on_a_and_b(tmp_path_factory, data):
    n = data.draw(st.integers(4, 7), label="training clients")
    dataset = _balanced(n + 2, data.draw(st.integers(0, 99), label="data seed"),
                        data.draw(st.booleans(), label="per step"))
    ids = list(dataset.client_ids[:n])
    first = data.draw(st.sets(st.sampled_from(ids), min_size=1, max_size=n - 1), label="A")
    a, b = [c for c in ids if c in first], [c for c in ids if c not in first]
    modes = ["last", "all"] if dataset.clients[ids[0]].per_step else ["last", "mean", "all"]
    setting = {**FIXED, "state_mode": data.draw(st.sampled_from(modes), label="state mode"),
               "l2": data.draw(st.sampled_from([1e-4, 1e-2, 1.0]), label="λ"),
               "l2_per_client": data.draw(st.booleans(), label="λ per client"),
               "seed": data.draw(st.integers(0, 5), label="seed"),
               "raw_inputs": data.draw(st.booleans(), label="inputs beside the states")}
    data_a, split_a = _part(dataset, a, "A")
    data_b, split_b = _part(dataset, b, "B")
    data_ab, split_ab = _part(dataset, a + b, "A+B")
    folder = run_algorithm(resolve_run("incfed", data_a, keep_stats=True, **setting), data_a, split_a).model.save(
        tmp_path_factory.mktemp("extend") / "model")
    added = run_algorithm(resolve_run("incfed", data_b, add_to=str(folder), **{**setting, "l2": "auto"}),
                          data_b, split_b)
    whole = run_algorithm(resolve_run("incfed", data_ab, keep_stats=True, **setting), data_ab, split_ab)
    np.testing.assert_allclose(_readout(added), _readout(whole), rtol=1e-7, atol=1e-9)
    test = dataset.pooled(split_ab.test)
    np.testing.assert_allclose(added.model.decision_function(test.x), whole.model.decision_function(test.x),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(added.model.predict(test.x), whole.model.predict(test.x))
    kept, total = added.model.stats, whole.model.stats
    assert (kept.n, kept.clients) == (total.n, total.clients) and total.clients == len(ids)
    np.testing.assert_allclose(kept.B, total.B, rtol=1e-12)
    np.testing.assert_allclose(kept.A, total.A, rtol=1e-12, atol=1e-12)
    assert added["l2_selection"]["rule"] == "saved model" and added["l2_selection"]["l2"] == setting["l2"]
    assert added["extends"]["data"] == "A" and added.model.provenance["extends"]["clients"] == len(a)


def _npz(tmp_path, dataset: SequenceDataset, train, name: str):
    """``dataset``'s clients ``train`` (training) and its last two (validation, test) as the npz file ``name``."""
    part, split = _part(dataset, train, name)
    return write_npz(tmp_path / f"{name}.npz", part, ["train"] * len(train) + ["val", "test"])


def test_add_to_through_the_cli_equals_the_run_on_both_files(tmp_path, capsys):
    dataset = _balanced(7, 4, False)
    ids = list(dataset.client_ids[:5])
    a, b, both = (_npz(tmp_path, dataset, part, name) for part, name in ((ids[:2], "a"), (ids[2:], "b"),
                                                                         (ids, "ab")))
    fixed = ["--units", "8", "--l2", "1e-2", "--state-mode", "mean", "--leaky", "0.5", "--spectral-radius", "0.9",
             "--input-scaling", "1"]
    assert main(["run", "incfed", "--data", f"npz:{a}", "--out", str(tmp_path / "A"), "--keep-stats", *fixed]) == 0
    assert main(["run", "incfed", "--data", f"npz:{b}", "--out", str(tmp_path / "B"), "--units", "8",
                 "--add-to", str(tmp_path / "A")]) == 0
    assert main(["run", "incfed", "--data", f"npz:{both}", "--out", str(tmp_path / "AB"), *fixed]) == 0
    added, whole = Model.load(tmp_path / "B" / "model"), Model.load(tmp_path / "AB" / "model")
    # float32 states: BLAS rounds each harvest by its batch composition (the pooled file batches other rows)
    np.testing.assert_allclose(added.members[0].readout.weights, whole.members[0].readout.weights, rtol=1e-5,
                               atol=1e-7)
    record = json.loads((tmp_path / "B" / "metrics.json").read_text())
    assert record["extends"]["data"] == f"npz:{a}" and record["extends"]["clients"] == 2
    assert record["l2_selection"] == {"l2": 0.01, "rule": "saved model", "reason": record["l2_selection"]["reason"]}
    assert added.stats.clients == 5 and added.provenance["extends"]["config"]["leaky"]["value"] == 0.5
    test = dataset.pooled([dataset.client_ids[-1]])
    np.testing.assert_array_equal(added.predict(test.x), whole.predict(test.x))
    # the extended model extends again: its kept statistics are the sum
    assert main(["run", "incfed", "--data", f"npz:{a}", "--out", str(tmp_path / "C"), "--units", "8",
                 "--add-to", str(tmp_path / "B" / "model")]) == 0
    again = Model.load(tmp_path / "C" / "model")
    assert again.stats.clients == 7 and again.provenance["extends"]["extends"]["data"] == f"npz:{a}"


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    """A kept-statistics IncFed model of three clients and data of two other clients to add, its folder."""
    dataset = _balanced(7, 1, False)
    ids = dataset.client_ids
    data_a, split_a = _part(dataset, ids[:3], "A")
    record = run_algorithm(resolve_run("incfed", data_a, keep_stats=True, state_mode="last", l2=1e-2, **FIXED),
                           data_a, split_a)
    folder = record.model.save(tmp_path_factory.mktemp("saved") / "model")
    return dataset, _part(dataset, ids[3:5], "B"), folder


def _add(folder, data, split, **changes):
    return run_algorithm(resolve_run("incfed", data, add_to=str(folder), **{**FIXED, **changes}), data, split)


@pytest.mark.parametrize("changes,message", [
    ({"units": 9}, r"other settings than this run's; give --units 8 \(or drop the differing flags\)"),
    ({"seed": 4, "washout": 1}, r"give --seed 0 --washout 0"),
    ({"state_mode": "mean"}, r"give --state-mode last"),
    ({"l2_per_client": True}, r"give --l2-per-client False"),
])
def test_settings_other_than_the_saved_models_are_refused_in_one_line(saved_model, changes, message):
    _, (data, split), folder = saved_model
    with pytest.raises(ValueError, match=message) as err:
        _add(folder, data, split, **changes)
    assert "\n" not in str(err.value)


def _other(dataset: SequenceDataset, **changes) -> SequenceDataset:
    return dataclasses.replace(dataset, **changes)


@pytest.mark.parametrize("change,message", [
    (lambda d: _other(d, feature_names=("a", "b", "c")), r"features \['a', 'b', 'c'\], the saved model's are"),
    (lambda d: _other(d, label_names=("x", "y", "z")), r"labels \['x', 'y', 'z'\], the saved model's are"),
    (lambda d: _other(d, clients={c: ClientSequences(v.x[..., :2], v.y) for c, v in d.clients.items()},
                      feature_names=("f0", "f1")), "features"),
])
def test_data_the_saved_model_cannot_take_is_refused_in_one_line(saved_model, change, message):
    _, (data, split), folder = saved_model
    with pytest.raises(DataError, match=message) as err:
        _add(folder, change(data), split)
    assert "\n" not in str(err.value)


def test_a_model_without_kept_stats_or_with_other_reservoir_arrays_is_refused(saved_model, tmp_path):
    _, (data, split), folder = saved_model
    model = Model.load(folder)
    model.replace(stats=None).save(tmp_path / "plain")
    with pytest.raises(ValueError, match=r"kept no ridge statistics; train it with --keep-stats"):
        _add(tmp_path / "plain", data, split)
    member = model.members[0]
    altered = dataclasses.replace(member.reservoir, recurrent=member.reservoir.recurrent * 1.01)
    model.replace(members=(Member(altered, member.readout, member.size, member.config),)).save(tmp_path / "other")
    with pytest.raises(DataError, match=r"reservoir arrays differ from the ones this run draws"):
        _add(tmp_path / "other", data, split)
    with pytest.raises(ValueError, match=r"not a model folder"):
        _add(tmp_path / "missing", data, split)


def test_centralized_keeps_the_pooled_statistics_and_incfed_extends_them(saved_model, tmp_path):
    dataset, (data_b, split_b), _ = saved_model
    ids = dataset.client_ids
    data_a, split_a = _part(dataset, ids[:3], "A")
    setting = {"units": 8, "reservoir_search": (), "state_mode": "mean", "l2": 0.1}
    central = run_algorithm(resolve_run("centralized", data_a, keep_stats=True, **setting), data_a, split_a).model
    harvested = [RidgeStats.from_states(central.states(c.x), np.eye(3)[c.y], bias=True)
                 for c in data_a.select(split_a.train).values()]
    expected = RidgeStats.sum(harvested)
    loaded = Model.load(central.save(tmp_path / "model"))
    np.testing.assert_allclose(loaded.stats.B, expected.B, rtol=1e-5, atol=1e-7)  # float32 states, other batches
    np.testing.assert_allclose(loaded.stats.A, expected.A, rtol=1e-5, atol=1e-7)
    assert (loaded.stats.n, loaded.stats.clients) == (expected.n, 3)
    plain = run_algorithm(resolve_run("centralized", data_a, **setting), data_a, split_a).model
    assert plain.stats is None
    added = run_algorithm(resolve_run("incfed", data_b, add_to=str(tmp_path), backend="numpy", **setting),
                          data_b, split_b)
    assert added.model.stats.clients == 5 and added["extends"]["algorithm"] == "centralized"


def _floored_solve(stats: RidgeStats, floor: float, l2: float) -> np.ndarray:
    """``A (V max(Λ, floor) Vᵀ + λI)⁻¹``: the DP server's solve of released statistics (eigenvalue floor)."""
    values, vectors = np.linalg.eigh(stats.B)
    return np.linalg.solve((vectors * np.maximum(values, floor)) @ vectors.T + l2 * np.eye(len(values)), stats.A.T).T


def test_under_dp_the_model_keeps_the_released_statistics_and_extends_with_them(saved_model, tmp_path):
    dataset, (data_b, split_b), _ = saved_model
    data_a, split_a = _part(dataset, dataset.client_ids[:3], "A")
    dp = {"units": 8, "state_mode": "last", "l2": 0.1, "dp_noise_multiplier": 1.0, "dp_clip": 1.0, "dp_seed": 5}
    record = run_algorithm(resolve_run("incfed", data_a, keep_stats=True, **dp), data_a, split_a)
    kept = record.model.stats
    raw = RidgeStats.sum([RidgeStats.from_states(record.model.states(c.x), np.eye(3)[c.y], bias=True)
                          for c in data_a.select(split_a.train).values()])
    assert not np.allclose(kept.B, raw.B, atol=1e-3) and kept.n != raw.n  # noised: never the raw sums
    np.testing.assert_allclose(kept.B, kept.B.T)
    floor = record["privacy"]["psd"]["floor"]
    np.testing.assert_allclose(record.model.members[0].readout.weights, _floored_solve(kept, floor, 0.1),
                               rtol=1e-6, atol=1e-9)  # the readout is post-processing of what is kept
    assert "model.stats" in record["privacy"]["covered_outputs"] and "train" not in record.model.metrics
    folder = record.model.save(tmp_path / "model")
    added = run_algorithm(resolve_run("incfed", data_b, add_to=str(folder), **{**dp, "dp_seed": 6}),
                          data_b, split_b)
    total = added.model.stats
    assert total.clients == 5
    floor = added["privacy"]["psd"]["floor"]
    np.testing.assert_allclose(added.model.members[0].readout.weights, _floored_solve(total, floor, 0.1),
                               rtol=1e-6, atol=1e-9)
