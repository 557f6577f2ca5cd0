"""Client work of FedAvg and FedCurv on the thesis readout, with a client filter hook (thesis Alg. 1–4).

TFF's model-delta client work (update = initial − trained weights, weighted by the examples); FedCurv (Alg. 2)
adds the penalty's gradient and sends ``(u_b, v_b)`` for ``u = Σ_j D_j``, ``v = Σ_j D_j w_j`` (eq. 2.18); a
rejected client (Alg. 3–4) sends zero update and zero weight.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from tff_esn.privacy.learning import LearningAggregation
from tff_esn.runtime import load_tff

tff = load_tff()

ClientFilter = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]

_EPSILON = 1e-7


def log_likelihood(predictions: tf.Tensor, targets: tf.Tensor | None = None) -> tf.Tensor:
    """Every class log-probability of every prediction, summed (thesis Alg. 2 line 19): ``Σ_k log p_k``
    (K softmax outputs), ``Σ [log p + log(1 − p)]`` (one sigmoid), or ``−½ Σ (y − ŷ)²`` for real ``targets``."""
    if targets is not None:
        return -0.5 * tf.reduce_sum(tf.square(tf.cast(targets, predictions.dtype) - predictions))
    p = tf.clip_by_value(predictions, _EPSILON, 1.0 - _EPSILON)
    if predictions.shape[-1] != 1:
        return tf.reduce_sum(tf.math.log(p))
    return tf.reduce_sum(tf.math.log(p)) + tf.reduce_sum(tf.math.log(1.0 - p))


def fisher_diagonal(log_likelihood_gradients, length: tf.Tensor) -> tuple[tf.Tensor, ...]:
    """``D_b = (∇_w log-likelihood)² / length(b)`` (thesis Alg. 2 line 20, Listing 3.6)."""
    length = tf.cast(length, tf.float32)
    return tuple(tf.square(g) / length for g in log_likelihood_gradients)


def curvature_penalty_gradient(weights, u, v, u_b, v_b) -> tuple[tf.Tensor, ...]:
    """∇_w of the penalty ``Σ (w² ⊙ (u − u_b) − 2 w ⊙ (v − v_b))`` (thesis Alg. 2 lines 21–26, eq. 2.17):
    ``2 w ⊙ (u − u_b) − 2 (v − v_b)``, the other clients' aggregates constant (DEVIATIONS.md)."""
    return tuple(2.0 * w * (uu - ub) - 2.0 * (vv - vb) for w, uu, vv, ub, vb in zip(weights, u, v, u_b, v_b))


def nonnegative(u):
    """``max(u, 0)``: a Fisher diagonal is ≥ 0 (post-processing of a noisy DP sum)."""
    return tf.nest.map_structure(lambda t: tf.maximum(t, 0.0), u)


_nonnegative = tff.tensorflow.computation(nonnegative)


def client_optimizer(name: str, learning_rate: float) -> tff.learning.optimizers.Optimizer:
    """The clients' optimizer: ``adam`` (thesis Table 6.2) or ``sgd`` (``build_sgdm`` without momentum)."""
    return tff.learning.optimizers.build_adam(learning_rate) if name == "adam" else tff.learning.optimizers.build_sgdm(
        learning_rate)


def _accepted(client_filter: ClientFilter | None, update) -> tf.Tensor:
    if client_filter is None:
        return tf.constant(True)
    verdict = tf.convert_to_tensor(client_filter(update[0], update[1]))
    if verdict.dtype != tf.bool:
        verdict = verdict > 0.5 if verdict.dtype.is_floating else tf.not_equal(verdict, 0)
    return tf.reshape(verdict, [])


class ClientUpdate(NamedTuple):
    """The client update (thesis ClientUpdate of Alg. 1–4) on a batched dataset (TFF) or on arrays (the simulation)."""

    on_batches: Callable
    on_arrays: Callable


def build_client_update(model_fn, optimizer, penalty: float | None, client_filter: ClientFilter | None,
                        real: bool = False) -> ClientUpdate:
    """The client's update that both runtimes run (:class:`ClientUpdate`); FedCurv's when ``penalty`` is given.
    ``on_arrays`` takes the client learning rate and the penalty as tensors (one trace serves every value);
    ``on_batches`` runs the optimizer's own rate and ``penalty``."""
    model = model_fn()
    curvature = penalty is not None

    def start(initial_weights, own, learning_rate=None):
        model.reset_metrics()
        model_weights = tff.learning.models.ModelWeights.from_model(model)
        tf.nest.map_structure(lambda a, b: a.assign(b), model_weights, initial_weights)
        if own is not None:
            for var, value in zip(model_weights.non_trainable, own):
                var.assign(value)
        trainable = tuple(model_weights.trainable)
        specs = tuple(tf.TensorSpec(w.shape, w.dtype) for w in trainable)
        zeros = tuple(tf.zeros_like(w) for w in trainable)
        opt_state = optimizer.initialize(specs)
        if learning_rate is not None:
            opt_state = collections.OrderedDict(opt_state, learning_rate=learning_rate)
        return trainable, (opt_state, tf.zeros([], tf.int64), zeros, zeros)

    def step(trainable, carry, batch, u, v, weight=penalty):
        opt_state, num_examples, u_b, v_b = carry
        ll = tf.zeros([])
        with tf.GradientTape(persistent=curvature) as tape:
            output = model.forward_pass(batch, training=True)
            if curvature:
                ll = log_likelihood(output.predictions, batch[1] if real else None)
        gradients = tape.gradient(output.loss, trainable)
        if curvature:
            u_b = fisher_diagonal(tape.gradient(ll, trainable), tf.shape(output.predictions)[0])
            v_b = tuple(d * w for d, w in zip(u_b, trainable))
            gradients = tuple(g + weight * p for g, p in
                              zip(gradients, curvature_penalty_gradient(trainable, u, v, u_b, v_b)))
        opt_state, updated = optimizer.next(opt_state, trainable, tuple(gradients))
        for var, value in zip(trainable, updated):
            var.assign(value)
        return opt_state, num_examples + tf.cast(output.num_examples, tf.int64), u_b, v_b

    def finish(initial_weights, trainable, carry):
        _, num_examples, u_b, v_b = carry
        update = tuple(a - b for a, b in zip(initial_weights.trainable, trainable))
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in update])
        valid = tf.logical_and(finite, _accepted(client_filter, update))
        keep = tf.cast(valid, tf.float32)
        update = tuple(tf.where(valid, t, tf.zeros_like(t)) for t in update)
        weight = keep * tf.cast(num_examples, tf.float32)
        u_b = tuple(keep * t for t in u_b)
        v_b = tuple(keep * t for t in v_b)
        return (tff.learning.templates.ClientResult(update=update, update_weight=weight),
                model.report_local_unfinalized_metrics(), tf.cast(valid, tf.int32), u_b, v_b)

    @tf.function
    def on_batches(initial_weights, data, u, v, reservoir=None):
        trainable, carry = start(initial_weights, None if reservoir is None else reservoir.get_single_element())
        for batch in iter(data):
            carry = step(trainable, carry, batch, u, v)
        return finish(initial_weights, trainable, carry)

    @tf.function
    def on_arrays(initial_weights, arrays, orders, batch_size, u, v, learning_rate, weight, reservoir=None):
        trainable, carry = start(initial_weights, reservoir, learning_rate)
        n = tf.shape(orders, out_type=tf.int64)[1]
        for order in orders:
            for first in tf.range(0, n, batch_size, dtype=tf.int64):
                rows = order[first:first + batch_size]
                carry = step(trainable, carry, tuple(tf.gather(t, rows) for t in arrays), u, v, weight)
        return finish(initial_weights, trainable, carry)

    return ClientUpdate(on_batches, on_arrays)


def build_readout_client_work(
    model_fn: Callable[[], tff.learning.models.VariableModel],
    optimizer: tff.learning.optimizers.Optimizer,
    *,
    penalty: float | None = None,
    client_filter: ClientFilter | None = None,
    client_reservoirs: bool = False,
    aggregation: LearningAggregation | None = None,
    real: bool = False,
) -> tff.learning.templates.ClientWorkProcess:
    """FedAvg (``penalty=None``) or FedCurv (penalty λ, thesis Alg. 2) client work around :func:`build_client_update`
    (u = v = 0 at start, Alg. 2 line 2)."""
    own_work = penalty is not None or client_filter is not None or client_reservoirs
    aggregation = aggregation or LearningAggregation(fedcurv=penalty is not None)
    curvature_factory = aggregation.curvature or tff.aggregators.SumFactory()
    with tf.Graph().as_default():
        model = model_fn()
        metrics_aggregation_fn = aggregation.metrics_aggregator()(model.metric_finalizers())
        weights_type = tff.learning.models.weights_type_from_model(model)
        data_type = tff.SequenceType(tff.types.tensorflow_to_type(model.input_spec))
        if client_reservoirs:
            own_type = tff.types.tensorflow_to_type(tuple(tf.TensorSpec(v.shape, v.dtype)
                                                          for v in model.non_trainable_variables))
            data_type = tff.StructWithPythonType([data_type, tff.SequenceType(own_type)], tuple)
        zeros = tuple(np.zeros(v.shape, np.float32) for v in model.trainable_variables)
        curvature_type = tff.types.tensorflow_to_type(collections.OrderedDict(
            u=tuple(tf.TensorSpec(v.shape, v.dtype) for v in model.trainable_variables),
            v=tuple(tf.TensorSpec(v.shape, v.dtype) for v in model.trainable_variables)))
    curvature_sum = curvature_factory.create(curvature_type) if penalty is not None else None

    @tff.federated_computation
    def init_fn():
        if penalty is None:
            return tff.federated_value((), tff.SERVER)
        return tff.federated_zip(collections.OrderedDict(
            u=tff.federated_value(zeros, tff.SERVER), v=tff.federated_value(zeros, tff.SERVER),
            aggregator=curvature_sum.initialize()))

    state_type = init_fn.type_signature.result.member
    broadcast_type = (state_type if penalty is None else
                      tff.StructWithPythonType([("u", state_type.u), ("v", state_type.v)], collections.OrderedDict))

    @tff.tensorflow.computation(broadcast_type, weights_type, data_type)
    def client_update_computation(state, weights, data):
        update_fn = build_client_update(model_fn, optimizer, penalty, client_filter, real).on_batches
        dataset, reservoir = data if client_reservoirs else (data, None)
        if penalty is None:
            empty = tuple(tf.zeros(w.shape, w.dtype) for w in weights.trainable)
            result, metrics, valid, _, _ = update_fn(weights, dataset, empty, empty, reservoir)
            return result, metrics, valid
        result, metrics, valid, u_b, v_b = update_fn(weights, dataset, tuple(state["u"]), tuple(state["v"]),
                                                     reservoir)
        return result, metrics, valid, collections.OrderedDict(u=u_b, v=v_b)

    @tff.federated_computation(
        init_fn.type_signature.result,
        tff.FederatedType(weights_type, tff.CLIENTS),
        tff.FederatedType(data_type, tff.CLIENTS),
    )
    def next_fn(state, weights, client_data):
        curvature = state if penalty is None else tff.federated_zip(collections.OrderedDict(u=state.u, v=state.v))
        state_at_clients = tff.federated_broadcast(curvature)
        outputs = tff.federated_map(client_update_computation, (state_at_clients, weights, client_data))
        measured = collections.OrderedDict(train=metrics_aggregation_fn(outputs[1]))
        if own_work:
            measured["accepted_clients"] = aggregation.count_sum(outputs[2])
        measured["clients"] = tff.federated_sum(tff.federated_value(1, tff.CLIENTS))
        new_state = state
        if penalty is not None:
            summed = curvature_sum.next(state.aggregator, outputs[3])
            new_state = tff.federated_zip(collections.OrderedDict(
                u=tff.federated_map(_nonnegative, summed.result.u), v=summed.result.v, aggregator=summed.state))
            measured["curvature"] = summed.measurements
        return tff.templates.MeasuredProcessOutput(new_state, outputs[0], tff.federated_zip(measured))

    return tff.learning.templates.ClientWorkProcess(init_fn, next_fn)
