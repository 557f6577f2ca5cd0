"""The numpy backend of the state equation (``tff_esn.esn.states_numpy``): equal to
tfa.layers.ESN and to our TF loop; its per-client statistics equal the float64 statistics of
each client's own states."""

import numpy as np
import pytest
import tensorflow as tf

from tff_esn.esn.states_numpy import SPARSE_DENSITY, states_and_statistics
from tff_esn.esn.states_tf import run_reservoir
from tff_esn.esn.ridge import RidgeStats

tfa = pytest.importorskip("tensorflow_addons")


def _weights(units, features, seed, gain=False, density=1.0):
    rng = np.random.default_rng(seed)
    w = (rng.uniform(-1, 1, (units, units)) * (rng.random((units, units)) < density)).astype(np.float32)
    w *= np.float32(0.9 / np.max(np.abs(np.linalg.eigvals(w))))
    return (rng.uniform(-1, 1, (features, units)).astype(np.float32), w,
            rng.uniform(-0.5, 0.5, units).astype(np.float32),
            rng.uniform(0.5, 1.5, units).astype(np.float32) if gain else np.ones(units, np.float32))


@pytest.mark.parametrize("batch,steps,features,units,leaky", [
    (1, 5, 1, 8, 1.0), (4, 40, 3, 30, 0.3), (7, 25, 8, 64, 0.75), (2, 300, 2, 16, 0.1),
])
def test_states_equal_tfa_esn_with_the_same_weights(batch, steps, features, units, leaky):
    x = np.random.default_rng(batch + steps).normal(size=(batch, steps, features)).astype(np.float32)
    tf.keras.utils.set_random_seed(steps)
    esn = tfa.layers.ESN(units, connectivity=0.3, leaky=leaky, spectral_radius=0.9, use_bias=True,
                         bias_initializer="glorot_uniform", return_sequences=True)
    ref = esn(x).numpy()
    cell = esn.cell
    arrays = (cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.bias.numpy(), np.ones(units, np.float32))
    states, stats = states_and_statistics(x, *arrays, leaky, keep="all")
    assert stats is None and states.shape == ref.shape == (batch, steps, units)
    np.testing.assert_allclose(states, ref, atol=1e-5, rtol=0)
    last = states_and_statistics(x, *arrays, leaky, keep="last")[0]
    mean = states_and_statistics(x, *arrays, leaky, keep="mean", washout=2)[0]
    np.testing.assert_allclose(last, ref[:, -1], atol=1e-5, rtol=0)
    np.testing.assert_allclose(mean, ref[:, 2:].mean(axis=1), atol=1e-5, rtol=0)


@pytest.mark.parametrize("keep", ["last", "mean", "all"])
@pytest.mark.parametrize("leaky,gain,ragged,density", [(0.4, True, True, 1.0), (1.0, False, True, 1.0),
                                                       (0.6, False, False, 1.0), (1.0, True, False, 1.0),
                                                       (0.5, False, True, 0.015)])
def test_states_equal_the_tensorflow_loop(keep, leaky, gain, ragged, density):
    """Intrinsic-plasticity gain, leaking rate 1, unequal lengths (frozen after each end) and a
    sparse Ŵ (density ≤ ``SPARSE_DENSITY``: the CSR product)."""
    x = np.random.default_rng(1).normal(size=(6, 17, 3)).astype(np.float32)
    lengths = np.array([17, 4, 9, 17, 6, 12]) if ragged else None
    if ragged:
        x[np.arange(17)[None, :] >= lengths[:, None]] = 0
    units = 20 if density == 1.0 else 200
    arrays = _weights(units, 3, 7, gain, density)
    assert (np.count_nonzero(arrays[1]) <= SPARSE_DENSITY * arrays[1].size) == (density < 1)
    got = states_and_statistics(x, *arrays, leaky, keep=keep, washout=2, lengths=lengths)[0]
    ref = run_reservoir(x, *arrays[:3], tf.constant(arrays[3]), leaky, keep, 2,
                        None if lengths is None else tf.constant(lengths, tf.int32)).numpy()
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("case", range(6))
def test_per_group_stats_equal_each_groups_own_states(case):
    """Any grouping of a batch's sequences, chunk size, washout, bias input, per-sequence or
    per-step targets and unequal lengths: each group's (A, B, n) equal the float64 statistics
    (IncFed eqs. 6–7) of that group's valid states alone."""
    rng = np.random.default_rng(case)
    batch, steps, units, washout = int(rng.integers(3, 9)), int(rng.integers(6, 20)), 12, int(rng.integers(0, 3))
    per_step, ragged, bias = case % 3 == 0, case % 2 == 1 and case % 3 != 0, case != 4
    lengths = rng.integers(washout + 1, steps + 1, batch) if ragged else None
    x = rng.normal(size=(batch, steps, 2)).astype(np.float32)
    n_groups = int(rng.integers(1, 4))
    groups = rng.integers(0, n_groups, batch)
    labels = rng.integers(0, 3, (batch, steps - washout) if per_step else batch)
    targets = np.eye(3)[labels]
    arrays = _weights(units, 2, case, gain=case == 5)
    chunk = int(rng.integers(1, 7))
    _, stats = states_and_statistics(x, *arrays, 0.5, keep="mean", washout=washout, lengths=lengths, targets=targets,
                       groups=groups, n_groups=n_groups, readout_bias=bias, chunk=chunk)
    states = states_and_statistics(x, *arrays, 0.5, keep="all", washout=washout, lengths=lengths)[0]
    valid = np.ones((batch, steps - washout), bool) if lengths is None else \
        np.arange(washout, steps)[None, :] < lengths[:, None]
    assert len(stats) == n_groups
    for g, (a, b, n) in enumerate(stats):
        rows = (groups == g)[:, None] & valid
        if not rows.any():
            assert n == 0 and not a.any() and not b.any()
            continue
        y = targets[rows] if per_step else np.broadcast_to(targets[:, None], valid.shape + (3,))[rows]
        ref = RidgeStats.from_states(states[rows].astype(np.float64), y, bias=bias)
        assert n == ref.n == rows.sum()
        np.testing.assert_allclose(b, ref.B, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(a, ref.A, rtol=1e-5, atol=1e-5)
