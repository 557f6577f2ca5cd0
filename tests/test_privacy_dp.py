"""Differential privacy of the closed-form statistics: accountant, noise scale, PSD floor, IncFed."""

import math

import dp_accounting
import numpy as np
import pytest
import tensorflow as tf

from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.incfed import federate_tff
from tff_esn.privacy import accounting
from tff_esn.privacy.aggregation import StatsAggregation
from tff_esn.privacy.config import PrivacyConfig
from tff_esn.privacy.dp_stats import GaussianStats, add_noise, clip_rows, floor_eigenvalues, natural_clip

from closed_form_data import random_dataset

WEIGHTS = ReservoirWeights.from_config(ReservoirConfig(units=10, leaky=0.7, seed=2), 3)


def test_epsilon_equals_dp_accounting_for_a_known_setting():
    """Sampled Gaussian, z = 1.1, q = 0.01, 1000 rounds, δ = 1e-5 — composed directly here."""
    direct = dp_accounting.rdp.RdpAccountant()
    direct.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1)), 1000)
    assert accounting.epsilon(1.1, 1e-5, rounds=1000, sampling_rate=0.01) == pytest.approx(
        direct.get_epsilon(1e-5), rel=1e-12)
    single = dp_accounting.rdp.RdpAccountant()
    single.compose(dp_accounting.GaussianDpEvent(2.0))
    assert accounting.epsilon(2.0, 1e-6) == pytest.approx(single.get_epsilon(1e-6), rel=1e-12)
    assert 1.0 < accounting.epsilon(1.1, 1e-5, rounds=1000, sampling_rate=0.01) < 3.0  # DP-SGD's known range
    assert accounting.epsilon(0.0, 1e-5) == math.inf


@pytest.mark.parametrize("target", [0.5, 1.0, 8.0])
def test_noise_multiplier_for_meets_the_target(target):
    z = accounting.noise_multiplier_for(target, 1e-5, rounds=3)
    assert accounting.epsilon(z, 1e-5, rounds=3) == pytest.approx(target, rel=1e-3)
    assert accounting.epsilon(z, 1e-5, rounds=3) <= target * (1 + 1e-6)
    assert accounting.noise_multiplier_for(math.inf, 1e-5) == 0.0


def test_calibration_is_computed_once_per_setting_and_keyed_by_every_argument():
    """A run's privacy section asks for the same calibration again and again: the second ask is
    answered without a new Brent search, and a change of any argument is a new one."""
    z = accounting.noise_multiplier_for(2.5, 1e-5, rounds=4, sampling_rate=0.5)
    before = accounting._calibrated.cache_info()
    assert accounting.noise_multiplier_for(2.5, 1e-5, rounds=4, sampling_rate=0.5) == z
    after = accounting._calibrated.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)
    others = {accounting.noise_multiplier_for(2.5, 1e-5, rounds=5, sampling_rate=0.5),
              accounting.noise_multiplier_for(2.5, 1e-6, rounds=4, sampling_rate=0.5),
              accounting.noise_multiplier_for(2.5, 1e-5, rounds=4, sampling_rate=0.25),
              accounting.noise_multiplier_for(3.0, 1e-5, rounds=4, sampling_rate=0.5)}
    assert z not in others and len(others) == 4
    assert accounting.epsilon(z, 1e-5, rounds=4, sampling_rate=0.5) == accounting.epsilon(
        z, 1e-5, rounds=4, sampling_rate=0.5) <= 2.5 * (1 + 1e-6)


@pytest.mark.parametrize("call,match", [
    (lambda: accounting.noise_multiplier_for(0.0, 1e-5), "epsilon"),
    (lambda: accounting.noise_multiplier_for(-1.0, 1e-5), "epsilon"),
    (lambda: accounting.epsilon(1.0, 1.0), "delta"),
    (lambda: accounting.epsilon(1.0, 0.0), "delta"),
    (lambda: accounting.epsilon(-0.5, 1e-5), "noise multiplier"),
    (lambda: accounting.epsilon(1.0, 1e-5, rounds=0), "rounds"),
    (lambda: accounting.epsilon(1.0, 1e-5, sampling_rate=1.5), "sampling rate"),
    (lambda: PrivacyConfig(dp_noise_multiplier=1.0, dp_clip=0.0), "clip"),  # the boundary of GaussianStats' C, δ
    (lambda: PrivacyConfig(dp_noise_multiplier=1.0, dp_clip=-2.0), "clip"),
    (lambda: PrivacyConfig(dp_noise_multiplier=1.0, dp_delta=1.5), "delta"),
    (lambda: PrivacyConfig(dp_model="trusted"), "model"),
])
def test_bad_settings_are_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_sensitivity_and_noise_split_between_models():
    dp = GaussianStats(2.0, 1e-5, 3.0, 5)
    assert dp.sensitivities == (15.0, 45.0, 5.0)
    central = np.array(dp.sum_stddevs(4))
    np.testing.assert_allclose(central, 2.0 * math.sqrt(3) * np.array([15.0, 45.0, 5.0]))
    local = GaussianStats(2.0, 1e-5, 3.0, 5, model="local")
    distributed = GaussianStats(2.0, 1e-5, 3.0, 5, model="distributed")
    np.testing.assert_allclose(local.client_stddevs(4), central)           # each client: the full noise
    np.testing.assert_allclose(local.sum_stddevs(4), 2 * central)           # √K times in the sum
    np.testing.assert_allclose(np.array(distributed.client_stddevs(4)) * 2, central)  # shares of σ/√K
    np.testing.assert_allclose(distributed.sum_stddevs(4), central)


def test_noise_has_the_configured_scale():
    """Sample standard deviations of 40 000 (A) and 20 100 (B upper) draws within 2 % (SE ≈ 0.4 %)."""
    sa, sb, sn = 3.0, 0.5, 7.0
    a, b, n = add_noise(tf.zeros([200, 200], tf.float64), tf.zeros([200, 200], tf.float64),
                        tf.constant(0.0, tf.float64), (sa, sb, sn), tf.constant([11, 3], tf.int64))
    a, b = a.numpy(), b.numpy()
    np.testing.assert_array_equal(b, b.T)
    upper = b[np.triu_indices(200)]
    assert a.std() == pytest.approx(sa, rel=0.02) and abs(a.mean()) < 0.05 * sa
    assert upper.std() == pytest.approx(sb, rel=0.02) and abs(upper.mean()) < 0.05 * sb
    assert np.isfinite(n.numpy()) and n.numpy() != 0.0
    again = add_noise(tf.zeros([200, 200], tf.float64), tf.zeros([200, 200], tf.float64),
                      tf.constant(0.0, tf.float64), (sa, sb, sn), tf.constant([11, 3], tf.int64))
    np.testing.assert_array_equal(again[0].numpy(), a)  # seeded
    assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.02  # independent draws for A and B


def test_clip_rows_keeps_short_rows_and_shortens_long_ones():
    s = tf.constant([[0.3, 0.4], [3.0, 4.0], [0.0, 0.0]], tf.float64)
    out = clip_rows(s, 1.0).numpy()
    np.testing.assert_array_equal(out[[0, 2]], s.numpy()[[0, 2]])
    np.testing.assert_allclose(out[1], [0.6, 0.8])


def test_eigenvalue_floor_makes_b_positive_definite_and_counts():
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    b = (q * np.array([-2.0, -0.1, 0.05, 1.0, 3.0, 9.0])) @ q.T
    fixed, raised = floor_eigenvalues(tf.constant(b), 0.5)
    np.testing.assert_allclose(np.linalg.eigvalsh(fixed.numpy()), [0.5, 0.5, 0.5, 1.0, 3.0, 9.0], atol=1e-12)
    assert int(raised) == 3


def test_dp_without_noise_and_within_the_natural_clip_is_plain_incfed():
    data = random_dataset(n_clients=4, seed=1)
    spec = StateSpec("all", 0)
    clients = list(data.clients.values())
    plain = federate_tff(WEIGHTS, clients, 3, spec, 1e-2).readout
    agg = StatsAggregation(4, 11, dp=GaussianStats(0.0, 1e-5, natural_clip(11), 10))
    out = federate_tff(WEIGHTS, clients, 3, spec, 1e-2, aggregation=agg)
    np.testing.assert_array_equal(out.readout, plain)
    assert (out.clipped_values, out.eigenvalues_raised) == (0, 0)


def test_central_dp_incfed_is_seeded_floors_b_and_moves_with_the_noise():
    data = random_dataset(n_clients=4, seed=1)
    spec = StateSpec("last")
    clients = list(data.clients.values())
    plain = federate_tff(WEIGHTS, clients, 3, spec, 1e-2).readout

    def run(z, seed, model="central"):
        agg = StatsAggregation(4, 11, dp=GaussianStats(z, 1e-5, natural_clip(11), 1, model=model, seed=seed))
        return federate_tff(WEIGHTS, clients, 3, spec, 1e-2, aggregation=agg)

    first, again, other = run(0.5, 1), run(0.5, 1), run(0.5, 2)
    np.testing.assert_array_equal(first.readout, again.readout)
    assert not np.allclose(first.readout, other.readout)
    assert first.eigenvalues_raised > 0 and np.all(np.isfinite(first.readout))
    small = run(1e-6, 1, model="local")
    np.testing.assert_allclose(small.readout, plain, atol=1e-3 * np.abs(plain).max())
