"""Intrinsic plasticity: the update rule is the analytic KL gradient; IP moves activations to N(μ, σ²)."""

import numpy as np
import pytest
import tensorflow as tf

from tff_esn.data.sequences import ClientSequences
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.weights import ReservoirWeights
from tff_esn.closed_form import fedip
from tff_esn.closed_form.configs import FedIPConfig
from tff_esn.closed_form.fedip import IPConfig, fedip_numpy, intrinsic_plasticity, ip_updates
from tff_esn.esn.layer import Reservoir
from tff_esn.esn.states_tf import run_reservoir

from closed_form_data import random_dataset


def ip_loss(net, gain, bias, mu: float, sigma: float):
    """Per-sample KL objective of IP, ``−log g − log(1 − x̃²) + (x̃ − μ)²/(2σ²)`` (constant dropped):
    the reference whose gradient the library's update rule must be."""
    y = tf.tanh(gain * net + bias)
    return -tf.math.log(gain) - tf.math.log(1.0 - y * y) + tf.square(y - mu) / (2.0 * sigma * sigma)


@pytest.mark.parametrize("mu,sigma", [(0.0, 0.1), (0.2, 0.3), (-0.1, 0.05)])
def test_ip_rule_is_minus_eta_times_the_kl_gradient(mu, sigma):
    rng = np.random.default_rng(0)
    net = tf.constant(rng.normal(size=(50, 7)), tf.float64)
    gain = tf.Variable(rng.uniform(0.5, 1.5, 7))
    bias = tf.Variable(rng.normal(scale=0.2, size=7))
    eta = 0.01
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(ip_loss(net, gain, bias, mu, sigma))
    grad_g, grad_b = tape.gradient(loss, [gain, bias])
    y = tf.tanh(gain * net + bias)
    dg, db = ip_updates(net, y, gain, mu, sigma, eta)
    np.testing.assert_allclose(tf.reduce_sum(db, 0), -eta * grad_b, rtol=1e-10)
    # Δg sums η/g once per sample: compare the per-sample sum with −η ∂L/∂g.
    np.testing.assert_allclose(tf.reduce_sum(dg, 0), -eta * grad_g, rtol=1e-10)


def test_ip_moves_activation_statistics_toward_the_target():
    data = random_dataset(n_clients=1, steps=40, seed=2, sizes=[16])
    client = data.clients["c0"]
    weights = ReservoirWeights.from_config(ReservoirConfig(units=20, seed=3, spectral_radius=0.9), 3)
    cfg = IPConfig(mu=0.0, sigma=0.1, eta=1e-3, epochs=3, batch_size=4)
    adapted = intrinsic_plasticity(weights, client, cfg)

    def unit_stats(w):
        states = run_reservoir(client.x, w.kernel, w.recurrent, w.bias, w.gain, 1.0, "all", 5).numpy()
        states = states.reshape(-1, w.units)
        return states.std(0).mean(), np.abs(states.mean(0)).mean()

    (std_before, mean_before), (std_after, mean_after) = unit_stats(weights), unit_stats(adapted)
    assert std_before > 0.5 and abs(std_after - 0.1) < 0.01  # per-unit std reaches σ
    assert mean_after < 0.02 < mean_before  # and the per-unit mean μ = 0


def test_ip_is_seeded_and_validates():
    data = random_dataset(n_clients=2, seed=3)
    w = ReservoirWeights.from_config(ReservoirConfig(units=6, seed=1), 3)
    cfg = IPConfig(eta=0.02, epochs=2)
    a = fedip_numpy(w, list(data.clients.values()), cfg, 2)
    fedip._ADAPTED.clear()  # computed again, not served from intrinsic_plasticity's kept results
    b = fedip_numpy(w, list(data.clients.values()), cfg, 2)
    np.testing.assert_array_equal(a.gain, b.gain)
    for field, value in [("sigma", 0.0), ("eta", -1.0), ("epochs", 0), ("batch_size", 0)]:
        with pytest.raises(ValueError, match=field):
            IPConfig(**{field: value})
    with pytest.raises(ValueError, match="rounds"):
        FedIPConfig(rounds=-1)


def test_a_use_gain_layer_holds_the_ip_adapted_gain_and_bias():
    data = random_dataset(n_clients=1, seed=4)
    client = data.clients["c0"]
    layer = Reservoir(ReservoirConfig(units=6, seed=2), state_mode="last", use_gain=True)
    layer(client.x)
    expected = intrinsic_plasticity(ReservoirWeights.from_layer(layer), client, IPConfig(eta=1e-3, epochs=2))
    layer.gain.assign(expected.gain)
    layer.bias.assign(expected.bias)
    np.testing.assert_allclose(layer(client.x).numpy(), run_reservoir(
        client.x, expected.kernel, expected.recurrent, expected.bias, expected.gain, 1.0, "last").numpy(), atol=1e-6)
    restored = Reservoir.from_config(layer.get_config())
    restored(client.x)
    restored.set_weights(layer.get_weights())
    np.testing.assert_array_equal(restored.gain.numpy(), expected.gain)


def test_local_ip_is_computed_once_per_reservoir_client_and_config(monkeypatch):
    data = random_dataset(n_clients=1, seed=5, sizes=[9])
    client = data.clients["c0"]
    weights = ReservoirWeights.from_config(ReservoirConfig(units=8, seed=4), 3)
    cfg = IPConfig(eta=0.01, epochs=2, batch_size=4)
    fedip._ADAPTED.clear()
    computed = []
    local_ip = fedip._local_ip_compiled
    monkeypatch.setattr(fedip, "_local_ip_compiled", lambda *args: computed.append(1) or local_ip(*args))
    first = intrinsic_plasticity(weights, client, cfg)
    again = intrinsic_plasticity(weights.replace(), ClientSequences(client.x.copy(), client.y), cfg)  # equal content
    assert len(computed) == 1
    fedip._ADAPTED.clear()
    fresh = intrinsic_plasticity(weights, client, cfg)
    for kept in (first, again):
        np.testing.assert_array_equal(kept.gain, fresh.gain)
        np.testing.assert_array_equal(kept.bias, fresh.bias)
    moved = client.x.copy()
    moved[0, 0, 0] += 1.0
    shorter = client.steps.copy()
    shorter[0] -= 3
    for changed_weights, changed_client, changed_cfg in [
            (weights, ClientSequences(moved, client.y), cfg),
            (weights, ClientSequences(client.x, client.y, shorter), cfg),
            (weights, client, IPConfig(eta=0.02, epochs=2, batch_size=4)),
            (weights.replace(gain=weights.gain * 1.5), client, cfg)]:
        before = len(computed)
        other = intrinsic_plasticity(changed_weights, changed_client, changed_cfg)
        assert len(computed) == before + 1
        assert not np.array_equal(other.gain, fresh.gain)
