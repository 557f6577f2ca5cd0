"""How the simulated round combines the clients' values: TFF's mean, sum and DP release in one process.

:class:`SimulatedAggregation` is the single-process counterpart of
:class:`~tff_esn.privacy.learning.LearningAggregation` for
:class:`~tff_esn.federated.simulation.SimulatedProcess`: what the server does with each value a
FedAvg/FedCurv client sends.

* ``model``, the mean of the model updates: :class:`WeightedMean` (TFF's ``MeanFactory``,
  ``Σ_k w_k Δ_k / Σ_k w_k``) or, under DP, :class:`PrivateRelease` of
  :meth:`LearningPrivacy.query <tff_esn.privacy.learning.LearningPrivacy.query>` (the unweighted
  mean: each client's update clipped to C, Gaussian noise on the sum, divided by the clients per
  round; fixed or adaptive clip);
* ``curvature``, FedCurv's ``(u_b, v_b)`` (thesis eq. 2.18): :class:`Sum` (TFF's ``SumFactory``)
  or, under DP, :class:`PrivateRelease` of
  :meth:`LearningPrivacy.curvature_query <tff_esn.privacy.learning.LearningPrivacy.curvature_query>`,
  the second part of the joint release;
* ``metrics``: whether the clients' training metrics are released (under DP they are withheld,
  as :func:`~tff_esn.privacy.learning.withheld_metrics` does on the TFF path).

Each aggregation has ``initialize()`` — its state, a nest of numpy arrays that is part of the
process state (the DP query's global state with its noise seed), so checkpoints and resume keep
the noise stream — and ``next(values, weights, state) -> (result, new state, measurements)``,
traced into the round's ``tf.function`` with one value per client in the clients' order. The
measurements are TFF's: ``MeanFactory``'s ``mean_value``/``mean_weight``, ``SumFactory``'s
``()``, ``DifferentiallyPrivateFactory``'s ``dp_query_metrics`` (the adaptive clip ``clip``)
and ``dp``. Secure aggregation is a protocol between TFF's clients and server and stays on the
TFF path.
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
