"""Seeded draws of a reservoir's W_in, Ŵ and b (IncFed eq. 1; thesis §2.1), without TensorFlow.

Each matrix comes from its own child generator of ``config.seed``, so Ŵ does not depend on
the number of inputs. The Keras layer (:mod:`tff_esn.esn.layer`) and
:meth:`~tff_esn.esn.weights.ReservoirWeights.from_config` draw through these functions, so both
see one reservoir.
"""

from __future__ import annotations

import numpy as np

from tff_esn.esn.hyperparameters import ReservoirConfig


def _child_rng(seed: int, part: int) -> np.random.Generator:
    """Independent generator for one weight matrix, so that Ŵ does not depend on N_U."""
    return np.random.default_rng(np.random.SeedSequence([seed, part]))


def _sparse_uniform(rng: np.random.Generator, fan_in: int, units: int, connectivity: float) -> np.ndarray:
    """(fan_in, units) matrix, uniform in [−1, 1], each column with exactly k non-zeros."""
    k = max(1, int(round(connectivity * fan_in)))
    values = rng.uniform(-1.0, 1.0, size=(fan_in, units))
    if k < fan_in:
        ranks = np.argsort(rng.random((fan_in, units)), axis=0)
        keep = np.zeros((fan_in, units), dtype=bool)
        np.put_along_axis(keep, ranks[:k], True, axis=0)
        values = np.where(keep, values, 0.0)
    return values


def spectral_radius(matrix: np.ndarray) -> float:
    """Largest absolute eigenvalue of a square matrix (not a norm bound)."""
    return float(np.max(np.abs(np.linalg.eigvals(np.asarray(matrix, dtype=np.float64)))))


def recurrent_weights(config: ReservoirConfig) -> np.ndarray:
    """Ŵ (units, units), float32, rescaled so that ρ(Ŵ) = ``config.spectral_radius``."""
    w = _sparse_uniform(_child_rng(config.seed, 1), config.units, config.units, config.recurrent_connectivity)
    radius = spectral_radius(w)
    if radius <= 1e-12:
        raise ValueError(
            f"The random recurrent matrix (units={config.units}, recurrent_connectivity="
            f"{config.recurrent_connectivity}, seed={config.seed}) is nilpotent (spectral radius 0) and "
            "cannot be rescaled; raise recurrent_connectivity or change the seed."
        )
    return (w * (config.spectral_radius / radius)).astype(np.float32)


def input_weights(config: ReservoirConfig, n_inputs: int) -> np.ndarray:
    """W_in (n_inputs, units), float32, uniform in ±input_scaling with the given connectivity."""
    if n_inputs < 1:
        raise ValueError(f"input_weights: n_inputs must be ≥ 1, got {n_inputs}.")
    w = _sparse_uniform(_child_rng(config.seed, 0), n_inputs, config.units, config.input_connectivity)
    return (w * config.input_scaling).astype(np.float32)


def bias_weights(config: ReservoirConfig) -> np.ndarray:
    """b (units,), float32, uniform in ±bias_scaling (zeros when bias_scaling is 0)."""
    if config.bias_scaling == 0:
        return np.zeros(config.units, np.float32)
    rng = _child_rng(config.seed, 2)
    return (rng.uniform(-1.0, 1.0, config.units) * config.bias_scaling).astype(np.float32)
