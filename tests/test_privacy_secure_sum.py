"""Secure aggregation of float statistics: fixed-point encoding, error bound, clipping, TFF."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from tff_esn import runtime
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.incfed import federate_tff
from tff_esn.privacy.aggregation import StatsAggregation, federated_stats_sum, lower_secure
from tff_esn.privacy.secure_sum import FixedPoint, client_bits, stats_bound
from tff_esn.privacy.config import PrivacyConfig

from closed_form_data import random_dataset

WEIGHTS = ReservoirWeights.from_config(ReservoirConfig(units=10, leaky=0.7, seed=2), 3)


def _secure_sum_numpy(fp: FixedPoint, values: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """Encode each client, sum the integers exactly (int64), decode."""
    encoded = [fp.encode(tf.constant(v)) for v in values]
    total = np.sum([q.numpy() for q, _ in encoded], axis=0, dtype=np.int64)
    return fp.decode(tf.constant(total), tf.constant(len(values), tf.int64)).numpy(), sum(int(c) for _, c in encoded)


@settings(max_examples=60, deadline=None)
@given(bits=st.integers(8, 62), clients=st.integers(1, 40), bound=st.floats(1e-3, 1e6),
       seed=st.integers(0, 2 ** 31 - 1))
def test_decoded_sum_is_within_the_error_bound(bits, clients, bound, seed):
    if bits - int(np.ceil(np.log2(clients))) < 1:
        return
    fp = FixedPoint(bits, bound, clients)
    rng = np.random.default_rng(seed)
    values = [rng.uniform(-bound, bound, size=7) for _ in range(clients)]
    decoded, clipped = _secure_sum_numpy(fp, values)
    assert clipped == 0
    assert np.max(np.abs(decoded - np.sum(values, axis=0))) <= fp.error_bound()
    assert np.sum(np.array([fp.encode(tf.constant(v))[0].numpy() for v in values]), axis=0).max() < 2 ** bits


def test_bound_is_attained_in_order_of_magnitude():
    """Values half a step off the grid: the error is close to K·R/L (the bound is not vacuous)."""
    fp = FixedPoint(12, 1.0, 4)
    step = 1 / fp.scale
    values = [np.full(3, -1.0 + step * 0.49) for _ in range(4)]
    decoded, _ = _secure_sum_numpy(fp, values)
    err = np.abs(decoded - np.sum(values, axis=0)).max()
    assert 0.9 * fp.clients * 0.49 * step < err <= fp.error_bound()


def test_overflowing_values_are_clipped_and_counted_not_wrapped():
    fp = FixedPoint(20, 2.0, 3)
    values = [np.array([1.0, 5.0, -9.0]), np.array([0.5, 0.5, 0.5]), np.array([3.0, -1.0, 0.0])]
    decoded, clipped = _secure_sum_numpy(fp, values)
    assert clipped == 3
    np.testing.assert_allclose(decoded, [1.0 + 0.5 + 2.0, 2.0 + 0.5 - 1.0, -2.0 + 0.5 + 0.0], atol=fp.error_bound())


@pytest.mark.parametrize("bits,clients,match", [
    (4, 100, "no bit per client"), (7, 200, "no bit per client"), (63, 2, "bits"), (0, 2, "bits")])
def test_bit_width_too_small_for_the_clients_is_a_clear_error(bits, clients, match):
    with pytest.raises(ValueError, match=match):
        FixedPoint(bits, 1.0, clients)


def test_encoding_settings():
    assert client_bits(32, 1) == 32 and client_bits(32, 2) == 31 and client_bits(32, 5) == 29
    fp = FixedPoint(32, 10.0, 5)
    assert fp.levels == 2 ** 29 - 1 and fp.scale == pytest.approx(fp.levels / 20.0)
    assert stats_bound([10, 400, 30]) == 400.0
    with pytest.raises(ValueError, match="secure_range"):  # the boundary: the run's privacy settings
        PrivacyConfig(secure_aggregation=True, secure_range=0.0)


def test_tff_secure_sum_equals_plain_sum_within_the_bound():
    """``federated_stats_sum`` through ``tff.federated_secure_sum_bitwidth`` vs. ``federated_sum``."""
    import tensorflow_federated as tff

    runtime.ensure_context()
    rng = np.random.default_rng(3)
    values = [(rng.uniform(-5, 5, (3, 4)), rng.uniform(-5, 5, 2)) for _ in range(5)]
    values[2][1][0] = 50.0  # overflows the range ±8
    value_type = tff.StructWithPythonType(
        [tff.TensorType(np.float64, [3, 4]), tff.TensorType(np.float64, [2])], tuple)
    secure = StatsAggregation(5, 4, secure=FixedPoint(24, 8.0, 5))

    def build(agg):
        @tff.federated_computation(tff.FederatedType(value_type, tff.CLIENTS))
        def comp(local):
            return federated_stats_sum(local, agg.secure)
        return lower_secure(comp, agg.secure)

    (plain_a, plain_b), plain_clipped = build(StatsAggregation(5, 4))(values)
    (sec_a, sec_b), clipped = build(secure)(values)
    bound = secure.secure.error_bound()
    assert int(plain_clipped) == 0 and int(clipped) == 1
    np.testing.assert_allclose(sec_a, plain_a, rtol=0, atol=bound)
    np.testing.assert_allclose(sec_b, plain_b - np.array([50.0 - 8.0, 0.0]), rtol=0, atol=bound)
    assert np.abs(sec_a - plain_a).max() > 0  # it really went through the quantized path


def test_secure_incfed_equals_plain_incfed():
    data = random_dataset(n_clients=4, seed=1)
    spec = StateSpec("all", 0)
    clients = list(data.clients.values())
    plain = federate_tff(WEIGHTS, clients, 3, spec, 1e-2).readout
    fp = FixedPoint(48, stats_bound([len(c) * 10 for c in clients]), 4)
    out = federate_tff(WEIGHTS, clients, 3, spec, 1e-2, aggregation=StatsAggregation(4, 11, secure=fp))
    assert out.clipped_values == 0
    np.testing.assert_allclose(out.readout, plain, rtol=0, atol=1e-7 * np.abs(plain).max())
