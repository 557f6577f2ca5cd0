"""Reservoir layer: equal to tfa.layers.ESN with the same weights, spectral radius, modes, config."""

import numpy as np
import pytest
import tensorflow as tf

from tff_esn import Reservoir, ReservoirConfig, connectivity_from_count, spectral_radius
from tff_esn.esn.draws import input_weights, recurrent_weights

tfa = pytest.importorskip("tensorflow_addons")


def _tfa_reference(units, leaky, x, seed):
    tf.keras.utils.set_random_seed(seed)  # tfa's sparsity mask is unseeded otherwise
    esn = tfa.layers.ESN(units, connectivity=0.3, leaky=leaky, spectral_radius=0.9,
                         use_bias=True, bias_initializer="glorot_uniform", return_sequences=True)
    out = esn(x).numpy()
    cell = esn.cell
    return out, [cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy()]


@pytest.mark.parametrize("batch,steps,features,units,leaky", [
    (1, 5, 1, 8, 1.0), (4, 40, 3, 30, 0.3), (7, 25, 8, 64, 0.75), (2, 120, 2, 16, 0.1),
])
def test_matches_tfa_esn_with_same_weights(batch, steps, features, units, leaky):
    x = np.random.default_rng(batch + steps).normal(size=(batch, steps, features)).astype(np.float32)
    ref, weights = _tfa_reference(units, leaky, x, seed=steps)
    ours = Reservoir(ReservoirConfig(units=units, leaky=leaky), state_mode="all")
    ours.build(x.shape)
    ours.set_weights(weights)
    got = ours(x).numpy()
    assert got.shape == ref.shape == (batch, steps, units)
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    last = Reservoir(ReservoirConfig(units=units, leaky=leaky))
    last.build(x.shape)
    last.set_weights(weights)
    np.testing.assert_allclose(last(x).numpy(), ref[:, -1], atol=1e-5, rtol=0)


def test_inside_a_functional_model_equals_eager():
    x = np.random.default_rng(0).normal(size=(3, 20, 2)).astype(np.float32)
    layer = Reservoir(units=12, leaky=0.5, seed=4)
    inp = tf.keras.Input((None, 2))
    model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(layer(inp)))
    eager = layer(x).numpy()
    feat = tf.keras.Model(inp, layer(inp))
    np.testing.assert_allclose(feat.predict(x, verbose=0), eager, atol=1e-6)
    assert model(x).shape == (3, 1)


@pytest.mark.parametrize("units,sr,conn", [(10, 0.5, 1.0), (50, 0.9, 0.1), (200, 1.2, 0.05), (100, 0.99, 0.5)])
def test_spectral_radius_is_the_eigenvalue_radius(units, sr, conn):
    w = recurrent_weights(ReservoirConfig(units=units, spectral_radius=sr, recurrent_connectivity=conn, seed=1))
    assert abs(spectral_radius(w) - sr) < 1e-4


def test_connectivity_gives_exact_counts_per_unit():
    cfg = ReservoirConfig(units=40, input_connectivity=connectivity_from_count(3, 8),
                          recurrent_connectivity=connectivity_from_count(5, 40), seed=2)
    w_in = input_weights(cfg, 8)
    w = recurrent_weights(cfg)
    assert (np.count_nonzero(w_in, axis=0) == 3).all()
    assert (np.count_nonzero(w, axis=0) == 5).all()
    assert np.abs(w_in).max() <= cfg.input_scaling


def test_seeded_and_independent_of_input_size():
    a = Reservoir(units=16, seed=7)
    b = Reservoir(units=16, seed=7)
    c = Reservoir(units=16, seed=8)
    x = np.ones((1, 5, 3), np.float32)
    a(x), b(x), c(x)
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())
    assert not np.allclose(a.recurrent_kernel.numpy(), c.recurrent_kernel.numpy())
    d = Reservoir(units=16, seed=7)
    d(np.ones((1, 5, 6), np.float32))
    np.testing.assert_array_equal(a.recurrent_kernel.numpy(), d.recurrent_kernel.numpy())


def test_mean_mode_and_washout():
    x = np.random.default_rng(1).normal(size=(3, 30, 2)).astype(np.float32)
    cfg = ReservoirConfig(units=10, leaky=0.6, seed=3)
    all_states = Reservoir(cfg, return_sequences=True)(x).numpy()
    mean = Reservoir(cfg, state_mode="mean", washout=10)(x).numpy()
    np.testing.assert_allclose(mean, all_states[:, 10:].mean(axis=1), atol=1e-6)
    washed = Reservoir(cfg, state_mode="all", washout=10)(x).numpy()
    np.testing.assert_array_equal(washed, all_states[:, 10:])
    with pytest.raises(ValueError, match="washout"):
        Reservoir(cfg, state_mode="mean", washout=30)(x)


def test_gain_and_bias_enter_inside_tanh():
    x = np.random.default_rng(2).normal(size=(2, 6, 1)).astype(np.float32)
    layer = Reservoir(units=5, leaky=0.4, seed=1, use_gain=True, return_sequences=True)
    layer.build(x.shape)
    k, r, _, _ = layer.get_weights()
    g = np.linspace(0.5, 1.5, 5).astype(np.float32)
    b = np.linspace(-0.2, 0.2, 5).astype(np.float32)
    layer.set_weights([k, r, b, g])
    state = np.zeros((2, 5))
    expected = []
    for t in range(6):
        state = 0.6 * state + 0.4 * np.tanh(g * (x[:, t] @ k + state @ r) + b)
        expected.append(state)
    np.testing.assert_allclose(layer(x).numpy(), np.stack(expected, 1), atol=1e-6)


def test_model_save_load_round_trip(tmp_path):
    x = np.random.default_rng(3).normal(size=(2, 15, 3)).astype(np.float32)
    inp = tf.keras.Input((15, 3))
    out = tf.keras.layers.Dense(1, activation="sigmoid")(
        Reservoir(units=20, leaky=0.8, spectral_radius=0.7, input_connectivity=0.5,
                  recurrent_connectivity=0.2, bias_scaling=0.1, seed=5, state_mode="mean", washout=2)(inp))
    model = tf.keras.Model(inp, out)
    before = model.predict(x, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), before)
    layer = loaded.layers[1]
    assert isinstance(layer, Reservoir) and layer.reservoir_config.seed == 5 and layer.washout == 2
    clone = Reservoir.from_config(model.layers[1].get_config())
    assert clone.reservoir_config == model.layers[1].reservoir_config


@pytest.mark.parametrize("kwargs,match", [
    (dict(units=-3), "units"), (dict(units=0), "units"), (dict(spectral_radius=0.0), "spectral_radius"),
    (dict(spectral_radius=-1.0), "spectral_radius"), (dict(leaky=0.0), "leaky"), (dict(leaky=1.5), "leaky"),
    (dict(input_connectivity=0.0), "input_connectivity"), (dict(recurrent_connectivity=1.2), "recurrent_connectivity"),
    (dict(input_scaling=float("nan")), "input_scaling"), (dict(bias_scaling=-0.1), "bias_scaling"),
    (dict(seed=-1), "seed"), (dict(units=2.5), "units"),
])
def test_bad_config_is_rejected_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ReservoirConfig(**kwargs)


def test_bad_inputs_are_rejected():
    layer = Reservoir(units=4)
    with pytest.raises(ValueError, match="3-D"):
        layer(np.zeros((5, 2), np.float32))
    bad = np.zeros((1, 5, 2), np.float32)
    bad[0, 2, 1] = np.nan
    with pytest.raises(tf.errors.InvalidArgumentError, match="NaN"):
        Reservoir(units=4)(bad)
    with pytest.raises(ValueError, match="state_mode"):
        Reservoir(units=4, state_mode="first")
    with pytest.raises(ValueError, match="not both"):
        Reservoir(ReservoirConfig(units=3), units=4)
    with pytest.raises(ValueError, match="unknown field"):
        ReservoirConfig.from_dict({"units": 3, "radius": 0.9})


def _numpy_states(layer, x):
    k, r, b = (w.numpy() for w in (layer.kernel, layer.recurrent_kernel, layer.bias))
    s, out = np.zeros((x.shape[0], k.shape[1])), []
    for t in range(x.shape[1]):
        s = (1 - layer.leaky) * s + layer.leaky * np.tanh(x[:, t] @ k + s @ r + b)
        out.append(s)
    return np.stack(out, 1)


def test_regression_many_layers_never_share_a_trace():
    """Regression: a relaxed tf.function trace once kept an earlier layer's variables."""
    x = np.random.default_rng(5).normal(size=(6, 10, 2)).astype(np.float32)
    for units, seed in [(16, 1), (8, 1), (12, 2), (8, 3), (16, 4), (5, 5), (8, 6)]:
        for mode in ("last", "all", "mean"):
            layer = Reservoir(units=units, seed=seed, leaky=0.7, state_mode=mode)
            got = layer(x).numpy()
            ref = _numpy_states(layer, x)
            expected = {"last": ref[:, -1], "all": ref, "mean": ref.mean(1)}[mode]
            np.testing.assert_allclose(got, expected, atol=1e-5, err_msg=f"units={units} seed={seed} {mode}")
