"""TFF's aggregations of a learning round in one process: weighted mean, sum and DP release.

:func:`simulated` reads a :class:`~tff_esn.privacy.learning.LearningAggregation`: the model mean
(:class:`WeightedMean`, ``Σ_k w_k Δ_k / Σ_k w_k``, or :class:`PrivateRelease` of its DP query) and FedCurv's
``(u_b, v_b)`` sum (:class:`Sum`, eq. 2.18, or its DP release), each with TFF's ``initialize()`` / ``next``.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_privacy as tfp

from tff_esn.privacy.learning import LearningAggregation, dp_release, fold_sum


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
    """``tff.aggregators.DifferentiallyPrivateFactory(query)``'s round in one process, in the factory's order."""

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


def simulated(aggregation: LearningAggregation) -> tuple[WeightedMean | PrivateRelease, Sum | PrivateRelease]:
    """The model mean and the curvature sum of ``aggregation`` on the queries TFF's factories hold."""
    model, curvature = aggregation.model_query, aggregation.curvature_query
    return (WeightedMean() if model is None else PrivateRelease(model),
            Sum() if curvature is None else PrivateRelease(curvature))
