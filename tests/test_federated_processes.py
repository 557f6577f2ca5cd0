"""FedAvg / FedCurv TFF processes: equal to TFF's FedAvg and to a direct computation; filter hook; u, v."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from tff_esn import ReservoirConfig
from tff_esn.data.sequences import ClientSequences
from tff_esn.federated import FedAvgConfig, FedCurvConfig, curvature, learning_process
from tff_esn.federated.client_work import curvature_penalty_gradient
from tff_esn.federated.clients import CachedStates
from tff_esn.federated.model import ThesisModelConfig, build_thesis_model, compile_thesis_model, thesis_loss

UNITS = 6
CFG = ThesisModelConfig(reservoir=ReservoirConfig(units=UNITS, spectral_radius=0.9, seed=3), batch_size=4,
                        learning_rate=0.05)
IDS = ("a", "b", "c")


@pytest.fixture(scope="module")
def source():
    rng = np.random.default_rng(0)
    clients = {}
    for i, cid in enumerate(IDS):
        n = 5 + 2 * i
        x = rng.normal(size=(n, 7, 2)).astype(np.float32)
        y = (x[..., 0] + 0.3 * rng.normal(size=(n, 7)) > 0.8 + 0.2 * i).astype(np.int64)
        clients[cid] = ClientSequences(x, y)
    return CachedStates(clients, CFG, seed=1, shuffle=False)


@pytest.fixture(scope="module")
def model_fn(source):
    spec = source.dataset(IDS[0], 0).element_spec

    def fn():
        return tff.learning.models.from_keras_model(
            build_thesis_model(UNITS, CFG, readout_only=True), loss=thesis_loss(CFG), input_spec=spec)

    return fn


def _run(process, source, rounds, ids=IDS):
    state = process.initialize()
    outputs = []
    for r in range(rounds):
        out = process.next(state, source.datasets(ids, r))
        state = out.state
        outputs.append(out.metrics)
    return state, [np.asarray(w) for w in process.get_model_weights(state).trainable], outputs


@pytest.fixture(scope="module")
def fedavg(model_fn):
    """TFF's own weighted FedAvg (Adam clients, server SGD at 1.0)."""
    return tff.learning.algorithms.build_weighted_fed_avg(
        model_fn, client_optimizer_fn=tff.learning.optimizers.build_adam(CFG.learning_rate),
        server_optimizer_fn=tff.learning.optimizers.build_sgdm(learning_rate=1.0),
        loop_implementation=tff.learning.LoopImplementation.DATASET_ITERATOR)


@pytest.fixture(scope="module")
def fedcurv0(model_fn):
    return learning_process(model_fn, client_learning_rate=CFG.learning_rate, server_learning_rate=1.0, penalty=0.0)


def _local_readouts(source):
    """Each client's readout trained locally with Keras (Adam, weighted BCE), from the initial model."""
    results = []
    for cid in IDS:
        model = compile_thesis_model(build_thesis_model(UNITS, CFG, readout_only=True), CFG)
        batches = list(source.dataset(cid, 0).as_numpy_iterator())
        for x, y in batches:
            model.train_on_batch(x, y)
        results.append(([w.copy() for w in model.get_weights()], source.sizes[cid]))
    return results


def test_fedcurv_with_zero_penalty_is_tff_fedavg_exactly(fedavg, fedcurv0, model_fn, source):
    _, w_avg, _ = _run(fedavg, source, 3)
    state, w_curv, metrics = _run(fedcurv0, source, 3)
    _, w_ours, _ = _run(learning_process(model_fn, client_learning_rate=CFG.learning_rate), source, 3)
    for a, b, c in zip(w_avg, w_curv, w_ours):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    u, v = curvature(state)
    assert [t.shape for t in u] == [(UNITS, 1), (1,)] and [t.shape for t in v] == [(UNITS, 1), (1,)]
    assert all(np.all(t >= 0) for t in u) and sum(float(t.sum()) for t in u) > 0
    assert metrics[-1]["client_work"]["accepted_clients"] == 3


def test_fedavg_full_participation_is_the_size_weighted_mean_of_local_readouts(fedavg, source):
    _, weights, _ = _run(fedavg, source, 1)
    local = _local_readouts(source)
    sizes = np.array([n for _, n in local], float)
    expected = [sum(w[i] * n for (w, _), n in zip(local, sizes)) / sizes.sum() for i in range(2)]
    for got, want in zip(weights, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_server_learning_rate_scales_the_mean_delta(model_fn, fedavg, source):
    initial = [np.asarray(w) for w in fedavg.get_model_weights(fedavg.initialize()).trainable]
    _, full, _ = _run(fedavg, source, 1)
    slow = learning_process(model_fn, client_learning_rate=CFG.learning_rate, server_learning_rate=0.1)
    _, got, _ = _run(slow, source, 1)
    for w0, w1, w in zip(initial, full, got):
        np.testing.assert_allclose(w, w0 + 0.1 * (w1 - w0), rtol=1e-5, atol=1e-7)


def test_fedcurv_state_is_the_sum_of_client_fishers_and_penalty_changes_training(model_fn, source):
    """One client, one batch: u = D(w0), v = D(w0) ⊙ w0 with D = (Σ ∂[log p + log(1−p)]/∂w)² / n."""
    process = learning_process(model_fn, client_learning_rate=CFG.learning_rate, penalty=1.0)
    w0 = [np.asarray(w) for w in process.get_model_weights(process.initialize()).trainable]
    one_batch = source.dataset("a", 0).take(1)
    state = process.next(process.initialize(), [one_batch]).state
    x, _ = next(iter(one_batch.as_numpy_iterator()))
    s = x.reshape(-1, UNITS).astype(np.float64)
    p = 1 / (1 + np.exp(-(s @ w0[0] + w0[1])))
    g_kernel = ((1 - 2 * p) * s).sum(axis=0)[:, None]
    g_bias = (1 - 2 * p).sum(axis=0)
    u, v = curvature(state)
    np.testing.assert_allclose(u[0], g_kernel ** 2 / len(x), rtol=1e-4)
    np.testing.assert_allclose(u[1], g_bias ** 2 / len(x), rtol=1e-4)
    np.testing.assert_allclose(v[0], u[0] * w0[0], rtol=1e-4, atol=1e-8)
    # with u, v non-zero at the server, a positive penalty changes the next round's training
    zero = learning_process(model_fn, client_learning_rate=CFG.learning_rate, penalty=0.0)
    data = source.datasets(IDS, 1)
    w_pen = process.get_model_weights(process.next(state, data).state).trainable
    w_zero = zero.get_model_weights(zero.next(zero.set_model_weights(
        zero.initialize(), process.get_model_weights(state)), data).state).trainable
    assert not np.allclose(np.asarray(w_pen[0]), np.asarray(w_zero[0]))


def test_curvature_penalty_gradient_is_the_gradient_of_the_thesis_penalty():
    rng = np.random.default_rng(1)
    w, u, v, ub, vb = (tf.constant(rng.normal(size=(4, 1)).astype(np.float32)) for _ in range(5))
    with tf.GradientTape() as tape:
        tape.watch(w)
        penalty = tf.reduce_sum(w ** 2 * (u - ub) - 2 * w * (v - vb))  # thesis Listing 3.7
    (got,) = curvature_penalty_gradient([w], [u], [v], [ub], [vb])
    np.testing.assert_allclose(got.numpy(), tape.gradient(penalty, w).numpy(), rtol=1e-6)


def test_client_filter_rejected_clients_contribute_nothing(model_fn, fedavg, source):
    # each client's bias delta alone (FedAvg of one client = that client's delta)
    deltas = {}
    w0 = np.asarray(fedavg.get_model_weights(fedavg.initialize()).trainable[1])
    for cid in IDS:
        _, w, _ = _run(fedavg, source, 1, ids=(cid,))
        deltas[cid] = float((w0 - w[1])[0])
    ordered = sorted(IDS, key=deltas.get)
    threshold = (deltas[ordered[1]] + deltas[ordered[2]]) / 2  # rejects the client with the largest delta
    filtered = learning_process(model_fn, client_learning_rate=CFG.learning_rate,
                                client_filter=lambda kernel, bias: tf.reduce_sum(bias) < threshold)
    _, got, metrics = _run(filtered, source, 1)
    _, want, _ = _run(fedavg, source, 1, ids=tuple(c for c in IDS if c != ordered[2]))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert metrics[0]["client_work"]["accepted_clients"] == 2 and metrics[0]["client_work"]["clients"] == 3

    reject_all = learning_process(model_fn, client_learning_rate=CFG.learning_rate, penalty=1e-4,
                                  client_filter=lambda kernel, bias: tf.constant(0))
    state, w, metrics = _run(reject_all, source, 1)
    np.testing.assert_array_equal(w[0], np.asarray(reject_all.get_model_weights(reject_all.initialize()).trainable[0]))
    assert metrics[0]["client_work"]["accepted_clients"] == 0
    assert all(np.all(t == 0) for t in curvature(state)[0])


def test_bad_settings_are_named_by_the_config():
    with pytest.raises(ValueError, match="server_lr"):
        FedAvgConfig(model=CFG, server_lr=0.0)
    with pytest.raises(ValueError, match="penalty"):
        FedCurvConfig(model=CFG, penalty=-1.0)
