"""The reservoir's state equation in numpy float32 and the closed-form harvest built on it (no TensorFlow):
``x(t) = (1 − a)·x(t−1) + a·f(g ⊙ (u(t) W_in + x(t−1) Ŵ) + b)``, ``x(0) = 0`` (IncFed eq. 1; FedIP eq. 1)."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

from tff_esn.esn.ridge import STATS_CHUNK, ridge_products

SPARSE_DENSITY = 0.02
"""Ŵ with at most this fraction of non-zeros is multiplied as a CSR matrix (``bench/harvest.py``)."""

HARVEST_BATCH = 256
"""Sequences a harvest runs through the reservoir at once (its memory is O(batch · longest · features))."""

HARVEST_VALUES = 2 ** 24
"""Most padded input values a batch of unequal-length sequences holds (unless one sequence alone is longer)."""

PROJECTION_BLOCK = 256
"""Time steps whose input projection is one matrix product (memory O(block · batch · units))."""


ACTIVATION_FUNCTIONS = {"tanh": np.tanh, "sigmoid": lambda z: 0.5 + 0.5 * np.tanh(0.5 * z), "sin": np.sin,
                        "relu": lambda z: np.maximum(z, 0), "identity": lambda z: z}
"""The nonlinearities f by name (:data:`~tff_esn.esn.hyperparameters.ACTIVATIONS`)."""


@functools.lru_cache(maxsize=16)
def _units_of(activation: tuple[str, ...]) -> list[tuple[str, np.ndarray]]:
    names = np.asarray(activation)
    return [(name, np.flatnonzero(names == name)) for name in sorted(set(activation))]


def activate(z: np.ndarray, activation: str | tuple[str, ...]) -> np.ndarray:
    """f(z) in place on (batch, units) ``z``: one nonlinearity, or one per unit (a tuple of names)."""
    if activation == "tanh":
        return np.tanh(z, out=z)
    if isinstance(activation, str):
        z[...] = ACTIVATION_FUNCTIONS[activation](z)
        return z
    for name, units in _units_of(activation):
        z[:, units] = ACTIVATION_FUNCTIONS[name](z[:, units])
    return z


def states(inputs: np.ndarray, kernel: np.ndarray, recurrent: np.ndarray, bias: np.ndarray, gain: np.ndarray,
            leaky: float | tuple[float, ...], valid: np.ndarray | None,
            layers: tuple[int, ...] = (), activation: str | tuple[str, ...] = "tanh") -> Iterator[np.ndarray]:
    """Yields the states x(t) (batch, units) in one overwritten buffer; a finished sequence's state stays frozen."""
    if len(layers) > 1:
        yield from _deep_states(inputs, kernel, recurrent, bias, gain, leaky, valid, layers, activation)
        return
    batch, steps, features = inputs.shape
    units = recurrent.shape[0]
    unit_gain = bool(np.all(gain == 1))
    time_major = np.ascontiguousarray(np.swapaxes(inputs, 0, 1))
    a = np.asarray(leaky, np.float32)
    x = np.zeros((batch, units), np.float32)
    new = np.empty_like(x)
    sparse = None
    if np.count_nonzero(recurrent) <= SPARSE_DENSITY * recurrent.size:
        from scipy.sparse import csr_matrix

        sparse = csr_matrix(recurrent.T)  # x Ŵ = (Ŵᵀ xᵀ)ᵀ
    for t in range(steps):
        if t % PROJECTION_BLOCK == 0:  # u(t) W_in for a block of steps in one product
            block = time_major[t:t + PROJECTION_BLOCK]
            projected = (block.reshape(-1, features) @ kernel).reshape(len(block), batch, units)
            if unit_gain:
                projected += bias
        if sparse is None:
            np.matmul(x, recurrent, out=new)
        else:
            np.copyto(new, (sparse @ x.T).T)
        new += projected[t % PROJECTION_BLOCK]
        if not unit_gain:
            new *= gain
            new += bias
        activate(new, activation)
        if np.any(a != 1):
            new -= x
            new *= a
            if valid is not None:
                new *= valid[t]
            x += new
        elif valid is None:
            x, new = new, x
        else:
            np.copyto(x, new, where=valid[t].astype(bool))
        yield x


def layer_bounds(layers: tuple[int, ...]) -> list[tuple[int, int]]:
    """The ``(start, stop)`` unit range of each layer of a deep ESN."""
    stops = np.cumsum(layers).tolist()
    return list(zip([0] + stops[:-1], stops))


def _deep_states(inputs, kernel, recurrent, bias, gain, leaky, valid, layers, activation) -> Iterator[np.ndarray]:
    """:func:`states` of a deep ESN: per step, layer by layer (:func:`deep_step`)."""
    batch, steps, _ = inputs.shape
    a = np.broadcast_to(np.asarray(leaky, np.float32), (recurrent.shape[0],))
    unit_gain = bool(np.all(gain == 1))
    x = np.zeros((batch, recurrent.shape[0]), np.float32)
    for t in range(steps):
        projected = inputs[:, t] @ kernel
        if unit_gain:
            projected += bias
        new = deep_step(x, projected, recurrent, bias, None if unit_gain else gain, a, layers, activation)
        x = new if valid is None else np.where(valid[t] > 0, new, x)
        yield x


def deep_step(x: np.ndarray, projected: np.ndarray, recurrent: np.ndarray, bias: np.ndarray,
              gain: np.ndarray | None, leaky: np.ndarray, layers: tuple[int, ...],
              activation: str | tuple[str, ...] = "tanh") -> np.ndarray:
    """One deep-ESN step ``x_l(t) = (1 − a_l)·x_l(t−1) + a_l·f(g_l ⊙ (x_{l−1}(t) W_in^l + x_l(t−1) Ŵ_l) + b_l)``,
    Ŵ_l the diagonal blocks of ``recurrent``, W_in^l its blocks (l − 1, l) (Gallicchio & Micheli)."""
    new = np.empty_like(x)
    below = None
    for start, stop in layer_bounds(layers):
        unit = slice(start, stop)
        net = projected[:, unit] + x[:, unit] @ recurrent[unit, unit]
        if below is not None:
            net += new[:, below] @ recurrent[below, unit]
        names = activation if isinstance(activation, str) else activation[start:stop]
        active = activate(net if gain is None else gain[unit] * net + bias[unit], names)
        new[:, unit] = x[:, unit] + leaky[unit] * (active - x[:, unit])
        below = unit
    return new


def ragged_batches(lengths: np.ndarray, features: int, batch_size: int = HARVEST_BATCH) -> list[np.ndarray]:
    """The rows of each batch of sequences of unequal ``lengths``: by length, within :data:`HARVEST_VALUES`."""
    order = np.argsort(lengths, kind="stable")
    steps = np.asarray(lengths)[order]
    limit = HARVEST_VALUES // max(int(features), 1)
    batches, start = [], 0
    while start < order.size:
        head = steps[start:start + batch_size]
        rows = max(1, int(np.count_nonzero(np.arange(1, head.size + 1) * head <= limit)))
        batches.append(order[start:start + rows])
        start += rows
    return batches


class _GroupStatistics:
    """Each group's ridge statistics ``[A, B, n]`` (IncFed eqs. 6–7), accumulated in float64 from blocks of states."""

    def __init__(self, targets: np.ndarray, groups: np.ndarray | None, n_groups: int, units: int,
                 readout_bias: bool, chunk: int, valid: np.ndarray | None, washout: int,
                 products: np.dtype = np.dtype(np.float32)):
        batch = targets.shape[0]
        groups = np.zeros(batch, np.int64) if groups is None else np.asarray(groups)
        self.members = [np.flatnonzero(groups == g) for g in range(n_groups)]
        self.units, self.readout_bias, self.chunk = units, readout_bias, chunk
        self.valid, self.washout = valid, washout
        self.features = units + int(readout_bias)
        self.n_out = targets.shape[-1]
        self.stats = [[np.zeros((self.n_out, self.features)), np.zeros((self.features, self.features)), 0]
                      for _ in range(n_groups)]
        self.block = np.zeros((chunk, batch, self.features), products)
        if readout_bias:
            self.block[:, :, units] = 1
        self.per_step = targets.ndim == 3
        self.targets = targets.astype(products)

    def add(self, i: int, state: np.ndarray, last: bool) -> None:
        """Stores sample step ``i``'s states (batch, units); reduces the block when it is full or ``last``."""
        self.block[i % self.chunk, :, :self.units] = state
        if i % self.chunk == self.chunk - 1 or last:
            self._reduce(i - i % self.chunk, i + 1)

    def _reduce(self, start: int, stop: int) -> None:
        """Adds the states of sample steps [start, stop) to each group's statistics."""
        rows = self.block[:stop - start]
        if self.readout_bias and self.valid is not None:
            rows[:, :, self.units] = self.valid[start + self.washout:stop + self.washout, :, 0]
        batch = rows.shape[1]
        for g, member in enumerate(self.members):
            if not member.size:
                continue
            whole = member.size == batch
            s = (rows if whole else rows[:, member]).reshape(-1, self.features)
            y = self.targets if whole else self.targets[member]
            y = (np.swapaxes(y[:, start:stop], 0, 1) if self.per_step
                 else np.broadcast_to(y, (stop - start, member.size, self.n_out))).reshape(-1, self.n_out)
            a, b = ridge_products(s, y)
            self.stats[g][0] += a
            self.stats[g][1] += b

    def result(self, counts: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, int]]:
        """``(A, B, n)`` per group, ``n`` the group's sample count from each sequence's ``counts``."""
        for g, member in enumerate(self.members):
            self.stats[g][2] = int(counts[member].sum())
        return [tuple(s) for s in self.stats]


def states_and_statistics(inputs: np.ndarray, kernel: np.ndarray, recurrent: np.ndarray, bias: np.ndarray,
                          gain: np.ndarray, leaky: float | tuple[float, ...], *, keep: str, washout: int = 0,
                          lengths: np.ndarray | None = None, targets: np.ndarray | None = None,
                          groups: np.ndarray | None = None, n_groups: int = 1, readout_bias: bool = True,
                          chunk: int = STATS_CHUNK, layers: tuple[int, ...] = (), readout_from: int = 0,
                          activation: str | tuple[str, ...] = "tanh", products: np.dtype = np.dtype(np.float32),
                          with_inputs: bool = False) -> tuple[np.ndarray, list | None]:
    """States of a batch of sequences and, with ``targets``, each group's ``(Yᵀ S, Sᵀ S, n)`` (IncFed eqs. 6–7);
    ``with_inputs``: each step's row is ``[u(t), x(t)]`` (the input beside the state, frozen with it past a
    sequence's end), so the mean, the last row and the statistics hold the inputs too."""
    batch, steps, n_inputs = inputs.shape
    n_inputs = n_inputs if with_inputs else 0
    units = recurrent.shape[0] - readout_from + n_inputs
    valid = None
    if lengths is not None:
        valid = (np.arange(steps)[:, None] < np.asarray(lengths)[None, :]).astype(np.float32)[:, :, None]
    counts = np.full(batch, steps - washout) if lengths is None else np.asarray(lengths) - washout
    mean = keep in ("mean", "mean+last")
    kept = (np.zeros((batch, units), np.float32) if mean
            else np.zeros((steps - washout, batch, units), np.float32) if keep == "all" else None)
    statistics = None if targets is None else _GroupStatistics(
        targets, groups, n_groups, units, readout_bias, chunk, valid, washout, np.dtype(products))
    masked = np.empty((batch, units), np.float32)
    row = np.zeros((batch, units), np.float32) if n_inputs else None
    for t, x in enumerate(states(inputs, kernel, recurrent, bias, gain, leaky, valid, layers, activation)):
        x = x[:, readout_from:] if readout_from else x
        if row is not None:  # [u(t), x(t)]
            np.copyto(row[:, :n_inputs], inputs[:, t], where=True if valid is None else valid[t] > 0)
            row[:, n_inputs:] = x
            x = row
        if t < washout:
            continue
        i = t - washout
        state = x if valid is None else np.multiply(x, valid[t], out=masked)  # zero past a sequence's end
        if mean:
            kept += state
        elif keep == "all":
            kept[i] = state
        if statistics is not None:
            statistics.add(i, state, t == steps - 1)
    last = (x.copy() if steps else np.zeros((batch, units), np.float32)) if keep in ("last", "mean+last") else None
    if mean:
        out = kept / counts[:, None].astype(np.float32)
        out = out if last is None else np.concatenate([out, last], axis=1)
    elif last is not None:
        out = last
    else:
        out = np.ascontiguousarray(np.swapaxes(kept, 0, 1))
    return out, None if statistics is None else statistics.result(counts)
