"""Seeded draws of a reservoir's W_in, Ŵ and b (IncFed eq. 1; thesis §2.1), without TensorFlow:
each matrix from its own stream of ``config.seed`` (:mod:`tff_esn.common.streams`), so that Ŵ does not depend on N_U."""

from __future__ import annotations

import numpy as np

from tff_esn.common import streams
from tff_esn.esn import topologies
from tff_esn.esn.hyperparameters import ReservoirConfig


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


def graph_seed(config: ReservoirConfig) -> int:
    """The seed of ``config``'s small-world or scale-free graph (``random.Random`` and networkx's generators)."""
    return streams.GRAPH.seed(config.seed)


def _structure(config: ReservoirConfig) -> np.ndarray:
    """Ŵ of a non-random topology before scaling: fixed weights, or uniform [−1, 1] on a graph's edges."""
    n = config.units
    if config.topology == "ring":
        return topologies.ring(n)
    if config.topology == "delay-line":
        return topologies.delay_line(n)
    if config.topology == "cycle-jumps":
        return topologies.cycle_jumps(n, config.jump, config.jump_weight)
    if config.topology == "small-world":
        edges = topologies.watts_strogatz(n, config.neighbours, config.rewiring, graph_seed(config))
    else:
        edges = topologies.barabasi_albert(n, config.attachment, graph_seed(config))
    return np.where(edges, streams.RECURRENT_WEIGHTS.generator(config.seed).uniform(-1.0, 1.0, size=(n, n)), 0.0)


def recurrent_weights(config: ReservoirConfig) -> np.ndarray:
    """Ŵ (units, units) of ``config.topology`` scaled to ρ(Ŵ) = ``spectral_radius`` (delay-line: its link weight)."""
    if config.topology != "random":
        w = _structure(config)
        if config.link_signs == "random":
            w = w * streams.LINK_SIGNS.generator(config.seed).choice([-1.0, 1.0], size=w.shape)
        if config.topology == "delay-line":
            return (w * config.spectral_radius).astype(np.float32)
        return (w * (config.spectral_radius / spectral_radius(w))).astype(np.float32)
    w = _sparse_uniform(streams.RECURRENT_WEIGHTS.generator(config.seed), config.units, config.units,
                        config.recurrent_connectivity)
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
    w = _sparse_uniform(streams.INPUT_WEIGHTS.generator(config.seed), n_inputs, config.units, config.input_connectivity)
    return (w * config.input_scaling).astype(np.float32)


def leak_rates(config: ReservoirConfig) -> float | tuple[float, ...]:
    """Each unit's leaking rate: ``leak_values``, constant, or drawn per ``leak_distribution`` (deep ESN: per layer)."""
    if config.layers > 1:
        return _joined([leak_rates(config.layer(i)) for i in range(config.layers)], config.layer_sizes)
    low, high, n = config.leak_low, config.leaky, config.units
    if config.leak_values:
        return tuple(float(a) for a in np.asarray(config.leak_values, np.float32))
    if config.leak_distribution == "constant":
        return float(high)
    rng = streams.LEAK_RATES.generator(config.seed)
    if config.leak_distribution == "uniform":
        rates = rng.uniform(low, high, n)
    elif config.leak_distribution == "log-uniform":
        rates = np.exp(rng.uniform(np.log(low), np.log(high), n))
    else:
        levels = np.linspace(high, low, config.leak_layers)
        rates = np.concatenate([np.full(len(block), level) for level, block in
                                zip(levels, np.array_split(np.arange(n), config.leak_layers))])
    return tuple(float(a) for a in np.clip(rates, low, high).astype(np.float32))


def _joined(values: list, sizes: tuple[int, ...]):
    """A deep ESN's per-layer values as one value when all layers share a single one, else one per unit."""
    if all(not isinstance(v, tuple) and v == values[0] for v in values):
        return values[0]
    return tuple(a for v, n in zip(values, sizes) for a in (v if isinstance(v, tuple) else (v,) * n))


def activations(config: ReservoirConfig) -> str | tuple[str, ...]:
    """Each unit's nonlinearity: ``config.activation``, or for ``mixed`` one of ``activation_types`` drawn per unit."""
    if config.layers > 1:
        return _joined([activations(config.layer(i)) for i in range(config.layers)], config.layer_sizes)
    if config.activation != "mixed":
        return config.activation
    rng = streams.ACTIVATIONS.generator(config.seed)
    return tuple(config.activation_types[i] for i in rng.integers(0, len(config.activation_types), config.units))


def bias_weights(config: ReservoirConfig) -> np.ndarray:
    """b (units,), float32, uniform in ±bias_scaling (zeros when bias_scaling is 0)."""
    if config.bias_scaling == 0:
        return np.zeros(config.units, np.float32)
    rng = streams.BIAS.generator(config.seed)
    return (rng.uniform(-1.0, 1.0, config.units) * config.bias_scaling).astype(np.float32)
