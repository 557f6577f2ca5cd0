"""FedAvg with a server learning rate and FedCurv, composed from TFF's learning templates.

:func:`build_fedavg`: TFF's weighted FedAvg with a server SGD learning rate (thesis §6.2, Alg. 1);
:func:`build_fedcurv`: ``compose_learning_process`` of FedAvg's distributor, the FedCurv client work, the
weighted mean and the server-optimizer finalizer (thesis Alg. 2; penalty 0 is FedAvg's arithmetic).
``aggregation`` says how each value a client sends reaches the server (plain, secure or DP).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tff_esn.federated.client_work import ClientFilter, build_readout_client_work, client_optimizer
from tff_esn.privacy.learning import LearningAggregation
from tff_esn.runtime import load_tff

tff = load_tff()

ModelFn = Callable[[], tff.learning.models.VariableModel]


def _check_rate(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: expected a finite number > 0, got {value!r}.")
    return float(value)


def _compose(model_fn: ModelFn, client_optimizer, server_learning_rate: float, *, penalty: float | None,
             client_filter: ClientFilter | None, client_reservoirs: bool,
             aggregation: LearningAggregation | None = None, real: bool = False) -> tff.learning.templates.LearningProcess:
    """FedAvg's distributor, mean aggregator (or ``aggregation.model``) and SGD finalizer around our client work."""

    @tff.tensorflow.computation
    def initial_model_weights_fn():
        return tff.learning.models.ModelWeights.from_model(model_fn())

    weights_type = initial_model_weights_fn.type_signature.result
    aggregator = (aggregation and aggregation.model) or tff.aggregators.MeanFactory()
    if isinstance(aggregator, tff.aggregators.UnweightedAggregationFactory):
        aggregator = tff.aggregators.as_weighted_aggregator(aggregator)
    return tff.learning.templates.compose_learning_process(
        initial_model_weights_fn,
        tff.learning.templates.build_broadcast_process(weights_type),
        build_readout_client_work(model_fn, client_optimizer, penalty=penalty, client_filter=client_filter,
                                  client_reservoirs=client_reservoirs, aggregation=aggregation, real=real),
        aggregator.create(weights_type.trainable, tff.TensorType(np.float32)),
        tff.learning.templates.build_apply_optimizer_finalizer(
            tff.learning.optimizers.build_sgdm(learning_rate=server_learning_rate), weights_type),
    )


def build_fedavg(model_fn: ModelFn, *, client_learning_rate: float, server_learning_rate: float = 1.0,
                 client_filter: ClientFilter | None = None, client_reservoirs: bool = False,
                 aggregation: LearningAggregation | None = None,
                 optimizer: str = "adam") -> tff.learning.templates.LearningProcess:
    """FedAvg with a server learning rate (thesis §6.2, Alg. 1; Alg. 3 with ``client_filter``).

    Args:
        model_fn: no-arg function building a new TFF model (thesis readout).
        client_learning_rate: the clients' learning rate η (Table 6.2: Adam, 0.1).
        server_learning_rate: the server SGD's learning rate (thesis: 1.0, 0.1, 0.01, 0.001).
        client_filter: optional accept/reject rule on the client's readout delta.
        client_reservoirs: client data is ``(batches, reservoir)``; each client trains with its own
            reservoir (thesis Table 6.5).
        aggregation: how each client value reaches the server (``None``: plain).
        optimizer: ``adam`` (thesis) or ``sgd`` (:func:`~tff_esn.federated.client_work.client_optimizer`).
    """
    client_opt = client_optimizer(optimizer, _check_rate("client_learning_rate", client_learning_rate))
    server_learning_rate = _check_rate("server_learning_rate", server_learning_rate)
    if client_filter is None and not client_reservoirs:
        aggregation = aggregation or LearningAggregation()
        unweighted = isinstance(aggregation.model, tff.aggregators.UnweightedAggregationFactory)
        build = (tff.learning.algorithms.build_unweighted_fed_avg if unweighted
                 else tff.learning.algorithms.build_weighted_fed_avg)
        return build(
            model_fn, client_optimizer_fn=client_opt,
            server_optimizer_fn=tff.learning.optimizers.build_sgdm(learning_rate=server_learning_rate),
            model_aggregator=aggregation.model, metrics_aggregator=aggregation.metrics,
            loop_implementation=tff.learning.LoopImplementation.DATASET_ITERATOR,
        )
    return _compose(model_fn, client_opt, server_learning_rate, penalty=None, client_filter=client_filter,
                    client_reservoirs=client_reservoirs, aggregation=aggregation)


def build_fedcurv(model_fn: ModelFn, *, client_learning_rate: float, server_learning_rate: float = 1.0,
                  penalty: float = 1e-4, client_filter: ClientFilter | None = None,
                  client_reservoirs: bool = False, aggregation: LearningAggregation | None = None,
                  optimizer: str = "adam", real: bool = False) -> tff.learning.templates.LearningProcess:
    """FedCurv (thesis ch. 3, Alg. 2; Alg. 4 with ``client_filter``).

    Args:
        penalty: the curvature penalty weight λ (thesis Listing 3.7: 1e-4; ≥ 0).
        real: a linear readout of real targets: the Fisher of the mean squared error
            (:func:`~tff_esn.federated.client_work.log_likelihood`).
        Others: as :func:`build_fedavg`.

    The state's ``client_work`` holds ``{"u": ..., "v": ..., "aggregator": ...}`` (see :func:`curvature`).
    """
    client_opt = client_optimizer(optimizer, _check_rate("client_learning_rate", client_learning_rate))
    server_learning_rate = _check_rate("server_learning_rate", server_learning_rate)
    if not isinstance(penalty, (int, float)) or isinstance(penalty, bool):
        raise ValueError(f"penalty: expected a finite number ≥ 0, got {penalty!r}.")
    return _compose(model_fn, client_opt, server_learning_rate, penalty=float(penalty),
                    client_filter=client_filter, client_reservoirs=client_reservoirs,
                    aggregation=aggregation, real=real)


def curvature(state) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """FedCurv's server aggregates ``(u, v)`` (thesis eq. 2.18) from a process state."""
    work = state.client_work
    if not work or "u" not in work:
        raise ValueError("curvature: this process state has no u/v (it is not a FedCurv state).")
    return [np.asarray(t) for t in work["u"]], [np.asarray(t) for t in work["v"]]
