"""Seeded benchmark series of reservoir computing, cut into clients for forecasting.

:func:`narma` (Atiya & Parlos 2000), :func:`mackey_glass` (τ = 17, Euler 0.1), :func:`lorenz` (RK4 0.01)
and :func:`sine`; :func:`series_dataset` makes a forecasting dataset (target ``horizon`` steps ahead,
clients as segments or realisations), :func:`forecast_dataset` one from a dataset's own channel.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from tff_esn.common import streams
from tff_esn.data.errors import DataError
from tff_esn.data.source_names import narma_order
from tff_esn.data.sequences import ClientSequences, SequenceDataset
from tff_esn.common.tasks import Task
from tff_esn.common.validation import is_count

CLIENT_SPLITS = ("segments", "realisations")
DEFAULT_CLIENTS = 10
DEFAULT_STEPS = 1000
"""Steps per client (each client's sequence; the validation and test clients' too)."""
LYAPUNOV = {"lorenz": (0.9056, 0.02), "mackey-glass": (0.006, 1.0)}
"""Per chaotic series: its largest Lyapunov exponent per time unit (Lorenz-63: Sprott 2003, 0.9056; Mackey–Glass
τ = 17: Farmer 1982, ≈ 0.006) and the time units between two samples (Lorenz: RK4 0.01 sampled every 2 steps;
Mackey–Glass: Euler 0.1 sampled every 10)."""
NARMA_BOUND = 10.0
"""A NARMA draw leaving [−10, 10] diverged (stable orbits stay near [0, 1])."""


@dataclasses.dataclass(frozen=True, eq=False)
class Series:
    """Channels ``values`` (T, K) float64 named ``names``; ``inputs`` feed the reservoir, ``target`` is forecast."""

    values: np.ndarray
    names: tuple[str, ...]
    inputs: tuple[str, ...]
    target: str

    def channel(self, name: str) -> np.ndarray:
        return self.values[:, self.names.index(name)]


def narma(steps: int, rng: np.random.Generator, order: int = 10, *, transient: int = 200,
          retries: int = 20) -> Series:
    """NARMA-``order`` (Atiya & Parlos 2000), channels ``u`` ~ U[0, 0.5] and ``y``: ``y(t+1) = 0.3 y(t) +
    0.05 y(t) Σ_{i<N} y(t−i) + 1.5 u(t−N+1) u(t) + 0.1`` (tanh-wrapped for N > 10); a diverging draw is redrawn."""
    total = steps + transient
    for _ in range(retries + 1):
        u = rng.uniform(0.0, 0.5, total)
        y = np.zeros(total)
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(order - 1, total - 1):
                value = (0.3 * y[t] + 0.05 * y[t] * y[t - order + 1:t + 1].sum()
                         + 1.5 * u[t - order + 1] * u[t] + 0.1)
                y[t + 1] = np.tanh(value) if order > 10 else value
        if np.all(np.isfinite(y)) and np.abs(y).max() < NARMA_BOUND:
            return Series(np.stack([u, y], axis=1)[transient:], ("u", "y"), ("u",), "y")
    raise DataError(f"narma{order}: every one of {retries + 1} draws of {steps} steps diverged (a NARMA orbit leaves "
                    f"[−{NARMA_BOUND:g}, {NARMA_BOUND:g}] the likelier the longer it runs); draw fewer steps "
                    "(--series-steps, --horizon, --series-clients) or use another --seed.")


def mackey_glass(steps: int, rng: np.random.Generator, *, tau: float = 17.0, dt: float = 0.1, every: int = 10,
                 transient: int = 1000) -> Series:
    """Mackey–Glass, one channel ``x``: ``dx/dt = 0.2 x(t−τ) / (1 + x(t−τ)¹⁰) − 0.1 x(t)``, Euler steps
    ``dt`` sampled every ``every``, after ``transient`` time units from a constant history 1.2 ± a seeded 0.1."""
    delay = int(round(tau / dt))
    total = (steps + transient) * every
    x = np.empty(total + delay + 1)
    x[:delay + 1] = 1.2 + 0.1 * rng.uniform(-1.0, 1.0)
    for t in range(delay, total + delay):
        lagged = x[t - delay]
        x[t + 1] = x[t] + dt * (0.2 * lagged / (1.0 + lagged ** 10) - 0.1 * x[t])
    sampled = x[delay + 1::every][transient:transient + steps]
    return Series(sampled[:, None], ("x",), ("x",), "x")


def lorenz(steps: int, rng: np.random.Generator, *, dt: float = 0.01, every: int = 2, transient: int = 500) -> Series:
    """The Lorenz system (σ 10, ρ 28, β 8/3, RK4): inputs ``(x/10, y/10, (z − 25)/10)``, target ``x``."""

    def field(s: np.ndarray) -> np.ndarray:
        return np.array([10.0 * (s[1] - s[0]), s[0] * (28.0 - s[2]) - s[1], s[0] * s[1] - 8.0 / 3.0 * s[2]])

    s = np.array([1.0, 1.0, 20.0]) + rng.normal(0.0, 1.0, 3)
    out = np.empty(((steps + transient) * every, 3))
    for t in range(out.shape[0]):
        k1 = field(s)
        k2 = field(s + dt / 2 * k1)
        k3 = field(s + dt / 2 * k2)
        k4 = field(s + dt * k3)
        s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out[t] = s
    sampled = out[every - 1::every][transient:]
    scaled = (sampled - np.array([0.0, 0.0, 25.0])) / 10.0
    return Series(scaled, ("x", "y", "z"), ("x", "y", "z"), "x")


def sine(steps: int, rng: np.random.Generator) -> Series:
    """``sin(2π t / period + phase)``, period in [20, 40] steps and phase drawn per realisation."""
    period, phase = rng.uniform(20.0, 40.0), rng.uniform(0.0, 2 * np.pi)
    return Series(np.sin(2 * np.pi * np.arange(steps) / period + phase)[:, None], ("s",), ("s",), "s")


def generator(name: str) -> Callable[[int, np.random.Generator], Series]:
    """The generator of a series name (:func:`tff_esn.data.source_names.is_series`); ``narmaN`` is NARMA of order N."""
    order = narma_order(name)
    if order is not None:
        return lambda steps, rng: narma(steps, rng, order)
    return {"mackey-glass": mackey_glass, "lorenz": lorenz, "sine": sine}[name]


def series_dataset(name: str, task: Task, *, clients: int = DEFAULT_CLIENTS, steps: int = DEFAULT_STEPS,
                   split_by: str = "segments", seed: int = 0, held_steps: int | None = None) -> SequenceDataset:
    """Series ``name`` as a forecasting dataset: ``clients`` training clients of ``steps`` + H steps, one val and one
    test client of ``held_steps`` + H (H = ``task.horizon``); ``segments`` of one realisation or ``realisations``."""
    if task.kind != "forecast":
        raise DataError(f"{name}: a generated series has no {'classes' if task.kind == 'classify' else 'targets'} "
                        "of its own; use --task forecast (with --horizon H).")
    held_steps = steps if held_steps is None else held_steps
    if split_by not in CLIENT_SPLITS or not all(is_count(v, 1) for v in (clients, steps, held_steps)):
        raise ValueError(f"series_dataset: expected split_by one of {CLIENT_SPLITS} and clients, steps, held_steps "
                         f"integers ≥ 1, got {split_by!r}, {clients!r}, {steps!r}, {held_steps!r}.")
    make = generator(name)
    horizon, total = task.horizon, clients + 2
    lengths = [steps + horizon] * clients + [held_steps + horizon] * 2
    if split_by == "segments":
        whole = make(sum(lengths), streams.SERIES_SEGMENTS.generator(seed))
        ends = np.cumsum(lengths)
        parts = [(whole, slice(end - length, end)) for end, length in zip(ends, lengths)]
    else:
        parts = [(make(length, streams.SERIES_REALISATION.generator(seed, k)), slice(0, length))
                 for k, length in enumerate(lengths)]
    series = parts[0][0]
    target = _channel(name, task.target or series.target, series.names)
    width = len(str(total - 1))
    ids = [f"c{k:0{width}d}" for k in range(total)]
    data = {}
    for cid, (part, rows) in zip(ids, parts):
        inputs = np.stack([part.channel(c)[rows] for c in part.inputs], axis=1)
        data[cid] = ClientSequences(inputs[None, :-horizon].astype(np.float32),
                                    part.channel(target)[rows][None, horizon:])
    groups = {**dict.fromkeys(ids[:clients], "train"), ids[clients]: "val", ids[clients + 1]: "test"}
    return SequenceDataset(data, 1, series.inputs, (f"{target}(t+{horizon})",), name, groups=groups,
                           task=dataclasses.replace(task, target=target))


def _channel(source: str, target: str, names: tuple[str, ...]) -> str:
    """``target`` after checking that it names one of the channels ``names``."""
    if target not in names:
        raise DataError(f"{source}: --target {target}: no such channel; its channels are {', '.join(names)}.")
    return target


def forecast_dataset(dataset: SequenceDataset, task: Task) -> SequenceDataset:
    """``dataset``'s sequences as forecasting data: inputs minus the last H steps, targets ``task.target`` H steps later."""
    target = _channel(dataset.source, task.target or dataset.feature_names[0], dataset.feature_names)
    horizon, channel = task.horizon, dataset.feature_names.index(target)
    if dataset.ragged or dataset.shortest <= horizon:
        raise DataError(f"{dataset.source}: --task forecast --horizon {horizon}: needs sequences of one length, "
                        f"longer than the horizon, got {dataset.shortest}" + ("–… steps; cut them to one length "
                                                                              "(--ragged crop)." if dataset.ragged
                                                                              else " steps."))
    clients = {cid: ClientSequences(c.x[:, :-horizon], c.x[:, horizon:, channel].astype(np.float64))
               for cid, c in dataset.clients.items()}
    return SequenceDataset(clients, 1, dataset.feature_names, (f"{target}(t+{horizon})",), dataset.source,
                           groups=dict(dataset.groups), task=dataclasses.replace(task, target=target))
