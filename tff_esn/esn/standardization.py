"""Features standardised with federated means and variances (the readout's inputs, or the reservoir's).

The training clients' summed :class:`~tff_esn.esn.ridge.RidgeStats` (plain or secure) give ``n = B[−1, −1]``,
``μ = B[−1, :−1] / n``, ``σ² = diag(B)[:−1] / n − μ²``; every state becomes ``(s − μ) / σ`` (``σ = 1`` at
variance ≤ :data:`MIN_VARIANCE`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from tff_esn.esn.ridge import RidgeStats

MIN_VARIANCE = 1e-12
"""Variance below which a feature is left unscaled (a constant unit: σ = 1)."""


@dataclasses.dataclass(frozen=True)
class Standardization:
    """Feature means ``mean`` and scales ``scale`` (σ) of the readout's inputs, float32 (U,)."""

    mean: np.ndarray
    scale: np.ndarray

    def apply(self, states: np.ndarray) -> np.ndarray:
        """``(s − μ) / σ`` over the last axis, float32 (the same IEEE operations everywhere)."""
        return (np.asarray(states, np.float32) - self.mean) / self.scale

    def to_dict(self) -> dict:
        """A summary for ``metrics.json``: the features and the range of their means and scales."""
        return {"features": int(self.mean.size), "mean_range": [float(self.mean.min()), float(self.mean.max())],
                "std_range": [float(self.scale.min()), float(self.scale.max())],
                "unscaled_features": int(np.sum(self.scale == 1.0))}


def client_statistics(states: np.ndarray) -> RidgeStats:
    """One client's statistics ``(·, B, n)`` of its readout inputs' rows with the bias column."""
    rows = np.asarray(states, np.float64).reshape(-1, np.shape(states)[-1])
    return RidgeStats.from_states(rows, np.zeros((len(rows), 1)), bias=True)


def from_statistics(total: RidgeStats) -> Standardization:
    """μ and σ from summed statistics (module docstring): ``μ = B[−1, :−1] / n``, ``σ² = diag(B)[:−1] / n − μ²``."""
    b = total.B
    n = b[-1, -1]
    mean = b[-1, :-1] / n
    variance = np.diag(b)[:-1] / n - mean ** 2
    scale = np.where(variance > MIN_VARIANCE, np.sqrt(np.maximum(variance, MIN_VARIANCE)), 1.0)
    return Standardization(mean.astype(np.float32), scale.astype(np.float32))


def federated_standardization(client_states: Sequence[np.ndarray],
                              aggregate: Callable[[Sequence[RidgeStats]], RidgeStats] = RidgeStats.sum
                              ) -> Standardization:
    """The :class:`Standardization` of the training clients' readout inputs, statistics summed by ``aggregate``."""
    return from_statistics(aggregate([client_statistics(s) for s in client_states]))
