"""Ridge statistics: equal to scikit-learn on pooled data, exact under any partition and order."""

import warnings

import numpy as np
import pytest
import scipy.linalg
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge

from tff_esn import Reservoir, ReservoirConfig
from tff_esn.esn.ridge import (RidgeStats, SingularSystemError, certified_regular, one_hot, predict,
                               solve_symmetric, with_bias)
from tff_esn.esn.ridge_tf import ridge_products
from tff_esn.esn.states_numpy import states_and_statistics
from tff_esn.esn.states_tf import accumulate_stats
from tff_esn.esn.weights import ReservoirWeights
from tff_esn.common.run_warnings import RunWarning
from tff_esn.data.sequences import ClientSequences, SequenceDataset


def _data(n=200, f=12, y=3, seed=0):
    """States (n, f) and 2-D targets (n, y) of a noisy linear model."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(n, f))
    w = rng.normal(size=(y, f))
    return s, s @ w.T + 0.1 * rng.normal(size=(n, y))


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("l2", [1e-6, 0.1, 10.0])
def test_solve_equals_sklearn_ridge(bias, l2):
    s, y = _data()
    w = RidgeStats.from_states(s, y, bias=bias).solve(l2)
    feats = with_bias(s) if bias else s
    ref = Ridge(alpha=l2, fit_intercept=False, solver="cholesky").fit(feats, y)
    np.testing.assert_allclose(w, ref.coef_, atol=1e-9, rtol=1e-9)
    np.testing.assert_allclose(predict(w, s, bias=bias), ref.predict(feats), atol=1e-8)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_clients=st.integers(1, 9),
    bias=st.booleans(),
)
def test_any_partition_in_any_order_equals_pooled(seed, n_clients, bias):
    rng = np.random.default_rng(seed)
    s, y = _data(n=int(rng.integers(n_clients, 120)), f=7, y=2, seed=seed)
    owner = rng.integers(0, n_clients, size=len(s))
    owner[:n_clients] = np.arange(n_clients)  # no empty client
    parts = [RidgeStats.from_states(s[owner == c], y[owner == c], bias=bias) for c in range(n_clients)]
    order = rng.permutation(n_clients)
    merged = RidgeStats.sum(parts[i] for i in order)
    pooled = RidgeStats.from_states(s, y, bias=bias)
    np.testing.assert_allclose(merged.A, pooled.A, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(merged.B, pooled.B, rtol=1e-10, atol=1e-9)
    assert merged.n == pooled.n and merged.clients == n_clients
    np.testing.assert_allclose(merged.solve(0.5), pooled.solve(0.5), rtol=1e-8, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), cuts=st.integers(1, 5))
def test_incremental_updates_equal_batch(seed, cuts):
    s, y = _data(n=90, f=6, y=2, seed=seed)
    bounds = np.sort(np.random.default_rng(seed).choice(np.arange(1, 90), size=cuts, replace=False))
    chunks = np.split(np.arange(90), bounds)
    stats = RidgeStats.from_states(s[chunks[0]], y[chunks[0]])
    for idx in chunks[1:]:
        stats = stats.update(s[idx], y[idx])
    batch = RidgeStats.from_states(s, y)
    np.testing.assert_allclose(stats.A, batch.A, atol=1e-9)
    np.testing.assert_allclose(stats.B, batch.B, atol=1e-9)
    assert stats.n == 90 and stats.clients == 1


def test_lambda_once_versus_per_client():
    s, y = _data(n=60, f=5, y=2)
    parts = RidgeStats.sum(RidgeStats.from_states(s[i::3], y[i::3]) for i in range(3))
    np.testing.assert_allclose(parts.solve(0.2), Ridge(alpha=0.2, fit_intercept=False).fit(s, y).coef_, atol=1e-9)
    np.testing.assert_allclose(parts.solve(0.2, per_client=True),
                               Ridge(alpha=0.6, fit_intercept=False).fit(s, y).coef_, atol=1e-9)
    assert parts.solve(0.2).shape == (2, 5)


@pytest.mark.parametrize("per_client", [False, True])
def test_solve_path_equals_solve_at_every_lambda(per_client):
    s, y = _data(n=80, f=9, y=3)
    stats = RidgeStats.sum(RidgeStats.from_states(s[i::2] * (i + 1), y[i::2], bias=True) for i in range(2))
    grid = (1e-4, 1e-1, 10.0, 1e5)
    path = stats.solve_path(grid, per_client=per_client)
    assert path.shape == (4, 3, 10)
    for l2, w in zip(grid, path):
        np.testing.assert_allclose(w, stats.solve(l2, per_client=per_client), rtol=1e-8, atol=1e-12)
    assert np.abs(path[-1]).max() < np.abs(path[0]).max() / 100  # λ 1e5 shrinks the readout
    with pytest.raises(ValueError, match="l2s"):
        stats.solve_path([1e-3, 0.0])
    with pytest.raises(ValueError, match="l2s"):
        stats.solve_path([])


def test_singular_system_with_zero_l2_is_a_clear_error():
    s, y = _data(n=4, f=10, y=1)
    stats = RidgeStats.from_states(s, y)
    with pytest.raises(SingularSystemError, match="l2 > 0"):
        stats.solve(0.0)
    assert np.isfinite(stats.solve(1e-3)).all()


def test_bad_shapes_and_values():
    s, y = _data(n=10, f=3, y=1)
    with pytest.raises(ValueError, match=r"y\[:, None\]|targets\[:, None\]"):
        RidgeStats.from_states(s, y[:, 0])
    with pytest.raises(ValueError, match="rows"):
        RidgeStats.from_states(s, y[:5])
    bad = s.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="NaN or inf"):
        RidgeStats.from_states(bad, y)
    with pytest.raises(ValueError, match="same reservoir size"):
        RidgeStats.from_states(s, y) + RidgeStats.from_states(s[:, :2], y)
    with pytest.raises(ValueError, match="l2"):
        RidgeStats.from_states(s, y).solve(-1.0)
    with pytest.raises(ValueError, match="no statistics"):
        RidgeStats.sum([])
    with pytest.raises(ValueError, match="no samples"):
        RidgeStats.zeros(3, 1).solve(0.1)
    with pytest.raises(ValueError, match="labels outside"):  # the boundary: the dataset's labels
        SequenceDataset({"c0": ClientSequences(np.zeros((2, 4, 1), np.float32), np.array([0, 3]))}, 3, ("x",),
                        ("a", "b", "c"), "toy")


@pytest.mark.parametrize("per_step", [False, True])
@pytest.mark.parametrize("chunk,washout,bias", [(1, 0, False), (7, 5, True), (64, 3, False), (1000, 0, True)])
def test_in_loop_accumulation_equals_harvest_then_compute(per_step, chunk, washout, bias):
    """Both backends' chunked statistics (``accumulate_stats`` in TF, ``states_and_statistics`` in
    numpy) equal the statistics of the Keras layer's states computed afterwards."""
    rng = np.random.default_rng(chunk + washout)
    x = rng.normal(size=(5, 33, 4)).astype(np.float32)
    cfg = ReservoirConfig(units=24, leaky=0.7, recurrent_connectivity=0.3, bias_scaling=0.2, seed=9)
    layer = Reservoir(cfg, state_mode="all", washout=washout)
    targets = rng.normal(size=(5, 33, 2) if per_step else (5, 2)).astype(np.float32)
    sample_targets = targets[:, washout:] if per_step else targets
    states = layer(x).numpy().reshape(-1, 24)
    weights = ReservoirWeights.from_layer(layer)
    a, b, n = accumulate_stats(tf.constant(x), tf.constant(sample_targets), tf.constant([33] * 5),
                               *[tf.constant(w) for w in weights.layer_weights()][:3], None, weights.leaky,
                               tf.constant(washout), tf.constant(chunk), bias, per_step)
    tf_stats = RidgeStats(a.numpy(), b.numpy(), int(n), 1, bias)
    _, [(a, b, n)] = states_and_statistics(x, *weights.layer_weights(), weights.leaky, keep="last",
                                           washout=washout, targets=sample_targets, readout_bias=bias, chunk=chunk)
    np_stats = RidgeStats(a, b, n, 1, bias)
    y = (targets[:, washout:] if per_step else np.repeat(targets[:, None], 33 - washout, axis=1)).reshape(-1, 2)
    ref = RidgeStats.from_states(states, y, bias=bias)
    for got, solve_rtol in ((tf_stats, 1e-4), (np_stats, 1e-3)):  # numpy: layer's states to float32 rounding
        assert got.n == ref.n == 5 * (33 - washout)
        np.testing.assert_allclose(got.B, ref.B, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(got.A, ref.A, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(got.solve(1e-2), ref.solve(1e-2), rtol=solve_rtol, atol=1e-5)


def test_last_state_stats_of_both_backends_equal_the_layers():
    x = np.random.default_rng(0).normal(size=(6, 10, 2)).astype(np.float32)
    layer = Reservoir(units=8, seed=1)
    y = one_hot(np.array([0, 1, 2, 0, 1, 2]), 3)
    states = layer(x).numpy()
    ref = RidgeStats.from_states(states, y)
    a, b = ridge_products(tf.constant(states, tf.float64), y, readout_bias=False)
    np.testing.assert_allclose(b.numpy(), ref.B, atol=1e-12)
    np.testing.assert_allclose(a.numpy(), ref.A, atol=1e-12)
    weights = ReservoirWeights.from_layer(layer)
    last, _ = states_and_statistics(x, *weights.layer_weights(), weights.leaky, keep="last")
    np.testing.assert_allclose(last, states, atol=1e-5)
    with pytest.raises(ValueError, match="rows"):
        RidgeStats.from_states(states, y[:5])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), rows=st.integers(1, 60), chunks=st.integers(1, 6), bias=st.booleans(),
       f32=st.booleans())
def test_ridge_products_of_random_chunks_sum_to_the_naive_statistics(seed, rows, chunks, bias, f32):
    """The TensorFlow statistics function (every TF harvest and the TFF client use it) equals
    ``Yᵀ S, Sᵀ S`` of the valid rows, summed over any cut into chunks, and solves to scikit-learn's ridge."""
    rng = np.random.default_rng(seed)
    s, y = _data(n=rows, f=5, y=2, seed=seed)
    valid = rng.random(rows) < 0.8
    valid[0] = True
    dtype = np.float32 if f32 else np.float64
    cuts = np.sort(rng.integers(0, rows + 1, chunks - 1))
    parts = [ridge_products(tf.constant(s[a:b], dtype), tf.constant(y[a:b]), readout_bias=bias,
                            valid=tf.constant(valid[a:b])) for a, b in zip([0, *cuts], [*cuts, rows])]
    got = RidgeStats(sum(p[0].numpy() for p in parts), sum(p[1].numpy() for p in parts), int(valid.sum()), 1, bias)
    ref = RidgeStats.from_states(s[valid], y[valid], bias=bias)
    tol = {"rtol": 1e-5, "atol": 1e-4} if f32 else {"rtol": 1e-12, "atol": 1e-12}
    np.testing.assert_allclose(got.A, ref.A, **tol)
    np.testing.assert_allclose(got.B, ref.B, **tol)
    if not f32:
        feats = with_bias(s[valid]) if bias else s[valid]
        sk = Ridge(alpha=0.1, fit_intercept=False, solver="cholesky").fit(feats, y[valid])
        np.testing.assert_allclose(got.solve(0.1), sk.coef_, rtol=1e-8, atol=1e-10)


def test_ridge_products_clip_each_row_bias_input_included():
    """The caller's clip (DP's row clip) applies to every row, bias input included, before the products."""
    import functools

    from tff_esn.privacy.dp_stats import clip_rows

    s, y = _data(n=30, f=4, y=1, seed=3)
    a, b = ridge_products(tf.constant(s), tf.constant(y), readout_bias=True,
                          clip=functools.partial(clip_rows, clip=1.5))
    rows = with_bias(s)
    rows = rows * np.minimum(1.0, 1.5 / np.linalg.norm(rows, axis=1, keepdims=True))
    assert a.dtype == b.dtype == tf.float64
    np.testing.assert_allclose(b.numpy(), rows.T @ rows, rtol=1e-12)
    np.testing.assert_allclose(a.numpy(), y.T @ rows, rtol=1e-12)
    assert np.trace(b.numpy()) <= 30 * 1.5 ** 2 * (1 + 1e-12)


def _eigenvalue_rule(a: np.ndarray, matrix: np.ndarray) -> np.ndarray | None:
    """The singular-system rule read literally: Cholesky when the smallest computed eigenvalue exceeds
    N·ε·largest, else ``None`` (the pseudo-inverse branch)."""
    eigenvalues = np.linalg.eigvalsh(matrix)
    if eigenvalues[0] <= matrix.shape[0] * np.finfo(np.float64).eps * np.abs(eigenvalues).max():
        return None
    return scipy.linalg.cho_solve(scipy.linalg.cho_factor(matrix, lower=True), a.T).T


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 40), rows=st.integers(1, 60),
       log_l2=st.floats(-16, 3), log_scale=st.floats(-3, 6))
def test_certified_cholesky_solve_is_the_eigenvalue_rule_bit_for_bit(seed, n, rows, log_l2, log_scale):
    """Over well- and ill-conditioned systems (rank-deficient B, λ down to 1e-16·scale): a system
    the Cholesky factor certifies is one the eigenvalue rule solves by Cholesky, with the same bits."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(rows, n)) * 10.0 ** log_scale
    matrix = s.T @ s + 10.0 ** (log_l2 + 2 * log_scale) * np.eye(n)
    a = rng.normal(size=(3, n))
    expected = _eigenvalue_rule(a, matrix)
    try:
        factor = scipy.linalg.cho_factor(matrix, lower=True)[0]
    except np.linalg.LinAlgError:
        factor = None
    if factor is not None and certified_regular(matrix, factor):
        assert expected is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = solve_symmetric(a, matrix, 10.0 ** log_l2)
    if expected is not None:
        np.testing.assert_array_equal(got, expected)


def test_certificate_decides_the_ridge_systems_of_a_reservoir_and_not_a_singular_one():
    """Reservoir-like states (tanh, correlated) at λ 1e-3: certified without eigenvalues; a
    rank-deficient B at λ 1e-15·‖B‖ is left to the eigenvalues (and solved by the pseudo-inverse)."""
    rng = np.random.default_rng(0)
    s = np.tanh(rng.normal(size=(500, 120)) @ rng.normal(size=(120, 120)) * 0.1)
    matrix = s.T @ s + 1e-3 * np.eye(120)
    assert certified_regular(matrix, scipy.linalg.cho_factor(matrix, lower=True)[0])
    low = rng.normal(size=(5, 120))
    singular = low.T @ low
    singular += 1e-15 * np.abs(singular).max() * np.eye(120)
    assert not certified_regular(singular, scipy.linalg.cho_factor(singular, lower=True)[0])
    with pytest.warns(RunWarning, match="numerically singular"):
        solve_symmetric(low[:3], singular, 1e-15)


def test_reservoir_weights_are_read_only_copies_so_the_harvest_key_cannot_go_stale():
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(3, 5)), rng.normal(size=(5, 5)) * 0.1, rng.normal(size=5), np.ones(5)]
    original = [a.copy() for a in arrays]
    weights = ReservoirWeights(*arrays, leaky=0.5)
    key = weights.key
    arrays[1][0, 0] += 1.0  # the caller's array, not the reservoir's
    assert weights.key == key == ReservoirWeights(*original, leaky=0.5).key
    assert ReservoirWeights(*arrays, leaky=0.5).key != key
    with pytest.raises(ValueError, match="read-only"):
        weights.recurrent[0, 0] = 0.0
    assert weights.replace(leaky=0.3).key != key


def test_a_config_draws_one_reservoir_object_equal_to_a_fresh_draw():
    from tff_esn.esn.draws import bias_weights, input_weights, recurrent_weights

    config = ReservoirConfig(units=7, seed=11)
    weights = ReservoirWeights.from_config(config, 3)
    assert ReservoirWeights.from_config(config, 3) is weights
    np.testing.assert_array_equal(weights.recurrent, recurrent_weights(config))
    np.testing.assert_array_equal(weights.kernel, input_weights(config, 3))
    np.testing.assert_array_equal(weights.bias, bias_weights(config))
    assert ReservoirWeights.from_config(config, 4).kernel.shape == (4, 7)
    assert ReservoirWeights.from_config(ReservoirConfig(units=7, seed=12), 3).key != weights.key
