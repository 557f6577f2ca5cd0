"""The deep ESN (a stack of reservoirs, each driven by the one below) against a plain numpy loop of
its equations, across backends, and federated exactly: IncFed(deep) = centralized(deep)."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tff_esn.cli import main
from tff_esn.closed_form.harvest import Harvester
from tff_esn.closed_form.incfed import federate_tff, fit_incfed
from tff_esn.esn.draws import bias_weights, input_weights, leak_rates, recurrent_weights, spectral_radius
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.ridge import RidgeStats, one_hot
from tff_esn.esn.states_numpy import states_and_statistics
from tff_esn.esn.weights import ReservoirWeights, StateSpec

from closed_form_data import random_dataset, write_npz

DEEP = ReservoirConfig(units=12, layers=3, layer_units=(12, 8, 5), layer_spectral_radius=(0.9, 0.7, 0.5),
                       layer_leaky=(1.0, 0.6, 0.3), layer_input_scaling=(1.0, 0.5, 0.8), bias_scaling=0.1, seed=4)


def _reference_states(x: np.ndarray, config: ReservoirConfig) -> np.ndarray:
    """Gallicchio & Micheli's deepESN as a plain float64 loop over sequences, steps and layers, each
    layer's weights drawn on its own from its single-layer config."""
    layers = [config.layer(i) for i in range(config.layers)]
    fan_in = [x.shape[2]] + [layer.units for layer in layers[:-1]]
    params = [(input_weights(layer, n), recurrent_weights(layer), bias_weights(layer), np.asarray(leak_rates(layer)))
              for layer, n in zip(layers, fan_in)]
    out = np.zeros(x.shape[:2] + (sum(layer.units for layer in layers),))
    for i, seq in enumerate(x.astype(np.float64)):
        states = [np.zeros(layer.units) for layer in layers]
        for t, u in enumerate(seq):
            below = u
            for l, (w_in, w, b, a) in enumerate(params):
                states[l] = (1 - a) * states[l] + a * np.tanh(below @ w_in + states[l] @ w + b)
                below = states[l]
            out[i, t] = np.concatenate(states)
    return out


def test_layers_follow_their_settings_and_the_first_is_the_single_reservoir():
    layers = [DEEP.layer(i) for i in range(3)]
    assert [(c.units, c.spectral_radius, c.leaky, c.input_scaling) for c in layers] == [
        (12, 0.9, 1.0, 1.0), (8, 0.7, 0.6, 0.5), (5, 0.5, 0.3, 0.8)]
    assert layers[0].seed == DEEP.seed and len({c.seed for c in layers}) == 3
    w = ReservoirWeights.from_config(DEEP, 3)
    assert w.layers == (12, 8, 5) and w.units == DEEP.total_units == 25
    single = ReservoirWeights.from_config(DEEP.replace(layers=1, layer_units=(), layer_spectral_radius=(),
                                                       layer_leaky=(), layer_input_scaling=()), 3)
    np.testing.assert_array_equal(w.recurrent[:12, :12], single.recurrent)
    np.testing.assert_array_equal(w.kernel[:, :12], single.kernel)
    for (start, stop), rho in zip([(0, 12), (12, 20), (20, 25)], (0.9, 0.7, 0.5)):
        assert spectral_radius(w.recurrent[start:stop, start:stop]) == pytest.approx(rho, abs=1e-6)
    # block upper-triangular: the eigenvalues of the whole are the layers' own
    assert spectral_radius(w.recurrent) == pytest.approx(0.9, abs=1e-6)
    with pytest.raises(ValueError, match="one value per layer"):
        ReservoirConfig(layers=2, layer_units=(3, 4, 5))
    with pytest.raises(ValueError, match="one value per layer"):
        ReservoirConfig(layer_units=(30,))
    with pytest.raises(ValueError, match=r"layer 1 of 2 .*leaky"):
        ReservoirConfig(layers=2, layer_leaky=(1.5, 0.5))


@pytest.mark.parametrize("lengths", [None, [9, 4, 6]])
def test_deep_states_equal_a_plain_loop_in_both_backends(lengths):
    from tff_esn.esn.states_tf import run_reservoir

    w = ReservoirWeights.from_config(DEEP, 3)
    x = np.random.default_rng(2).normal(size=(3, 9, 3)).astype(np.float32)
    reference = _reference_states(x, DEEP)
    states = states_and_statistics(x, *w.layer_weights(), w.leaky, keep="all", layers=w.layers, lengths=lengths)[0]
    tf_states = run_reservoir(x, w.kernel, w.recurrent, w.bias, None, w.leaky, "all", 0, lengths, w.layers).numpy()
    for i, n in enumerate(lengths or [9] * 3):
        np.testing.assert_allclose(states[i, :n], reference[i, :n], atol=3e-6)
        np.testing.assert_allclose(tf_states[i, :n], states[i, :n], atol=1e-6)
    last = states_and_statistics(x, *w.layer_weights(), w.leaky, keep="last", layers=w.layers, lengths=lengths)[0]
    np.testing.assert_allclose(last, reference[np.arange(3), np.array(lengths or [9] * 3) - 1], atol=3e-6)


def test_keras_layer_round_trips_a_deep_esn():
    from tff_esn.esn.layer import Reservoir

    layer = Reservoir(DEEP, state_mode="all")
    x = np.random.default_rng(3).normal(size=(2, 6, 3)).astype(np.float32)
    out = layer(x).numpy()
    np.testing.assert_allclose(out, _reference_states(x, DEEP), atol=3e-6)
    np.testing.assert_array_equal(Reservoir.from_config(layer.get_config())(x).numpy(), out)
    assert ReservoirWeights.from_layer(layer).key == ReservoirWeights.from_config(DEEP, 3).key


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_clients=st.integers(1, 8))
def test_incfed_of_a_deep_esn_equals_centralized_over_random_partitions(seed, n_clients):
    """Every layer's states enter the additive statistics: the sum over any partition of the
    sequences into clients, in any order, solves to the pooled readout."""
    data = random_dataset(n_clients=4, seed=5)
    pooled = data.pooled(data.client_ids)
    weights = ReservoirWeights.from_config(DEEP, 3)
    states = states_and_statistics(pooled.x, *weights.layer_weights(), weights.leaky, keep="all", washout=1,
                                   layers=weights.layers)[0].astype(np.float64)
    targets = np.repeat(one_hot(pooled.y, 3)[:, None], states.shape[1], 1)
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, len(pooled)), size=n_clients - 1, replace=False))
    clients = np.split(rng.permutation(len(pooled)), cuts)
    rng.shuffle(clients)
    parts = [RidgeStats.from_states(states[c].reshape(-1, 25), targets[c].reshape(-1, 3), bias=True) for c in clients]
    central = RidgeStats.from_states(states.reshape(-1, 25), targets.reshape(-1, 3), bias=True)
    np.testing.assert_allclose(fit_incfed(parts, 1e-2), central.solve(1e-2), rtol=1e-8, atol=1e-10)


@pytest.mark.slow
def test_tff_incfed_client_harvests_a_deep_esn():
    data = random_dataset(n_clients=3, seed=1)
    weights = ReservoirWeights.from_config(DEEP, 3)
    spec = StateSpec("all", 1)
    readout = federate_tff(weights, list(data.clients.values()), 3, spec, 1e-2).readout
    central = Harvester(data, spec).stats_of(weights, data.pooled(data.client_ids)).solve(1e-2)
    np.testing.assert_allclose(readout, central, atol=1e-4 * np.abs(central).max())


@pytest.mark.parametrize("readout,n_features", [([], 31), (["--layer-units", "10,8,6", "--readout-layers", "last"], 7)])
def test_run_incfed_with_three_layers_gives_centralized_predictions(tmp_path, readout, n_features):
    path = write_npz(tmp_path / "data.npz", random_dataset(n_clients=5, seed=9), ["train"] * 3 + ["val", "test"])
    flags = ["--units", "10", "--l2", "1e-2", "--washout", "1", "--layers", "3", "--layer-leaky", "1,0.5,0.3",
             "--topology", "ring", *readout]
    records = {}
    for name in ("centralized", "incfed"):
        assert main(["run", name, "--data", f"npz:{path}", "--out", str(tmp_path / name), *flags]) == 0
        records[name] = json.loads((tmp_path / name / "metrics.json").read_text())
    assert records["incfed"]["config"]["layers"]["value"] == 3 and records["incfed"]["extra"]["n_features"] == n_features
    for group in ("train", "val", "test"):
        assert records["centralized"][group] == records["incfed"][group]


def test_fedip_adapts_every_layers_gains(tmp_path):
    from tff_esn.closed_form.fedip import IPConfig, fedip_numpy

    data = random_dataset(n_clients=2, seed=2)
    weights = ReservoirWeights.from_config(DEEP, 3)
    adapted = fedip_numpy(weights, list(data.clients.values()), IPConfig(epochs=1), rounds=1)
    for start, stop in [(0, 12), (12, 20), (20, 25)]:
        assert np.all(adapted.gain[start:stop] != 1)
    assert adapted.layers == weights.layers


def test_alignment_of_deep_reservoirs_keeps_the_layers_and_each_layers_radius():
    from tff_esn.closed_form.heterogeneous import align
    from tff_esn.esn.hyperparameters import client_reservoir

    config = DEEP.replace(leak_distribution="uniform", leaky=0.9, layer_leaky=())
    own, target = (ReservoirWeights.from_config(c, 3) for c in (client_reservoir(config, 0), config))
    assert own.leaky != target.leaky
    half = align(own, target, 0.5, rescale=True)
    assert half.layers == (12, 8, 5)
    np.testing.assert_allclose(half.leaky, (np.array(own.leaky) + np.array(target.leaky)) / 2, rtol=1e-6)
    for (start, stop), rho in zip([(0, 12), (12, 20), (20, 25)], (0.9, 0.7, 0.5)):
        assert spectral_radius(half.recurrent[start:stop, start:stop]) == pytest.approx(rho, abs=1e-5)
    np.testing.assert_allclose(np.linalg.norm(half.recurrent[:12, 12:20]), np.linalg.norm(target.recurrent[:12, 12:20]),
                               rtol=1e-5)
    assert align(own, target, 1.0).key == target.key
    with pytest.raises(ValueError, match="layers"):
        align(own, ReservoirWeights.from_config(DEEP.replace(layers=1, units=25, layer_units=(), layer_spectral_radius=(),
                                                             layer_leaky=(), layer_input_scaling=()), 3), 0.5)


LAST = DEEP.replace(readout_layers="last")


def _sklearn_readout(states: np.ndarray, labels: np.ndarray, l2: float) -> np.ndarray:
    """scikit-learn's ridge on the states with a constant-1 column (the readout bias, penalised as ours)."""
    from sklearn.linear_model import Ridge

    features = np.concatenate([states, np.ones((len(states), 1))], 1)
    return Ridge(alpha=l2, fit_intercept=False, solver="cholesky").fit(features, one_hot(labels, 3)).coef_


def test_last_layer_readout_sees_the_last_layers_states_in_both_backends():
    from tff_esn.esn.layer import Reservoir
    from tff_esn.esn.states_tf import run_reservoir

    w = ReservoirWeights.from_config(LAST, 3)
    assert (LAST.readout_from, LAST.readout_units, w.readout_from, w.readout_units) == (20, 5, 20, 5)
    assert w.key != ReservoirWeights.from_config(DEEP, 3).key and DEEP.readout_units == 25
    assert LAST.replace(layers=1, layer_units=(), layer_spectral_radius=(), layer_leaky=(),
                        layer_input_scaling=()).readout_units == 12
    x = np.random.default_rng(6).normal(size=(3, 9, 3)).astype(np.float32)
    reference = _reference_states(x, DEEP)[..., 20:]
    for keep in ("all", "last", "mean"):
        expected = {"all": reference, "last": reference[:, -1], "mean": reference[:, 2:].mean(1)}[keep]
        washout = 2 if keep == "mean" else 0
        states = states_and_statistics(x, *w.layer_weights(), w.leaky, keep=keep, washout=washout, layers=w.layers,
                                       readout_from=w.readout_from)[0]
        tf_states = run_reservoir(x, w.kernel, w.recurrent, w.bias, None, w.leaky, keep, washout, None, w.layers,
                                  w.readout_from).numpy()
        np.testing.assert_allclose(states, expected, atol=3e-6)
        np.testing.assert_allclose(tf_states, states, atol=1e-6)
    layer = Reservoir(LAST, state_mode="all")
    np.testing.assert_allclose(layer(x).numpy(), reference, atol=3e-6)
    assert layer.compute_output_shape((None, 9, 3)).as_list() == [None, 9, 5]
    clone = Reservoir.from_config(layer.get_config())
    np.testing.assert_array_equal(clone(x).numpy(), layer(x).numpy())
    assert ReservoirWeights.from_layer(clone).key == w.key
    with pytest.raises(ValueError, match="readout_layers"):
        ReservoirConfig(readout_layers="first")


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n_clients=st.integers(1, 8))
def test_incfed_of_a_last_layer_readout_equals_sklearn_on_the_last_layers_states(seed, n_clients):
    """The harvest's per-client statistics of the last layer, summed over a random partition, solve to
    scikit-learn's ridge on the last layer's states of the plain loop."""
    data = random_dataset(n_clients=4, seed=5)
    pooled = data.pooled(data.client_ids)
    w = ReservoirWeights.from_config(LAST, 3)
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_clients, len(pooled))
    _, parts = states_and_statistics(pooled.x, *w.layer_weights(), w.leaky, keep="last", washout=1, layers=w.layers,
                                     readout_from=w.readout_from, targets=one_hot(pooled.y, 3).astype(np.float32),
                                     groups=groups, n_groups=n_clients, products=np.dtype(np.float64))
    stats = [RidgeStats(a, b, n, 1, True) for a, b, n in parts if n]
    states = _reference_states(pooled.x, DEEP)[:, 1:, 20:]  # every step after the washout is a sample
    reference = _sklearn_readout(states.reshape(-1, 5), np.repeat(pooled.y, states.shape[1]), 1e-2)
    np.testing.assert_allclose(fit_incfed(stats, 1e-2), reference, atol=1e-5)


@pytest.mark.slow
def test_tff_incfed_client_reads_out_the_last_layer():
    data = random_dataset(n_clients=3, seed=1)
    weights = ReservoirWeights.from_config(LAST, 3)
    pooled = data.pooled(data.client_ids)
    readout = federate_tff(weights, list(data.clients.values()), 3, StateSpec("last"), 1e-2).readout
    reference = _sklearn_readout(_reference_states(pooled.x, DEEP)[:, -1, 20:], pooled.y, 1e-2)
    assert readout.shape == (3, 6)
    np.testing.assert_allclose(readout, reference, atol=1e-4 * np.abs(reference).max())


def test_fedavg_model_trains_a_readout_of_the_last_layer():
    from tff_esn.federated.clients import reservoir_states
    from tff_esn.federated.configs import ThesisModelConfig
    from tff_esn.federated.model import build_thesis_model

    config = ThesisModelConfig(reservoir=LAST, state_mode="last", class_weight=(1.0, 1.0, 1.0))
    x = np.random.default_rng(8).normal(size=(4, 7, 3)).astype(np.float32)
    reference = _reference_states(x, DEEP)[:, -1, 20:]
    np.testing.assert_allclose(reservoir_states(x, LAST, config), reference, atol=3e-6)
    np.testing.assert_allclose(reservoir_states(x, LAST, config, lengths=np.array([7, 7, 7, 7])), reference, atol=3e-6)
    faithful, cached = build_thesis_model(3, config), build_thesis_model(5, config, readout_only=True)
    assert [w.shape for w in faithful.trainable_weights] == [w.shape for w in cached.trainable_weights] == [(5, 3), (3,)]
    cached.set_weights(faithful.trainable_weights)
    np.testing.assert_allclose(faithful(x).numpy(), cached(reference.astype(np.float32)).numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="5"):
        build_thesis_model(25, config, readout_only=True)
