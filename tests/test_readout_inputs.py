"""The readout on the input beside the state, rows ``[u, x]`` (``StateSpec.raw_inputs``, ``--raw-inputs``): the
harvest, the model, TensorFlow's statistics and IncFed agree, the ridge readout is scikit-learn's on explicitly
concatenated features, and the own-data selection chooses it (and the reservoir size) on validation."""

import dataclasses

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from closed_form_data import random_dataset
from tff_esn import resolve_run, run_algorithm
from tff_esn.closed_form.harvest import Harvester
from tff_esn.closed_form.selection import RESERVOIR_GRID, parse_switch
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.model import Member, Model, Readout
from tff_esn.esn.ridge import RidgeStats
from tff_esn.esn.states_numpy import states_and_statistics
from tff_esn.esn.weights import ReservoirWeights, StateSpec


def _ragged(seed: int, n_clients: int = 4) -> SequenceDataset:
    """Clients of unequal-length sequences (some shorter than the batch's longest)."""
    rng = np.random.default_rng(seed)
    data = random_dataset(n_clients=n_clients, steps=11, seed=seed)
    clients = {cid: ClientSequences(c.x, c.y, rng.integers(5, 12, size=len(c)))
               for cid, c in data.clients.items()}
    return SequenceDataset(clients, data.n_classes, data.feature_names, data.label_names, "ragged")


def _explicit(client: ClientSequences, weights: ReservoirWeights, mode: str, washout: int) -> np.ndarray:
    """``[u, x]`` read by hand, sequence by sequence: the reservoir's states alone (no inputs) beside the input's
    last step, its mean after the washout, or every step after it."""
    rows = []
    for i in range(len(client)):
        x = client.x[i:i + 1, :client.steps[i]]
        states, _ = states_and_statistics(x, weights.kernel, weights.recurrent, weights.bias, weights.gain,
                                          weights.leaky, keep="all", washout=washout)
        u = x[0, washout:].astype(np.float64)
        s = states[0].astype(np.float64)
        if mode == "last":
            rows.append(np.concatenate([x[0, -1], states_and_statistics(
                x, weights.kernel, weights.recurrent, weights.bias, weights.gain, weights.leaky, keep="last")[0][0]]))
        elif mode == "mean":
            rows.append(np.concatenate([u.mean(0), s.mean(0)]))
        else:
            rows.extend(np.concatenate([u, s], axis=1))
    return np.asarray(rows)


@pytest.mark.parametrize("mode", ["mean", "last", "all"])
def test_the_harvest_and_the_model_read_the_input_beside_the_state_as_by_hand(mode):
    data = _ragged(1) if mode != "all" else random_dataset(n_clients=2, steps=11, seed=1)  # per step: one length
    weights = ReservoirWeights.from_config(ReservoirConfig(units=9, leaky=0.5, seed=2), 3)
    spec = StateSpec(mode, 2 if mode != "last" else 0, True, raw_inputs=True)
    client = data.clients["c0"]
    expected = _explicit(client, weights, mode, spec.washout)
    harvested = Harvester(data, spec).features(weights, "c0")
    stored = harvested.states if mode != "all" else None
    model = Model((Member(weights, Readout("ridge", np.zeros((3, 13)))),), spec, data.task, data.feature_names,
                  data.label_names, per_step=mode == "all")
    states = model.states(client.x, client.steps)
    assert states.shape == (len(expected), 12)
    np.testing.assert_allclose(states, expected, rtol=1e-5, atol=1e-6)
    if stored is not None:
        np.testing.assert_array_equal(stored, states)  # the model's features are the harvest's, bit for bit
        stats = Harvester(data, spec).stats(weights, "c0")
        assert stats.n_features == 13
        np.testing.assert_allclose(stats.B[:-1, :-1], expected.T @ expected, rtol=1e-5, atol=1e-5)  # float32 sums


@pytest.mark.parametrize("mode", ["mean", "last", "all"])
def test_the_ridge_readout_with_inputs_is_scikit_learns_ridge_on_the_concatenated_features(mode):
    data = random_dataset(n_clients=4, steps=9, seed=3)
    split = Split("s", data.client_ids[:3], (), (data.client_ids[3],))
    l2 = 0.3
    record = run_algorithm(resolve_run("centralized", data, units=10, seed=4, state_mode=mode, raw_inputs=True,
                                       l2=l2), data, split)
    model = record.model
    weights = model.members[0].reservoir
    features, targets = [], []
    for cid in split.train:
        client = data.clients[cid]
        rows = _explicit(client, weights, mode, 0)
        features.append(rows)
        labels = np.repeat(client.y, client.x.shape[1]) if mode == "all" else client.y
        targets.append(np.eye(3)[labels])
    s = np.concatenate(features)
    reference = Ridge(alpha=l2, fit_intercept=False, solver="cholesky").fit(
        np.concatenate([s, np.ones((len(s), 1))], axis=1), np.concatenate(targets))
    assert model.members[0].readout.weights.shape == (3, 3 + 10 + 1)
    np.testing.assert_allclose(model.members[0].readout.weights, reference.coef_, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_incfed_with_inputs_beside_the_states_is_centralized_for_any_partition(seed):
    """Property: however the sequences are dealt to clients, the summed statistics of ``[u, x, 1]`` rows and the
    readout solved from them are the pooled ones."""
    rng = np.random.default_rng(seed)
    pooled = _ragged(seed, n_clients=1).clients["c0"]
    mode = ("mean", "last", "all")[seed % 3]
    spec = StateSpec(mode, 1 if mode != "last" else 0, True, raw_inputs=True)
    owner = rng.integers(0, int(rng.integers(2, 5)), size=len(pooled))
    clients = {f"p{k}": ClientSequences(pooled.x[owner == k], pooled.y[owner == k], pooled.steps[owner == k])
               for k in np.unique(owner)}
    weights = ReservoirWeights.from_config(ReservoirConfig(units=8, seed=seed), 3)
    whole = Harvester(SequenceDataset({"c0": pooled}, 3, ("a", "b", "c"), ("x", "y", "z"), "w"), spec)
    dealt = Harvester(SequenceDataset(clients, 3, ("a", "b", "c"), ("x", "y", "z"), "d"), spec)
    total = RidgeStats.sum([dealt.stats(weights, cid) for cid in clients])
    single = whole.stats(weights, "c0")
    assert total.n == single.n and total.B.shape == (12, 12)
    np.testing.assert_allclose(total.B, single.B, rtol=1e-5, atol=1e-5)  # float32 products, summed in float64
    np.testing.assert_allclose(total.A, single.A, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(total.solve(1e-2), single.solve(1e-2), rtol=1e-3, atol=1e-4)


def test_incfed_runs_equal_centralized_with_inputs_beside_the_states():
    data = _ragged(5, n_clients=6)
    split = Split("s", data.client_ids[:4], (data.client_ids[4],), (data.client_ids[5],))
    settings = dict(units=12, seed=1, raw_inputs=True, state_mode="mean", l2=1e-3)
    central = run_algorithm(resolve_run("centralized", data, **settings), data, split)
    incfed = run_algorithm(resolve_run("incfed", data, backend="numpy", **settings), data, split)
    np.testing.assert_allclose(incfed.model.members[0].readout.weights, central.model.members[0].readout.weights,
                               rtol=1e-8, atol=1e-10)
    assert incfed["extra"]["n_features"] == 3 + 12 + 1 and incfed["test"]["accuracy"] == central["test"]["accuracy"]


@pytest.mark.parametrize("mode", ["mean", "last", "all"])
def test_tensorflows_statistics_of_the_inputs_beside_the_states_are_numpys(mode):
    tf = pytest.importorskip("tensorflow")
    from tff_esn.esn import states_tf

    data = _ragged(7, n_clients=1)
    client = data.clients["c0"]
    weights = ReservoirWeights.from_config(ReservoirConfig(units=7, leaky=0.7, seed=3), 3)
    washout = 0 if mode == "last" else 2
    targets = np.eye(3)[client.y].astype(np.float32)
    w = weights
    states, summed = states_and_statistics(client.x, w.kernel, w.recurrent, w.bias, w.gain, w.leaky, keep=mode,
                                           washout=washout, lengths=client.steps, with_inputs=True,
                                           targets=targets if mode == "all" else None, products=np.dtype(np.float64))
    if mode == "all":  # summed in the pass, every step a row
        (numpy_stats,) = summed
    else:
        one_row = RidgeStats.from_states(states.astype(np.float64), targets, bias=True)
        numpy_stats = (one_row.A, one_row.B, one_row.n)
    a, b, n = states_tf.batch_statistics(client.x, tf.constant(targets), w.kernel, w.recurrent, w.bias, w.gain,
                                         w.leaky, mode, washout, True, lengths=client.steps.astype(np.int32),
                                         with_inputs=True)
    assert b.shape == (3 + 7 + 1, 3 + 7 + 1) and float(n) == numpy_stats[2]
    np.testing.assert_allclose(np.asarray(b), numpy_stats[1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(a), numpy_stats[0], rtol=1e-5, atol=1e-5)


def test_a_saved_model_keeps_its_inputs_beside_the_states(tmp_path):
    data = random_dataset(n_clients=4, steps=9, seed=6)
    split = Split("s", data.client_ids[:3], (), (data.client_ids[3],))
    model = run_algorithm(resolve_run("incfed", data, backend="numpy", units=10, state_mode="last",
                                      raw_inputs=True, l2=1e-2), data, split).model
    loaded = Model.load(model.save(tmp_path / "model"))
    assert loaded.spec == model.spec == StateSpec("last", 0, True, raw_inputs=True)
    assert dataclasses.asdict(loaded.spec)["raw_inputs"] is True
    test = data.clients[data.client_ids[3]]
    np.testing.assert_array_equal(loaded.decision_function(test.x), model.decision_function(test.x))
    without = StateSpec("last", 0, True)
    assert loaded.replace(spec=without).states(test.x).shape == (len(test), 10)


def test_own_data_defaults_choose_the_inputs_and_the_size_on_validation():
    data = random_dataset(n_clients=5, seed=5, sizes=[10] * 5)
    split = Split("own", data.client_ids[:4], (), (data.client_ids[4],))
    run = resolve_run("centralized", data, units=20, reservoir_search=("units",), state_mode="mean",
                      raw_inputs="auto", l2="auto", objective="balanced_accuracy")
    record = run_algorithm(run, data, split)
    table = record["selection"]["candidates"]
    assert [(c["raw_inputs"], c["units"]) for c in table[:2]] == [(False, 20), (True, 20)]
    assert {c["units"] for c in table[2:]} <= set(RESERVOIR_GRID["units"]) and table[2]["units"] == 100
    best = max(table, key=lambda c: c["score"])
    chosen = record["selection"]
    assert (chosen["raw_inputs"], chosen["units"]) == (best["raw_inputs"], best["units"])
    assert record.model.spec.raw_inputs is chosen["raw_inputs"]
    assert record.model.members[0].reservoir.units == chosen["units"]
    default = resolve_run("centralized", "ts:x/y").config
    assert default.raw_inputs == "auto" and "units" in default.reservoir_search
    seed = resolve_run("centralized", "synthetic-wesad").config
    assert seed.raw_inputs is False and seed.reservoir_search == ()


def test_the_flag_reads_true_false_and_auto_and_secure_sums_need_a_range():
    assert [parse_switch(t) for t in ("true", "False", "auto", "on", "no")] == [True, False, "auto", True, False]
    with pytest.raises(ValueError, match="expected true, false or auto"):
        parse_switch("maybe")
    with pytest.raises(ValueError, match="raw_inputs .* needs --secure-range"):
        resolve_run("incfed", "synthetic-wesad", raw_inputs=True, secure_aggregation=True)
    assert resolve_run("incfed", "synthetic-wesad", raw_inputs=True, secure_aggregation=True,
                       secure_range=1e4).config.raw_inputs is True


def test_dp_on_unclipped_statistics_refuses_the_inputs_and_incfed_clips_whole_rows_inside_tff():
    data = random_dataset(n_clients=5, steps=8, seed=9)
    with pytest.raises(ValueError, match="raw_inputs .* with DP: this algorithm's statistics are harvested unclipped"):
        resolve_run("pfedrr", data, raw_inputs=True, dp_epsilon=1.0)
    split = Split("s", data.client_ids[:3], (data.client_ids[3],), (data.client_ids[4],))
    record = run_algorithm(resolve_run("incfed", data, units=6, raw_inputs=True, state_mode="last", l2=1e-2,
                                       dp_noise_multiplier=0.0, dp_seed=1, dp_clip=0.5), data, split)
    assert record["privacy"]["clip"] == 0.5 and record["extra"]["n_features"] == 3 + 6 + 1
    rows = np.concatenate([record.model.states(data.clients[c].x) for c in split.train])
    clipped = np.concatenate([rows, np.ones((len(rows), 1))], axis=1)
    clipped *= np.minimum(1.0, 0.5 / np.linalg.norm(clipped, axis=1))[:, None]
    targets = np.concatenate([np.eye(3)[data.clients[c].y] for c in split.train])
    expected = (targets.T @ clipped) @ np.linalg.inv(clipped.T @ clipped + 1e-2 * np.eye(10))
    np.testing.assert_allclose(record.model.members[0].readout.weights, expected, atol=1e-5)  # zero noise
