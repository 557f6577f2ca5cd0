"""The single-process runtime of a FedAvg/FedCurv learning process: TFF's arithmetic without TFF's runtime.

:class:`SimulatedProcess` runs a round as one traced ``tf.function``: the process's client update per sampled
client, its aggregations (weighted mean or DP release; FedCurv's ``u = max(Σ u_b, 0)``, ``v = Σ v_b``,
eq. 2.18), the server optimizer and the metrics. The client learning rate and FedCurv's penalty are entries of
the state, so one process (and its trace) serves every value of them (:meth:`SimulatedProcess.with_settings`).
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
from tensorflow.python.eager import context as eager_context

from tff_esn.federated.client_work import ClientUpdate, nonnegative
from tff_esn.federated.clients import ClientArrays, RoundArrays
from tff_esn.federated.simulated_aggregation import simulated
from tff_esn.privacy.learning import LearningAggregation
from tff_esn.runtime import load_tff

tff = load_tff()


class SimulatedOutput(NamedTuple):
    """One round's new state and measurements (``metrics["client_work"]`` as in the TFF process)."""

    state: collections.OrderedDict
    metrics: collections.OrderedDict


def _numpy(value: Any) -> np.ndarray:
    """A state leaf as a numpy array; Python floats (optimizer hyperparameters) as float32."""
    return np.asarray(value, np.float32) if isinstance(value, float) else np.asarray(value)


@contextlib.contextmanager
def _graphs_as_tff_runs_them() -> Iterator[None]:
    """Functions called in this block run without Grappler's remapper and arithmetic optimizer, as in TFF's worker."""
    ctx = eager_context.context()
    saved = ctx.function_call_options
    config = config_pb2.ConfigProto.FromString(saved.config_proto_serialized)
    rewrites = config.graph_options.rewrite_options
    rewrites.remapping = rewrites.arithmetic_optimization = rewriter_config_pb2.RewriterConfig.OFF
    ctx.function_call_options = eager_context.FunctionCallOptions(saved.executor_type, config)
    try:
        yield
    finally:
        ctx.function_call_options = saved


def _metrics_finalizer(model: tff.learning.models.VariableModel) -> Callable[[Any], collections.OrderedDict]:
    """The model's Keras metric finalizers as one function of the summed unfinalized metrics."""
    metrics = {metric.name: metric for metric in model.get_metrics()}

    def finalize(unfinalized):
        for name, values in unfinalized.items():
            for variable, value in zip(metrics[name].variables, values):
                variable.assign(value)
        return collections.OrderedDict((name, metrics[name].result()) for name in unfinalized)

    return finalize


def _array_spec(value: Any, any_axis: int | None = None) -> Any:
    """The ``TensorSpec`` of an array or tensor (``any_axis``: of any length); a Python value stays itself."""
    if not isinstance(value, (np.ndarray, np.generic, tf.Tensor)):
        return value
    shape = list(value.shape)
    if any_axis is not None:
        shape[any_axis] = None
    return tf.TensorSpec(shape, tf.as_dtype(value.dtype))


def _round_layout(*args) -> tuple:
    """The specs a round is traced with: clients' rows and epoch lengths of any size, the rest as given."""
    *state, data = args
    clients = tuple(ClientArrays(_array_spec(c.x, 0), _array_spec(c.y, 0), _array_spec(c.orders, 1),
                                 None if c.reservoir is None else tuple(_array_spec(w) for w in c.reservoir))
                    for c in data.clients)
    return (*tf.nest.map_structure(_array_spec, tuple(state)), RoundArrays(clients, data.batch_size))


class SimulatedProcess:
    """A learning process's round run in one process, with a TFF process's ``initialize`` / ``next``."""

    def __init__(self, model_fn: Callable[[], tff.learning.models.VariableModel], client_update: ClientUpdate,
                 server: tff.learning.optimizers.Optimizer, aggregation: LearningAggregation, *, curvature: bool,
                 client_reservoirs: bool, client_lr: float, penalty: float = 0.0):
        self._update, self._server = client_update.on_arrays, server
        self._settings = {"client_lr": client_lr, "penalty": penalty}
        model = model_fn()
        self._initial = tff.learning.models.ModelWeights.from_model(model)
        self._finalize = _metrics_finalizer(model)
        self._curvature = curvature
        self._mean, self._curvature_sum = simulated(aggregation)
        self._metrics_released = not aggregation.dp
        self._own_reservoirs = client_reservoirs
        self._round = tf.function(self._round_graph)
        self._traced: dict[tuple, Callable] = {}

    def initialize(self) -> collections.OrderedDict:
        """The initial weights and optimizer and aggregation states; FedCurv's ``u = v = 0`` (thesis Alg. 2 line 2)."""
        trainable = tuple(np.asarray(w) for w in self._initial.trainable)
        specs = tuple(tf.TensorSpec(w.shape, w.dtype) for w in trainable)
        state = collections.OrderedDict(
            trainable=trainable, non_trainable=tuple(np.asarray(w) for w in self._initial.non_trainable),
            server=tf.nest.map_structure(_numpy, self._server.initialize(specs)), aggregator=self._mean.initialize(),
            **{name: np.float32(value) for name, value in self._settings.items()})
        if self._curvature:
            state["u"] = tuple(np.zeros_like(w) for w in trainable)
            state["v"] = tuple(np.zeros_like(w) for w in trainable)
            state["curvature_aggregator"] = self._curvature_sum.initialize()
        return state

    @staticmethod
    def with_settings(state: collections.OrderedDict, *, client_lr: float, penalty: float = 0.0
                      ) -> collections.OrderedDict:
        """``state`` with the clients' learning rate and FedCurv's penalty set (the round's trace unchanged)."""
        return collections.OrderedDict(state, client_lr=np.float32(client_lr), penalty=np.float32(penalty))

    @staticmethod
    def get_model_weights(state: collections.OrderedDict) -> tff.learning.models.ModelWeights:
        """The server model of ``state``."""
        return tff.learning.models.ModelWeights(trainable=list(state["trainable"]),
                                                non_trainable=list(state["non_trainable"]))

    @staticmethod
    def set_model_weights(state: collections.OrderedDict,
                          weights: tff.learning.models.ModelWeights) -> collections.OrderedDict:
        """``state`` with the server model ``weights`` (TFF's ``LearningProcess.set_model_weights``)."""
        return collections.OrderedDict(state, trainable=tuple(np.asarray(w) for w in weights.trainable),
                                       non_trainable=tuple(np.asarray(w) for w in weights.non_trainable))

    def _round_graph(self, trainable, non_trainable, server, u, v, aggregators, settings, data: RoundArrays):
        """The round in TensorFlow: updates, mean, server step, FedCurv's ``u = max(Σ u_b, 0)``, ``v = Σ v_b``."""
        weights = tff.learning.models.ModelWeights(trainable=list(trainable), non_trainable=list(non_trainable))
        updates, update_weights, curvature, metrics, accepted = [], [], [], None, tf.zeros([], tf.int32)
        for client in data.clients:
            result, unfinalized, valid, u_b, v_b = self._update(weights, (client.x, client.y), client.orders,
                                                                data.batch_size, u, v, *settings, client.reservoir)
            updates.append(result.update)
            update_weights.append(result.update_weight)
            curvature.append(collections.OrderedDict(u=u_b, v=v_b))
            metrics = unfinalized if metrics is None else tf.nest.map_structure(tf.add, metrics, unfinalized)
            accepted += valid
        mean, model_state, measured = self._mean.next(updates, update_weights, aggregators["model"],
                                                      like=tuple(trainable))
        server, new_trainable = self._server.next(server, tuple(trainable), tuple(mean))
        train = self._finalize(metrics) if self._metrics_released else collections.OrderedDict()
        out = collections.OrderedDict(trainable=new_trainable, server=server, aggregator=model_state,
                                      measured=measured, accepted=accepted, train=train)
        if self._curvature:
            summed, out["curvature_aggregator"], out["curvature"] = self._curvature_sum.next(
                curvature, update_weights, aggregators["curvature"], like=collections.OrderedDict(u=u, v=v))
            out["u"], out["v"] = nonnegative(summed["u"]), summed["v"]
        return out

    def _traced_round(self, *args) -> collections.OrderedDict:
        """The round's concrete function for the layout of ``args`` (traced at its first round), called."""
        layout = _round_layout(*args)
        key = tuple(tf.nest.flatten(layout))
        if key not in self._traced:
            self._traced[key] = self._round.get_concrete_function(*layout)
        return self._traced[key](*args)

    def next(self, state: collections.OrderedDict, client_data: RoundArrays) -> SimulatedOutput:
        """One round over the sampled clients' ``client_data`` (``in_memory`` of a client source)."""
        if not client_data.clients and self._metrics_released:
            raise ValueError("client_data: a round needs at least one sampled client (a DP round, Poisson-sampled, "
                             "may have none).")
        if {c.reservoir is not None for c in client_data.clients} - {self._own_reservoirs}:
            raise ValueError(f"client_data: client_reservoirs={self._own_reservoirs} needs "
                             f"{'every' if self._own_reservoirs else 'no'} client to carry its own reservoir; "
                             "build the clients with reservoirs='different' for the first, 'same' for the second.")
        zeros = tuple(np.zeros_like(w) for w in state["trainable"])
        u, v = (state["u"], state["v"]) if self._curvature else (zeros, zeros)
        aggregators = {"model": state["aggregator"], "curvature": state.get("curvature_aggregator", ())}
        with _graphs_as_tff_runs_them():
            out = self._traced_round(state["trainable"], state["non_trainable"], state["server"], u, v, aggregators,
                                     (state["client_lr"], state["penalty"]), client_data)
        new_state = collections.OrderedDict((key, tf.nest.map_structure(_numpy, out[key]) if key in out else value)
                                            for key, value in state.items())
        work = collections.OrderedDict(train=out["train"], accepted_clients=int(out["accepted"]),
                                       clients=len(client_data.clients))
        if self._curvature:
            work["curvature"] = out["curvature"]
        return SimulatedOutput(new_state, collections.OrderedDict(client_work=work, aggregator=out["measured"]))
