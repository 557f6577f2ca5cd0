"""FedAvg with a server learning rate and FedCurv: one learning process, run by TFF or in one process.

The process composes FedAvg's distributor, a client work, the weighted mean (or ``aggregation.model``) and
the server SGD finalizer (thesis §6.2, Alg. 1); FedCurv (Alg. 2) is the client work with the curvature
penalty and its ``(u, v)`` aggregate (``u = max(Σ u_b, 0)``, ``v = Σ v_b``, eq. 2.18), as TFF composes FedProx.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tff_esn.federated.client_work import ClientFilter, build_client_update, build_readout_client_work, client_optimizer
from tff_esn.federated.configs import FedAvgConfig
from tff_esn.federated.simulation import SimulatedProcess
from tff_esn.privacy.learning import LearningAggregation, LearningPrivacy
from tff_esn.runtime import load_tff

tff = load_tff()

ModelFn = Callable[[], tff.learning.models.VariableModel]


def learning_process(model_fn: ModelFn, *, client_learning_rate: float, server_learning_rate: float = 1.0,
                     penalty: float | None = None, client_filter: ClientFilter | None = None,
                     client_reservoirs: bool = False, aggregation: LearningAggregation | None = None,
                     optimizer: str = "adam", real: bool = False, runtime: str = "tff"):
    """FedAvg (``penalty=None``, Alg. 1; Alg. 3 with ``client_filter``) or FedCurv (penalty λ, Alg. 2; Alg. 4)
    on ``runtime`` ``tff`` (a TFF ``LearningProcess``) or ``sim`` (:class:`SimulatedProcess`)."""
    aggregation = aggregation or LearningAggregation(fedcurv=penalty is not None)
    client_opt = client_optimizer(optimizer, client_learning_rate)
    server = tff.learning.optimizers.build_sgdm(learning_rate=server_learning_rate)
    if runtime == "sim":
        return SimulatedProcess(model_fn, build_client_update(model_fn, client_opt, penalty, client_filter, real),
                                server, aggregation, curvature=penalty is not None, client_reservoirs=client_reservoirs,
                                client_lr=client_learning_rate, penalty=penalty or 0.0)

    @tff.tensorflow.computation
    def initial_model_weights_fn():
        return tff.learning.models.ModelWeights.from_model(model_fn())

    weights_type = initial_model_weights_fn.type_signature.result
    aggregator = aggregation.model or tff.aggregators.MeanFactory()
    if isinstance(aggregator, tff.aggregators.UnweightedAggregationFactory):
        aggregator = tff.aggregators.as_weighted_aggregator(aggregator)
    return tff.learning.templates.compose_learning_process(
        initial_model_weights_fn,
        tff.learning.templates.build_broadcast_process(weights_type),
        build_readout_client_work(model_fn, client_opt, penalty=penalty, client_filter=client_filter,
                                  client_reservoirs=client_reservoirs, aggregation=aggregation, real=real),
        aggregator.create(weights_type.trainable, tff.TensorType(np.float32)),
        tff.learning.templates.build_apply_optimizer_finalizer(server, weights_type))


def build_process(config: FedAvgConfig, model_fn: ModelFn, *, privacy: LearningPrivacy | None = None,
                  client_filter: ClientFilter | None = None, client_reservoirs: bool = False, runtime: str = "tff"):
    """The :func:`learning_process` of ``config`` with the aggregations of ``privacy``."""
    aggregation = (privacy or LearningPrivacy()).aggregation(config.clients_per_round, curvature=config.curvature)
    return learning_process(model_fn, client_learning_rate=config.model.learning_rate,
                            server_learning_rate=config.server_lr, optimizer=config.model.optimizer,
                            penalty=config.penalty if config.curvature else None, client_filter=client_filter,
                            client_reservoirs=client_reservoirs, aggregation=aggregation, real=config.model.real,
                            runtime=runtime)


def curvature(state) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """FedCurv's server aggregates ``(u, v)`` (thesis eq. 2.18) from a process state."""
    work = state.client_work
    return [np.asarray(t) for t in work["u"]], [np.asarray(t) for t in work["v"]]
