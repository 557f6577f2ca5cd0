"""How the simulated round combines the clients' values: TFF's mean, sum and DP release in one process.

:class:`SimulatedAggregation` mirrors :class:`~tff_esn.privacy.learning.LearningAggregation`: ``model``
(:class:`WeightedMean`, ``Σ_k w_k Δ_k / Σ_k w_k``, or the DP :class:`PrivateRelease`), ``curvature``
(:class:`Sum` of FedCurv's ``(u_b, v_b)``, eq. 2.18, or its DP release) and ``metrics``; each has TFF's
``initialize()`` / ``next(values, weights, state)`` and measurements.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import tensorflow as tf
import tensorflow_privacy as tfp

from tff_esn.federated.configs import SIM_SECURE
from tff_esn.privacy.learning import CURVATURE_PARTS, LearningPrivacy, dp_release, fold_sum


class Aggregation(Protocol):
    """One aggregation of a simulated round (module docstring)."""

    def initialize(self) -> Any: ...

    def next(self, values: Sequence[Any], weights: Sequence[tf.Tensor], state: Any, like: Any = None
             ) -> tuple[Any, Any, Any]: ...


class WeightedMean:
    """TFF's weighted ``MeanFactory``: ``Σ_k w_k Δ_k / Σ_k w_k``, 0 when no client counts (Σ w = 0)."""

    def initialize(self) -> tuple:
        return ()

    def next(self, values, weights, state, like=None):
        summed = fold_sum([tf.nest.map_structure(lambda t, w=w: t * w, v) for v, w in zip(values, weights)], like)
        total = fold_sum(weights, tf.zeros([]))
        mean = tf.nest.map_structure(lambda t: tf.math.divide_no_nan(t, total), summed)
        return mean, state, collections.OrderedDict(mean_value=(), mean_weight=())


class Sum:
    """TFF's ``SumFactory``: ``Σ_k values[k]`` (the weights do not enter)."""

    def initialize(self) -> tuple:
        return ()

    def next(self, values, weights, state, like=None):
        del weights
        return fold_sum(values, like), state, ()


class PrivateRelease:
    """``tff.aggregators.DifferentiallyPrivateFactory(query)``'s round in one process, on the same
    tensorflow_privacy ``query`` object and in the order of the factory's ``next``:
    ``derive_sample_params`` of the global state, ``preprocess_record`` of every client's value
    (the clip), the sum of the records (the factory's ``SumFactory``), ``get_noised_result``
    (noise on the sum; ``NormalizedQuery``: divided by the clients per round) and
    ``derive_metrics`` of the new global state. The weights do not enter (every client counts
    once, as the sensitivity requires)."""

    def __init__(self, query: tfp.SumAggregationDPQuery):
        self._query = query

    def initialize(self) -> Any:
        """The query's initial global state (clip, noise std, noise seed) as numpy arrays."""
        return tf.nest.map_structure(np.asarray, self._query.initial_global_state())

    def next(self, values, weights, state, like=None):
        del weights
        result, new_state = dp_release(self._query, list(values), state, like)
        measurements = collections.OrderedDict(dp_query_metrics=self._query.derive_metrics(new_state), dp=())
        return result, new_state, measurements


@dataclasses.dataclass(frozen=True)
class SimulatedAggregation:
    """The aggregations of a simulated FedAvg/FedCurv round (module docstring).

    Attributes:
        model: the mean of the model updates.
        curvature: FedCurv's ``(u_b, v_b)`` sum (``None``: :class:`Sum`; FedAvg ignores it).
        metrics: the training metrics are summed and finalized (``False``: withheld, DP).
    """

    model: Aggregation = dataclasses.field(default_factory=WeightedMean)
    curvature: Aggregation | None = None
    metrics: bool = True


def simulated_aggregation(privacy: LearningPrivacy | None, clients_per_round: int, *,
                          curvature: bool) -> SimulatedAggregation:
    """The aggregations of ``privacy`` (:func:`~tff_esn.federated.training.learning_privacy`;
    ``None``: TFF's plain weighted mean and sum) for FedAvg (``curvature=False``) or FedCurv,
    the queries the TFF path's :meth:`LearningPrivacy.aggregation
    <tff_esn.privacy.learning.LearningPrivacy.aggregation>` builds for ``clients_per_round``."""
    if privacy is not None and privacy.secure:
        raise ValueError(SIM_SECURE)
    if privacy is None or not privacy.dp:
        return SimulatedAggregation()
    model = PrivateRelease(privacy.query(clients_per_round, CURVATURE_PARTS if curvature else 1))
    return SimulatedAggregation(model, PrivateRelease(privacy.curvature_query()) if curvature else None,
                                metrics=False)
