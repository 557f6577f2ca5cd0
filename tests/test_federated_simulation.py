"""The single-process backend equals the TFF processes round by round: weights, u/v, metrics —
bit for bit for 2-class cached-state clients, to float32 rounding where the client arithmetic
meets the TFF worker's own exp/log/sigmoid/tanh kernels (tff_esn.federated.simulation)."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from tff_esn import ReservoirConfig
from tff_esn.data.sequences import ClientSequences
from tff_esn.federated import curvature, learning_process, sample_clients
from tff_esn.federated.client_work import build_client_update
from tff_esn.federated.clients import CachedStates, RawInputs
from tff_esn.federated.model import ThesisModelConfig, build_thesis_model, thesis_loss
from tff_esn.federated.simulation import SimulatedProcess

UNITS = 6
ROUNDS = 5
IDS = ("a", "b", "c", "d")


def _clients(seed: int, n_classes: int, ids=IDS) -> dict[str, ClientSequences]:
    rng = np.random.default_rng(seed)
    clients = {}
    for i, cid in enumerate(ids):
        n = 5 + 3 * i
        x = rng.normal(size=(n, 7, 2)).astype(np.float32)
        y = np.minimum((x[:, -1, 0] + 0.3 * rng.normal(size=n) > 0.2 * i).astype(np.int64)
                       + (x[:, -1, 1] > 0.8), n_classes - 1)
        clients[cid] = ClientSequences(x, y)
    return clients


def _source(seed: int, faithful: bool, reservoirs: str, n_classes: int, ids=IDS):
    model = ThesisModelConfig(reservoir=ReservoirConfig(units=UNITS, spectral_radius=0.9, seed=seed), batch_size=4,
                              learning_rate=0.05, state_mode="last",
                              class_weight=(1.0, 3.0) if n_classes == 2 else (1.0, 2.0, 3.0))
    clients = _clients(seed, n_classes, ids)
    if faithful:
        return model, RawInputs(clients, model, seed=seed, noise_std=0.3, reservoirs=reservoirs, shuffle=True)
    return model, CachedStates(clients, model, seed=seed, noise_std=0.3, reservoirs=reservoirs, shuffle=True)


def _model_fn(model: ThesisModelConfig, source, faithful: bool):
    first = source.dataset(source.ids[0], 0)
    spec = (first[0] if isinstance(first, tuple) else first).element_spec
    n_inputs = 2 if faithful else UNITS

    def fn():
        keras_model = build_thesis_model(n_inputs, model, readout_only=not faithful)
        return tff.learning.models.from_keras_model(keras_model, loss=thesis_loss(model), input_spec=spec)

    return fn


def _rounds(process, data_fn, seed: int, curvature_of, ids=IDS, per_round=3, rounds=ROUNDS):
    """Per round: trainable weights, (u, v) or None, train loss, accepted clients."""
    state = process.initialize()
    out = []
    for r in range(rounds):
        sampled = sample_clients(ids, per_round, seed, r)
        result = process.next(state, data_fn(sampled, r))
        state = result.state
        work = result.metrics["client_work"]
        out.append(([np.asarray(w) for w in process.get_model_weights(state).trainable], curvature_of(state),
                     float(work["train"]["loss"]), int(work.get("accepted_clients", len(sampled)))))
    return out


CASES = [
    # seed, algorithm, penalty, server lr, states, reservoirs, filter threshold (None: no filter), classes
    (0, "fedavg", None, 1.0, "cached", "same", None, 2),
    (1, "fedavg", None, 0.1, "cached", "different", None, 2),
    (2, "fedcurv", 0.0, 1.0, "cached", "same", None, 2),
    (3, "fedcurv", 1e-2, 0.01, "cached", "different", 0.8, 2),
    (4, "fedavg", None, 1.0, "cached", "same", 1.8, 3),
    pytest.param(5, "fedcurv", 1e-2, 0.1, "faithful", "different", None, 2, marks=pytest.mark.slow),  # ≈ 1 min tracing
    (6, "fedavg", None, 0.1, "faithful", "same", None, 3),
]


@pytest.mark.parametrize("seed, algorithm, penalty, server_lr, states, reservoirs, with_filter, n_classes", CASES)
def test_simulation_equals_tff_round_by_round(seed, algorithm, penalty, server_lr, states, reservoirs, with_filter,
                                              n_classes):
    faithful = states == "faithful"
    model, source = _source(seed, faithful, reservoirs, n_classes)
    model_fn = _model_fn(model, source, faithful)
    # a threshold on the kernel delta's L1 norm between the smaller clients' and the largest client's
    client_filter = (lambda kernel, bias: tf.reduce_sum(tf.abs(kernel)) < with_filter) if with_filter else None
    own = faithful and reservoirs == "different"
    kwargs = dict(client_learning_rate=model.learning_rate, server_learning_rate=server_lr,
                  client_filter=client_filter, client_reservoirs=own)
    if algorithm == "fedcurv":
        reference = learning_process(model_fn, penalty=penalty, **kwargs)
        want = _rounds(reference, source.datasets, seed, curvature)
        got = _rounds(learning_process(model_fn, runtime="sim", penalty=penalty, **kwargs), source.in_memory, seed,
                      lambda s: (list(s["u"]), list(s["v"])))
    else:
        want = _rounds(learning_process(model_fn, **kwargs), source.datasets, seed, lambda s: None)
        got = _rounds(learning_process(model_fn, runtime="sim", **kwargs), source.in_memory, seed, lambda s: None)
    accepted = [w[3] for w in want]
    if with_filter:
        assert 0 < sum(accepted) < 3 * ROUNDS, accepted  # the filter rejected some clients, not all
    if n_classes == 2 and not faithful:
        _assert_bitwise(want, got)
    else:  # softmax/tanh kernels of TFF's worker differ from TensorFlow's in the last bit (docs/algorithms/fedavg.md)
        for r, ((w_tff, uv_tff, loss_tff, acc_tff), (w_sim, uv_sim, loss_sim, acc_sim)) in enumerate(zip(want, got)):
            for a, b in zip(w_tff, w_sim):
                np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-6, err_msg=f"round {r + 1} weights")
            if uv_tff is not None:
                for a, b in zip(uv_tff[0] + uv_tff[1], uv_sim[0] + uv_sim[1]):
                    np.testing.assert_allclose(b, a, rtol=2e-5, atol=1e-7, err_msg=f"round {r + 1} u/v")
            assert loss_sim == pytest.approx(loss_tff, rel=2e-5), f"round {r + 1} loss"
            assert acc_sim == acc_tff
    if algorithm == "fedcurv" and penalty:
        assert any(np.any(u != 0) for u in want[-1][1][0])  # u/v were exercised


def _assert_bitwise(want, got):
    """Every round's weights, u/v, training loss and accepted clients are the same floats."""
    assert len(want) == len(got)
    for r, ((w_tff, uv_tff, loss_tff, acc_tff), (w_sim, uv_sim, loss_sim, acc_sim)) in enumerate(zip(want, got)):
        for a, b in zip(w_tff, w_sim):
            np.testing.assert_array_equal(b, a, err_msg=f"round {r + 1} weights")
        if uv_tff is not None:
            for a, b in zip(uv_tff[0] + uv_tff[1], uv_sim[0] + uv_sim[1]):
                np.testing.assert_array_equal(b, a, err_msg=f"round {r + 1} u/v")
        assert loss_sim == loss_tff, f"round {r + 1} loss"
        assert acc_sim == acc_tff, f"round {r + 1} accepted clients"


MANY = tuple(f"c{i:02d}" for i in range(12))
FOLDS = [  # seed, clients per round, algorithm, server lr: the sums over 1 to 12 clients
    (12, 12, "fedavg", 1.0),
    *[pytest.param(seed, m, algorithm, lr, marks=pytest.mark.slow) for seed, m, algorithm, lr in (
        (10, 1, "fedavg", 1.0), (11, 7, "fedcurv", 0.1), (13, 2, "fedcurv", 1.0), (14, 3, "fedavg", 0.1),
        (15, 4, "fedcurv", 0.01), (16, 5, "fedavg", 1.0), (17, 6, "fedcurv", 0.1), (18, 8, "fedavg", 1.0),
        (19, 9, "fedcurv", 1.0), (20, 10, "fedavg", 0.1), (21, 11, "fedcurv", 0.01), (22, 12, "fedcurv", 1.0),
        (23, 12, "fedavg", 0.01))],
]


@pytest.mark.parametrize("seed, per_round, algorithm, server_lr", FOLDS)
def test_rounds_of_1_to_12_clients_are_tffs_bit_for_bit(seed, per_round, algorithm, server_lr):
    model, source = _source(seed, False, "different" if seed % 2 else "same", 2, MANY)
    model_fn = _model_fn(model, source, False)
    kwargs = dict(client_learning_rate=model.learning_rate, server_learning_rate=server_lr)
    penalty = {"penalty": 1e-2} if algorithm == "fedcurv" else {}
    reference = learning_process(model_fn, **kwargs, **penalty)
    uv_tff = curvature if penalty else (lambda s: None)
    uv_sim = (lambda s: (list(s["u"]), list(s["v"]))) if penalty else (lambda s: None)
    run = dict(ids=MANY, per_round=per_round, rounds=2)
    _assert_bitwise(_rounds(reference, source.datasets, seed, uv_tff, **run),
                    _rounds(learning_process(model_fn, runtime="sim", **kwargs, **penalty), source.in_memory, seed,
                            uv_sim, **run))


def _fold(values, weights):
    """``Σ w_k x_k / Σ w_k`` as the simulation sums: from zero, one client after another, in float32."""
    total, summed = np.float32(0), np.zeros_like(values[0])
    for x, w in zip(values, weights):
        summed, total = summed + x * w, total + w
    return summed / total if total else np.zeros_like(summed)


def test_tffs_weighted_mean_sums_the_clients_from_zero_in_their_order():
    """The order the simulation reproduces: TFF's MeanFactory, run by this package's runtime, is
    the float32 fold from zero over the clients in order (any other order would differ)."""
    n = 64
    process = tff.aggregators.MeanFactory().create(tff.TensorType(np.float32, [n]), tff.TensorType(np.float32))

    @tff.federated_computation(tff.FederatedType(tff.TensorType(np.float32, [n]), tff.CLIENTS),
                               tff.FederatedType(np.float32, tff.CLIENTS))
    def mean(values, weights):
        return process.next(process.initialize(), values, weights).result

    rng = np.random.default_rng(0)
    other_orders_differ = 0
    for clients in range(1, 13):
        values = [(rng.normal(size=n) * 10.0 ** rng.uniform(-3, 3, n)).astype(np.float32) for _ in range(clients)]
        weights = [np.float32(rng.integers(0, 40) if clients > 1 else 7) for _ in range(clients)]
        got = np.asarray(mean(values, weights))
        np.testing.assert_array_equal(got, _fold(values, weights), err_msg=f"{clients} clients")
        other_orders_differ += not np.array_equal(got, _fold(values[::-1], weights[::-1]))
    assert other_orders_differ >= 6


def test_a_round_without_accepted_clients_keeps_the_weights_and_counts_no_client():
    model, source = _source(0, False, "same", 2)
    process = learning_process(_model_fn(model, source, False), runtime="sim",
                               client_learning_rate=model.learning_rate,
                               client_filter=lambda kernel, bias: tf.constant(False))
    state = process.initialize()
    result = process.next(state, source.in_memory(IDS, 0))
    for before, after in zip(state["trainable"], result.state["trainable"]):
        np.testing.assert_array_equal(after, before)
    assert result.metrics["client_work"]["accepted_clients"] == 0
    assert result.metrics["client_work"]["clients"] == len(IDS)


def test_a_round_is_traced_once_per_number_of_clients_whatever_their_sizes():
    model, source = _source(0, False, "same", 2)
    process = learning_process(_model_fn(model, source, False), runtime="sim",
                               client_learning_rate=model.learning_rate)
    state = process.initialize()
    for r, sampled in enumerate([("a", "b", "c"), ("b", "c", "d"), ("d", "a", "c")]):  # 5–14 sequences each
        state = process.next(state, source.in_memory(sampled, r)).state
    assert process._round.experimental_get_tracing_count() == 1
    process.next(state, source.in_memory(("a", "d"), 3))
    process.next(state, source.in_memory(("b", "c"), 4))
    assert process._round.experimental_get_tracing_count() == 2


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_one_trace_serves_every_client_rate_and_penalty_with_a_fresh_processs_numbers(optimizer):
    model, source = _source(2, False, "same", 2)
    model = model.replace(optimizer=optimizer)

    def process_of(lr, penalty):
        return learning_process(_model_fn(model, source, False), runtime="sim", client_learning_rate=lr,
                                penalty=penalty, optimizer=optimizer)

    shared = process_of(0.05, 0.0)
    for lr, penalty in ((0.05, 0.0), (0.2, 1e-2), (0.01, 1.0)):
        fresh, state = process_of(lr, penalty), None
        for process in (fresh, shared):
            state = process.with_settings(process.initialize(), client_lr=lr, penalty=penalty)
            for r in range(3):
                state = process.next(state, source.in_memory(IDS[r:r + 2], r)).state
            if process is fresh:
                want = state
        for key in ("trainable", "u", "v"):
            for a, b in zip(want[key], state[key]):
                np.testing.assert_array_equal(b, a, err_msg=f"{key} at lr {lr}, penalty {penalty}")
    assert shared._round.experimental_get_tracing_count() == 1


def test_clients_must_carry_their_own_reservoir_exactly_when_the_process_expects_it():
    model, source = _source(6, True, "same", 3)
    process = learning_process(_model_fn(model, source, True), runtime="sim",
                               client_learning_rate=model.learning_rate,
                               client_reservoirs=True)
    with pytest.raises(ValueError, match="client_reservoirs=True needs every client"):
        process.next(process.initialize(), source.in_memory(IDS[:2], 0))


def test_the_client_update_on_arrays_equals_it_on_tffs_batches_over_several_epochs():
    model = _source(7, False, "same", 2)[0].replace(epochs=3)
    source = CachedStates(_clients(7, 2), model, seed=7, noise_std=0.3, shuffle=True)
    update = build_client_update(_model_fn(model, source, False), tff.learning.optimizers.build_adam(0.05), 1e-2,
                                 None)
    initial = tff.learning.models.ModelWeights.from_model(_model_fn(model, source, False)())
    initial = tff.learning.models.ModelWeights(trainable=[tf.constant(w) for w in initial.trainable],
                                               non_trainable=[tf.constant(w) for w in initial.non_trainable])
    rng = np.random.default_rng(0)
    u = tuple(tf.constant(rng.uniform(size=w.shape).astype(np.float32)) for w in initial.trainable)
    v = tuple(tf.constant(rng.normal(size=w.shape).astype(np.float32)) for w in initial.trainable)
    for cid in IDS:  # 5, 8, 11, 14 sequences, batch 4: a partial last batch in every epoch but one client's
        want = update.on_batches(initial, source.dataset(cid, 2), u, v)
        client = source.in_memory([cid], 2).clients[0]
        got = update.on_arrays(initial, (client.x, client.y), client.orders, model.batch_size, u, v,
                               tf.constant(0.05), tf.constant(1e-2))
        assert client.orders.shape == (3, source.sizes[cid])
        assert float(got[0].update_weight) == float(want[0].update_weight) == 3 * source.sizes[cid]
        for a, b in zip(tf.nest.flatten((want[0].update, want[1], want[3], want[4])),
                        tf.nest.flatten((got[0].update, got[1], got[3], got[4]))):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6, atol=1e-7)


def test_auto_is_the_default_backend_and_sim_is_refused_where_only_tff_reaches():
    from tff_esn.federated.configs import FedAvgConfig, FedCurvConfig, resolve_backend
    from tff_esn.privacy.config import PrivacyConfig

    assert FedAvgConfig().backend == FedCurvConfig().backend == "auto" and resolve_backend("auto") == "sim"
    assert resolve_backend("sim") == "sim" and resolve_backend("auto", secure=True) == "tff"
    with pytest.raises(ValueError, match=r"expected one of \('auto', 'tff', 'sim'\), got 'numpy'"):
        FedAvgConfig(backend="numpy")
    assert FedCurvConfig(privacy=PrivacyConfig(secure_aggregation=True)).backend == "auto"  # resolved to tff by the run
    with pytest.raises(ValueError, match=r"'sim' has no secure aggregation .*; run --secure-aggregation with "
                                         r"--backend tff\."):
        FedCurvConfig(backend="sim", privacy=PrivacyConfig(secure_aggregation=True))
