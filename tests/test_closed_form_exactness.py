"""Exactness claims of the closed-form family (numpy paths), over random partitions and orders."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tff_esn.closed_form import fedavg_ridge, partial_incfed, pfedrr
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.closed_form import harvest as harvest_module
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn import states_numpy, weights as weights_module
from tff_esn.esn.layer import Reservoir
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.data.sequences import ClientSequences
from tff_esn.closed_form.configs import MASKS, READINGS, PartialIncFedConfig, PFedRRConfig
from tff_esn.closed_form.incfed import fit_incfed
from tff_esn.esn.ridge import RidgeStats, SingularSystemError, one_hot, size_weighted_mean

from closed_form_data import random_dataset


def _partition(seed, n_clients, n=90, f=6, c=3, bias=True):
    """Pooled states/targets and their split into n_clients non-empty clients in a random order."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(n, f))
    y = one_hot(rng.integers(0, c, n), c)
    cuts = np.sort(rng.choice(np.arange(1, n), size=n_clients - 1, replace=False))
    order = rng.permutation(n)
    parts = [RidgeStats.from_states(s[idx], y[idx], bias=bias) for idx in np.split(order, cuts)]
    rng.shuffle(parts)
    return RidgeStats.from_states(s, y, bias=bias), parts


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_clients=st.integers(1, 8), l2=st.sampled_from([1e-6, 1e-2, 1.0]))
def test_incfed_equals_centralized_for_any_partition_and_order(seed, n_clients, l2):
    pooled, parts = _partition(seed, n_clients)
    np.testing.assert_allclose(fit_incfed(parts, l2), pooled.solve(l2), rtol=1e-8, atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_clients=st.integers(1, 6))
def test_lambda_per_client_is_eq7_sum(seed, n_clients):
    pooled, parts = _partition(seed, n_clients)
    np.testing.assert_allclose(fit_incfed(parts, 0.1, per_client=True), pooled.solve(0.1 * n_clients), rtol=1e-8)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_batches=st.integers(2, 6))
def test_incremental_updates_equal_batch(seed, n_batches):
    rng = np.random.default_rng(seed)
    s, y = rng.normal(size=(60, 5)), one_hot(rng.integers(0, 2, 60), 2)
    cuts = np.sort(rng.choice(np.arange(1, 60), size=n_batches - 1, replace=False))
    chunks = list(zip(np.split(s, cuts), np.split(y, cuts)))
    stats = RidgeStats.from_states(*chunks[0], bias=True)
    for part in chunks[1:]:
        stats = stats.update(*part)  # IncFed eqs. 11–12
    batch = RidgeStats.from_states(s, y, bias=True)
    np.testing.assert_allclose(stats.A, batch.A, atol=1e-10)
    np.testing.assert_allclose(stats.B, batch.B, atol=1e-10)
    assert stats.n == 60 and stats.clients == 1


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_clients=st.integers(1, 6), alpha=st.floats(0, 1),
       mask=st.sampled_from(MASKS))
def test_partial_incfed_with_every_feature_equals_incfed(seed, n_clients, alpha, mask):
    _, parts = _partition(seed, n_clients)
    full = parts[0].n_features
    result = partial_incfed.fit_partial_incfed(parts, full, alpha, 1e-3, seed=seed, mask=mask)
    np.testing.assert_allclose(result.readout, fit_incfed(parts, 1e-3), rtol=1e-7, atol=1e-10)
    assert all(sel.tolist() == list(range(full)) for sel in result.selected)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_clients=st.integers(1, 6), reading=st.sampled_from(READINGS),
       bias=st.booleans())
def test_pfedrr_with_tau_one_equals_incfed(seed, n_clients, reading, bias):
    _, parts = _partition(seed, n_clients, bias=bias)
    result = pfedrr.fit_pfedrr(parts, 1.0, 1e-3, seed=seed, reading=reading)
    ref = fit_incfed(parts, 1e-3)
    for readout in (result.exact, result.important, result.random):
        np.testing.assert_allclose(readout, ref, rtol=1e-8, atol=1e-10)
    assert result.percent_units == 100.0


def test_harvested_client_stats_sum_to_the_pooled_harvest():
    data = random_dataset(n_clients=4, seed=3)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=12, leaky=0.6, seed=5), 3)
    for mode in ("all", "last", "mean"):
        h = Harvester(data, StateSpec(mode, washout=2))
        parts = [h.stats(weights, cid) for cid in data.client_ids]
        pooled = h.stats_of(weights, data.pooled(data.client_ids))
        np.testing.assert_allclose(RidgeStats.sum(parts).B, pooled.B, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(fit_incfed(parts, 1e-2), pooled.solve(1e-2), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode,per_step,ragged", [("all", False, False), ("all", False, True), ("mean", False, True),
                                                   ("last", False, False), ("all", True, False), ("last", True, False)])
def test_tf_and_numpy_backends_give_the_same_states_and_statistics(mode, per_step, ragged):
    """The TensorFlow harvest (``run_reservoir`` states, ``batch_statistics``) equals the numpy one
    (``states_and_statistics``; for ``last``/``mean`` ``RidgeStats.from_states`` of its states) on the
    same reservoir, to float32 rounding: statistics, sample count and the states a readout scores."""
    import tensorflow as tf

    from tff_esn.esn import states_tf

    data = random_dataset(n_clients=1, steps=12, seed=9, per_step=per_step, sizes=[7])
    client = data.clients["c0"]
    weights = ReservoirWeights.from_config(ReservoirConfig(units=11, leaky=0.4, seed=3), 3)
    arrays = weights.layer_weights()
    lengths = np.array([12, 5, 9, 12, 4, 7, 10], np.int32) if ragged else None
    h = Harvester(data, StateSpec(mode, washout=2))
    targets = h.targets(client)
    if targets.ndim == 3:
        targets = targets[:, 2:]
    scored = "all" if per_step and mode == "all" else ("mean" if mode == "all" else mode)
    np_states, np_stats = states_numpy.states_and_statistics(
        client.x, *arrays, weights.leaky, keep=scored, washout=2, lengths=lengths,
        targets=targets if mode == "all" else None, readout_bias=True, chunk=4)
    tensors = [tf.constant(w) for w in arrays]
    tf_states = states_tf.run_reservoir_shapeless(tf.constant(client.x), *tensors, weights.leaky, scored, 2,
                                                  lengths).numpy()
    got_a, got_b, got_n = (v.numpy() for v in states_tf.batch_statistics(
        tf.constant(client.x), tf.constant(targets), *tensors, weights.leaky, mode, 2, True,
        lengths=None if lengths is None else tf.constant(lengths), dtype=tf.float32))
    if mode == "all":
        (a, b, n), = np_stats
    else:
        ref = RidgeStats.from_states(np_states, targets, bias=True)
        a, b, n = ref.A, ref.B, ref.n
    np.testing.assert_allclose(tf_states, np_states, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_a, a, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got_b, b, rtol=1e-5, atol=1e-4)
    assert got_n == n


def test_harvester_runs_each_client_through_the_reservoir_once(monkeypatch):
    """A training client's statistics and evaluation states come from one pass, in either order;
    clients asked for together share one pass, and their statistics equal each client's alone."""
    data = random_dataset(n_clients=3, seed=4)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=9, seed=6), 3)
    calls = []
    real = harvest_module.states_and_statistics
    monkeypatch.setattr(harvest_module, "states_and_statistics",
                        lambda *a, **k: (calls.append(k["keep"]), real(*a, **k))[1])
    for mode in ("all", "mean"):
        calls.clear()
        h = Harvester(data, StateSpec(mode, washout=1))
        first = h.stats(weights, "c0"), h.features(weights, "c0")
        h.features(weights, "c1"), h.stats(weights, "c1")
        assert len(calls) == (2 if mode == "mean" else 3), calls
        calls.clear()
        together = Harvester(data, StateSpec(mode, washout=1))
        together.cache(weights, data.client_ids)
        assert len(calls) == 1
        for cid in data.client_ids:
            together.features(weights, cid), together.stats(weights, cid)
        assert len(calls) == 1
        for cid in data.client_ids:
            alone = Harvester(data, StateSpec(mode, washout=1))
            np.testing.assert_allclose(together.features(weights, cid).states, alone.features(weights, cid).states,
                                       rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(together.stats(weights, cid).B, alone.stats(weights, cid).B, rtol=1e-6,
                                       atol=1e-5)
            assert together.stats(weights, cid).n == alone.stats(weights, cid).n
        np.testing.assert_allclose(together.features(weights, "c0").states, first[1].states, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(together.stats(weights, "c0").B, first[0].B, rtol=1e-6, atol=1e-5)


def test_harvester_uses_the_given_weights_without_drawing_a_reservoir(monkeypatch):
    data = random_dataset(n_clients=2, seed=4)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=9, leaky=0.7, seed=6), 3)
    weights = ReservoirWeights(weights.kernel, weights.recurrent, weights.bias,
                               np.linspace(0.5, 1.5, 9, dtype=np.float32), weights.leaky)  # an IP gain
    layer = Reservoir(ReservoirConfig(units=9, leaky=0.7), state_mode="all", washout=2, use_gain=True)
    layer.build((None, None, 3))
    layer.set_weights(weights.layer_weights())

    def no_draw(*args, **kwargs):
        raise AssertionError("a reservoir was drawn")

    monkeypatch.setattr(weights_module, "recurrent_weights", no_draw)
    h = Harvester(data, StateSpec("all", washout=2))
    client = data.clients["c0"]
    got = h.stats(weights, "c0")
    steps = client.x.shape[1] - 2
    ref = RidgeStats.from_states(layer(client.x).numpy().reshape(-1, 9), np.repeat(h.targets(client), steps, axis=0),
                                 bias=h.spec.readout_bias)
    np.testing.assert_allclose(got.B, ref.B, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got.A, ref.A, rtol=1e-5, atol=1e-4)


def test_a_client_adding_new_sequences_equals_its_batch_harvest():
    data = random_dataset(n_clients=1, seed=8, sizes=[9])
    client = data.clients["c0"]
    weights = ReservoirWeights.from_config(ReservoirConfig(units=10, seed=2), 3)
    h = Harvester(data, StateSpec("all", washout=1))
    stats = h.stats_of(weights, ClientSequences(client.x[:4], client.y[:4]))
    for part in (slice(4, 5), slice(5, 9)):  # new data arrives twice (IncFed eqs. 11–12)
        stats = stats + h.stats_of(weights, ClientSequences(client.x[part], client.y[part]))
    batch = h.stats(weights, "c0")
    assert stats.n == batch.n
    np.testing.assert_allclose(stats.B, batch.B, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(fit_incfed([stats], 1e-2), fit_incfed([batch], 1e-2), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ FedAvg of ridge readouts
def test_fedavg_ridge_is_the_size_weighted_mean_of_local_readouts():
    _, parts = _partition(11, 4)
    local = [p.solve(0.1) for p in parts]
    sizes = np.array([p.n for p in parts], float)
    expected = sum(w * n for w, n in zip(local, sizes)) / sizes.sum()
    np.testing.assert_allclose(fedavg_ridge.fit_fedavg_ridge(parts, 0.1), expected, rtol=1e-12)


def test_fedavg_ridge_of_one_client_is_its_ridge_and_differs_from_incfed_in_general():
    pooled, parts = _partition(2, 1)
    np.testing.assert_allclose(fedavg_ridge.fit_fedavg_ridge(parts, 0.1), pooled.solve(0.1), rtol=1e-12)
    _, parts = _partition(2, 4)
    assert not np.allclose(fedavg_ridge.fit_fedavg_ridge(parts, 0.1), fit_incfed(parts, 0.1))


def test_fedavg_ridge_rejects_bad_clients_at_its_boundary():
    _, parts = _partition(2, 2)
    with pytest.raises(ValueError, match="empty client"):  # a size-0 weight
        fedavg_ridge.fit_fedavg_ridge([parts[0], RidgeStats.zeros(6, 3, bias=True)], 0.1)
    with pytest.raises(ValueError, match="same reservoir size"):
        fedavg_ridge.fit_fedavg_ridge([parts[0], RidgeStats.from_states(np.ones((4, 3)), np.ones((4, 3)))], 0.1)
    with pytest.raises(ValueError, match="no client"):
        fedavg_ridge.fit_fedavg_ridge([], 0.1)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_size_weighted_mean_equals_numpy_average(clients, seed):
    rng = np.random.default_rng(seed)
    values = [rng.normal(size=(3, 4)) for _ in range(clients)]
    sizes = rng.integers(1, 1000, clients)
    np.testing.assert_allclose(size_weighted_mean(values, sizes),
                               np.average(np.stack(values), axis=0, weights=sizes), rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------ Partial IncFed and pFedRR details
def test_partial_incfed_masks_columns_as_eq_b16():
    _, parts = _partition(5, 1, f=5)
    masked = partial_incfed.mask_stats(parts[0], np.array([0, 3]), "columns")
    keep = np.array([1, 0, 0, 1, 0, 0], bool)
    np.testing.assert_array_equal(masked.B[:, ~keep], 0)
    np.testing.assert_array_equal(masked.B[:, keep], parts[0].B[:, keep])
    np.testing.assert_array_equal(masked.A[:, ~keep], 0)


def test_partial_incfed_block_mask_keeps_the_selected_block_only():
    _, parts = _partition(5, 1, f=5)
    masked = partial_incfed.mask_stats(parts[0], np.array([0, 3]), "block")
    block = np.ix_([0, 3], [0, 3])
    expected = np.zeros_like(parts[0].B)
    expected[block] = parts[0].B[block]
    np.testing.assert_array_equal(masked.B, expected)
    np.testing.assert_array_equal(masked.A[:, [1, 2, 4, 5]], 0)
    np.testing.assert_array_equal(masked.A[:, [0, 3]], parts[0].A[:, [0, 3]])
    with pytest.raises(ValueError, match="mask"):  # the boundary: the config
        PartialIncFedConfig(mask="rows")


def test_partial_incfed_selection_mixes_top_and_random():
    scores = np.arange(10.0)
    sel = partial_incfed.select_features(scores, 4, 0.5, np.random.default_rng(0))
    assert sel.size == 4 and {9, 8} <= set(sel.tolist())
    assert partial_incfed.select_features(scores, 4, 1.0, np.random.default_rng(0)).tolist() == [6, 7, 8, 9]
    assert partial_incfed.row_sum_importance(np.array([[1.0, 2.0], [2.0, -5.0]])).tolist() == [3.0, -3.0]
    assert partial_incfed.default_k(100, 3) == 50


def test_pfedrr_sparsify_keeps_diagonal_and_selected_block():
    _, parts = _partition(6, 1, f=6)
    b = parts[0].B
    mask = np.eye(7, dtype=bool)
    mask[np.ix_([1, 2], [1, 2])] = True
    literal = pfedrr.sparsify(parts[0], np.array([1, 2]), "literal")
    consistent = pfedrr.sparsify(parts[0], np.array([1, 2]))
    for out in (literal, consistent):
        np.testing.assert_array_equal(out.B, np.where(mask, b, 0))
    np.testing.assert_array_equal(literal.A, parts[0].A)
    np.testing.assert_array_equal(consistent.A[:, [1, 2]], parts[0].A[:, [1, 2]])
    np.testing.assert_array_equal(consistent.A[:, [0, 3, 4, 5, 6]], 0)
    imp = pfedrr.squared_row_importance(b)
    assert imp.min() == 0.0 and imp.max() == 1.0
    assert pfedrr.squared_row_importance(np.eye(3)).tolist() == [1.0, 1.0, 1.0]


def test_pfedrr_random_policy_uses_the_same_number_of_units_and_is_seeded():
    _, parts = _partition(8, 3, f=10)
    a = pfedrr.fit_pfedrr(parts, 0.4, 1e-2, seed=1)
    b = pfedrr.fit_pfedrr(parts, 0.4, 1e-2, seed=1)
    assert [u.size for u in a.important_units] == [u.size for u in a.random_units]
    np.testing.assert_array_equal(a.random, b.random)
    assert 0 < a.percent_units < 100


# ------------------------------------------------------------------ errors
def test_errors_name_the_problem():
    _, parts = _partition(1, 2)
    other = RidgeStats.from_states(np.ones((4, 3)), np.ones((4, 3)), bias=True)
    with pytest.raises(ValueError, match="same reservoir size"):
        fit_incfed([parts[0], other], 0.1)
    empty = RidgeStats.zeros(6, 3, bias=True)  # an empty client adds nothing
    np.testing.assert_array_equal(fit_incfed([parts[0], empty], 0.1), fit_incfed([parts[0]], 0.1))
    with pytest.raises(ValueError, match="no client"):
        fit_incfed([], 0.1)
    reservoir = ReservoirConfig(units=6)  # the boundary: the configs
    for k in (0, 8, 2.5):
        with pytest.raises(ValueError, match=r"PartialIncFedConfig\.k"):
            PartialIncFedConfig(reservoir=reservoir, k=k)
    with pytest.raises(ValueError, match="alpha"):
        PartialIncFedConfig(reservoir=reservoir, k=2, alpha=1.5)
    for tau in (0, -0.1, 1.01, float("nan")):
        with pytest.raises(ValueError, match="tau"):
            PFedRRConfig(tau=tau)


def test_singular_systems_with_zero_l2_raise():
    s = np.random.default_rng(0).normal(size=(3, 6))  # fewer states than features
    parts = [RidgeStats.from_states(s, one_hot(np.array([0, 1, 0]), 2))]
    with pytest.raises(SingularSystemError):
        fit_incfed(parts, 0.0)
    with pytest.raises(SingularSystemError):
        pfedrr.fit_pfedrr(parts, 0.5, 0.0)
    with pytest.raises(SingularSystemError):
        partial_incfed.fit_partial_incfed(parts, 2, 1.0, 0.0)
    with pytest.raises(SingularSystemError):
        fedavg_ridge.fit_fedavg_ridge(parts, 0.0)
