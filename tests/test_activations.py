"""The units' nonlinearities (esnfed's activations, mixed per unit) and the links' signs, in both backends,
against a direct float64 loop of the state equation and esnfed's own draws."""

import json

import numpy as np
import pytest

from tff_esn.cli import main
from tff_esn.esn.draws import activations, recurrent_weights, spectral_radius
from tff_esn.esn.hyperparameters import ACTIVATIONS, ReservoirConfig
from tff_esn.esn.states_numpy import states_and_statistics
from tff_esn.esn.weights import ReservoirWeights

from closed_form_data import random_dataset, write_npz

FUNCTIONS = {"tanh": np.tanh, "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "sin": np.sin,
             "relu": lambda z: np.maximum(z, 0), "identity": lambda z: z}


def _loop(x: np.ndarray, w: ReservoirWeights) -> np.ndarray:
    """x(t) = (1 − a)·x(t−1) + a·f(u(t) W_in + x(t−1) Ŵ + b), each unit its own f, float64, one step at a time."""
    names = [w.activation] * w.units if isinstance(w.activation, str) else list(w.activation)
    a = np.asarray(w.leaky, np.float64)
    out = np.zeros(x.shape[:2] + (w.units,))
    for i, seq in enumerate(x.astype(np.float64)):
        state = np.zeros(w.units)
        for t, u in enumerate(seq):
            z = u @ w.kernel + state @ w.recurrent + w.bias
            state = (1 - a) * state + a * np.array([FUNCTIONS[n](z[j]) for j, n in enumerate(names)])
            out[i, t] = state
    return out


@pytest.mark.parametrize("activation", [*ACTIVATIONS, "mixed"])
def test_each_activation_in_both_backends_equals_the_equation(activation):
    from tff_esn.esn.layer import Reservoir
    from tff_esn.esn.states_tf import run_reservoir

    config = ReservoirConfig(units=15, spectral_radius=0.8, leaky=0.7, bias_scaling=0.3, seed=3, activation=activation,
                             activation_types=("tanh", "sin", "relu"))
    w = ReservoirWeights.from_config(config, 3)
    x = np.random.default_rng(1).normal(size=(3, 11, 3)).astype(np.float32)
    expected = _loop(x, w)
    states = states_and_statistics(x, *w.layer_weights(), w.leaky, keep="all", activation=w.activation)[0]
    np.testing.assert_allclose(states, expected, atol=1e-5)
    tf_states = run_reservoir(x, w.kernel, w.recurrent, w.bias, None, w.leaky, "all", activation=w.activation).numpy()
    np.testing.assert_allclose(tf_states, states, atol=1e-5)
    layer = Reservoir(config, state_mode="all")
    np.testing.assert_allclose(layer(x).numpy(), states, atol=1e-5)
    clone = Reservoir.from_config(layer.get_config())
    np.testing.assert_array_equal(clone(x).numpy(), layer(x).numpy())
    assert ReservoirWeights.from_layer(clone).key == w.key
    assert (w.key == ReservoirWeights.from_config(config.replace(activation="tanh"), 3).key) == (activation == "tanh")


def test_mixed_activations_are_esnfeds_draw_and_deep_layers_draw_their_own():
    from esnfed.topologies import mixed_activations

    config = ReservoirConfig(units=40, activation="mixed", seed=11)
    generator = np.random.default_rng(np.random.SeedSequence([11, 6]))
    assert activations(config) == tuple(mixed_activations(40, ("tanh", "sigmoid", "sin"), rng=generator))
    deep = ReservoirConfig(units=8, layers=2, layer_units=(8, 5), activation="mixed", seed=2)
    w = ReservoirWeights.from_config(deep, 2)
    assert w.activation == activations(deep.layer(0)) + activations(deep.layer(1)) and len(set(w.activation)) == 3
    x = np.random.default_rng(0).normal(size=(2, 6, 2)).astype(np.float32)
    layers = [deep.layer(i) for i in range(2)]  # the deep equations, each layer its own units' f
    w0, w1 = (ReservoirWeights.from_config(layer, n) for layer, n in zip(layers, (2, 8)))
    expected = np.zeros((2, 6, 13))
    for i, seq in enumerate(x.astype(np.float64)):
        s0, s1 = np.zeros(8), np.zeros(5)
        for t, u in enumerate(seq):
            z0, z1 = u @ w0.kernel + s0 @ w0.recurrent, None
            s0 = np.array([FUNCTIONS[n](z) for n, z in zip(w0.activation, z0)])
            z1 = s0 @ w1.kernel + s1 @ w1.recurrent
            s1 = np.array([FUNCTIONS[n](z) for n, z in zip(w1.activation, z1)])
            expected[i, t] = np.concatenate([s0, s1])
    from tff_esn.esn.states_tf import run_reservoir

    states = states_and_statistics(x, *w.layer_weights(), w.leaky, keep="all", layers=w.layers,
                                   activation=w.activation)[0]
    np.testing.assert_allclose(states, expected, atol=1e-5)
    tf_states = run_reservoir(x, w.kernel, w.recurrent, w.bias, None, w.leaky, "all", None, None, w.layers,
                              activation=w.activation).numpy()
    np.testing.assert_allclose(tf_states, states, atol=1e-5)


@pytest.mark.parametrize("topology", ["ring", "delay-line", "cycle-jumps"])
def test_random_link_signs_keep_the_graph_and_the_radius(topology):
    config = ReservoirConfig(units=20, topology=topology, spectral_radius=0.9, link_signs="random", seed=5)
    signed, positive = recurrent_weights(config), recurrent_weights(config.replace(link_signs="positive"))
    links = positive != 0
    np.testing.assert_array_equal(signed != 0, links)
    ratio = np.abs(signed[links]) / positive[links]  # one scale: the same magnitudes up to ρ's rescaling
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-6)
    assert (signed < 0).any() and (signed > 0).any()
    if topology != "delay-line":
        assert spectral_radius(signed) == pytest.approx(0.9, abs=1e-6)
    with pytest.raises(ValueError, match="link_signs"):
        ReservoirConfig(topology="small-world", link_signs="random")


def test_incfed_with_mixed_activations_gives_centralized_and_fedip_refuses_them(tmp_path, capsys):
    path = write_npz(tmp_path / "data.npz", random_dataset(n_clients=5, seed=9), ["train"] * 3 + ["val", "test"])
    flags = ["--units", "12", "--l2", "1e-2", "--washout", "1", "--activation", "mixed", "--activation-types",
             "sin,relu,sigmoid", "--topology", "ring", "--link-signs", "random"]
    records = {}
    for name, backend in (("centralized", []), ("incfed", ["--backend", "tff"])):  # numpy harvest / TFF client
        assert main(["run", name, "--data", f"npz:{path}", "--out", str(tmp_path / name), *flags, *backend]) == 0
        records[name] = json.loads((tmp_path / name / "metrics.json").read_text())
    assert records["incfed"]["config"]["activation_types"]["value"] == ["sin", "relu", "sigmoid"]
    assert records["incfed"]["extra"]["backend"] == "tff"
    for group in ("train", "val", "test"):
        assert records["centralized"][group] == records["incfed"][group]
    capsys.readouterr()
    assert main(["run", "fedip", "--data", f"npz:{path}", "--out", str(tmp_path / "ip"), "--activation", "sin"]) == 2
    assert "derived for tanh units" in capsys.readouterr().err


def test_faithful_states_refuse_per_unit_draws_of_the_clients_own_reservoirs():
    from tff_esn.federated.configs import FedAvgConfig, ThesisModelConfig

    for changes in ({"activation": "mixed"}, {"leak_distribution": "uniform", "leaky": 0.9}):
        model = ThesisModelConfig(reservoir=ReservoirConfig(**changes))
        with pytest.raises(ValueError, match="use --states cached"):
            FedAvgConfig(out="o", model=model, states="faithful", reservoirs="different")
        FedAvgConfig(out="o", model=model, states="cached", reservoirs="different")
        FedAvgConfig(out="o", model=model, states="faithful", reservoirs="same")
