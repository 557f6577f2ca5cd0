"""(ε, δ) of the Gaussian mechanism, from ``dp_accounting``'s Rényi-DP accountant.

Noise ``z·Δ`` on a release of L2 sensitivity Δ is the Gaussian mechanism with multiplier z; ``rounds``
releases with Poisson sampling rate ``q`` compose as ``PoissonSampled(q, Gaussian(z))``, converted to
(ε, δ) by ``RdpAccountant`` (Mironov 2017; Mironov, Talwar, Zhang 2019).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

from tff_esn.common.lazy import LazyModule
from tff_esn.privacy import noise_seed
from tff_esn.common.validation import is_count, is_finite

dp_accounting = LazyModule("dp_accounting")

NOISE_MULTIPLIERS = (1e-6, 1e4)
"""The positive noise multipliers the RDP accountant evaluates reliably (it fails beyond 1e6 with
sampling, and calibration to an ε outside the range would return a z that misses it)."""


def check_delta(delta: float) -> float:
    """δ as a float in (0, 1); otherwise a ``ValueError`` naming the fix."""
    if not (is_finite(delta) and 0 < delta < 1):
        raise ValueError(f"dp delta: expected a number in (0, 1) (e.g. 1e-5), got {delta!r}.")
    return float(delta)


def check_epsilon(epsilon: float) -> float:
    """ε as a float > 0 (``inf`` allowed: no privacy); otherwise a ``ValueError``."""
    if not ((is_finite(epsilon) or epsilon == math.inf) and epsilon > 0):
        raise ValueError(f"dp epsilon: expected a number > 0 (e.g. 1.0), got {epsilon!r}.")
    return float(epsilon)


def check_noise_multiplier(z: float) -> float:
    """The noise multiplier as a float, 0 (no noise, ε = ∞) or in :data:`NOISE_MULTIPLIERS`."""
    low, high = NOISE_MULTIPLIERS
    if not (is_finite(z) and (z == 0 or low <= z <= high)):
        raise ValueError(f"dp noise multiplier: expected 0 (no noise) or a number in [{low:g}, {high:g}] (the range "
                         f"the accountant handles), got {z!r}.")
    return float(z)


def epsilon_range(delta: float, rounds: int = 1, sampling_rate: float = 1.0) -> tuple[float, float]:
    """The ε the accountant can calibrate to: from ε of the largest multiplier (no sampling) to ε of the smallest."""
    low, high = NOISE_MULTIPLIERS
    return epsilon(high, delta, rounds), epsilon(low, delta, rounds, sampling_rate)


def check_epsilon_in_range(target_epsilon: float, delta: float, rounds: int = 1, sampling_rate: float = 1.0) -> float:
    """``target_epsilon`` if ∞ or inside :func:`epsilon_range` of the schedule, else a ``ValueError`` with the range."""
    target_epsilon = check_epsilon(target_epsilon)
    low, high = epsilon_range(delta, rounds, sampling_rate)
    if not math.isinf(target_epsilon) and not low <= target_epsilon <= high:
        raise ValueError(f"dp epsilon {target_epsilon:g}: the accountant calibrates ε in [{low:.4g}, {high:.4g}] at "
                         f"δ = {delta:g} over {rounds} release(s) at sampling rate {sampling_rate:g} (noise "
                         f"multipliers {NOISE_MULTIPLIERS[1]:g} … {NOISE_MULTIPLIERS[0]:g}); give an ε in that "
                         "range, or --dp-noise-multiplier 0 for no noise.")
    return target_epsilon


def describe(sampling_rate: float) -> str:
    """The accountant and the event it composes (``metrics.json``'s ``privacy.accountant``)."""
    event = "GaussianDpEvent(z)" if sampling_rate >= 1 else f"PoissonSampledDpEvent({sampling_rate:g}, GaussianDpEvent(z))"
    return f"dp_accounting.rdp.RdpAccountant: SelfComposedDpEvent({event}, rounds), add/remove-one neighbours"


def _check_schedule(rounds: int, sampling_rate: float) -> None:
    if not is_count(rounds, 1):
        raise ValueError(f"rounds: expected an integer ≥ 1, got {rounds!r}.")
    if not (is_finite(sampling_rate) and 0 < sampling_rate <= 1):
        raise ValueError(f"sampling rate: expected a number in (0, 1], got {sampling_rate!r}.")


def dp_event(noise_multiplier: float, rounds: int = 1, sampling_rate: float = 1.0) -> dp_accounting.DpEvent:
    """The ``dp_accounting`` event of ``rounds`` (sampled) Gaussian releases."""
    _check_schedule(rounds, sampling_rate)
    event: dp_accounting.DpEvent = dp_accounting.GaussianDpEvent(check_noise_multiplier(noise_multiplier))
    if sampling_rate < 1:
        event = dp_accounting.PoissonSampledDpEvent(float(sampling_rate), event)
    return dp_accounting.SelfComposedDpEvent(event, rounds)


def epsilon(noise_multiplier: float, delta: float, rounds: int = 1, sampling_rate: float = 1.0) -> float:
    """ε at ``delta`` of :func:`dp_event` (RDP accountant); ``inf`` for noise multiplier 0."""
    delta = check_delta(delta)
    if check_noise_multiplier(noise_multiplier) == 0:
        _check_schedule(rounds, sampling_rate)
        return math.inf
    return _rdp_epsilon(float(noise_multiplier), delta, rounds, float(sampling_rate))


@functools.lru_cache(maxsize=1024)
def _rdp_epsilon(noise_multiplier: float, delta: float, rounds: int, sampling_rate: float) -> float:
    """:func:`epsilon` of checked arguments, kept per argument tuple (the accountant is pure and costs seconds)."""
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(dp_event(noise_multiplier, rounds, sampling_rate))
    return float(accountant.get_epsilon(delta))


@dataclasses.dataclass(frozen=True)
class RoundEvent:
    """One round's DP release as it ran: noise multiplier z, clip C and sampling rate q (checkpointed per round)."""

    noise_multiplier: float
    clip: float
    sampling_rate: float

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def grouped_events(events: Sequence[RoundEvent]) -> list[dict]:
    """Consecutive equal ``events`` as ``{"rounds": k, **event}`` (``metrics.json``'s ``privacy.composed_events``)."""
    groups: list[dict] = []
    for event in events:
        if groups and groups[-1]["event"] == event:
            groups[-1]["rounds"] += 1
        else:
            groups.append({"rounds": 1, "event": event})
    return [{"rounds": g["rounds"], **g["event"].to_dict()} for g in groups]


def composed_epsilon(events: Sequence[RoundEvent], delta: float) -> float:
    """ε at ``delta`` of the rounds' ``events`` composed in one ``RdpAccountant`` (``SelfComposedDpEvent`` of each
    run of equal events; ``inf`` if any round had no noise)."""
    delta = check_delta(delta)
    if not events:
        raise ValueError("composed_epsilon: no rounds ran, so no release is accounted.")
    if any(check_noise_multiplier(e.noise_multiplier) == 0 for e in events):
        return math.inf
    groups = tuple((g["noise_multiplier"], g["rounds"], g["sampling_rate"]) for g in grouped_events(events))
    return _rdp_composed(groups, delta)


@functools.lru_cache(maxsize=1024)
def _rdp_composed(groups: tuple[tuple[float, int, float], ...], delta: float) -> float:
    """:func:`composed_epsilon` of checked ``(z, rounds, q)`` groups, kept per argument tuple."""
    if len(groups) == 1:
        return _rdp_epsilon(groups[0][0], delta, groups[0][1], groups[0][2])
    accountant = dp_accounting.rdp.RdpAccountant()
    for z, rounds, q in groups:
        accountant.compose(dp_event(z, rounds, q))
    return float(accountant.get_epsilon(delta))


def noise_multiplier_for(target_epsilon: float, delta: float, rounds: int = 1, sampling_rate: float = 1.0) -> float:
    """The smallest noise multiplier with :func:`epsilon` ≤ ``target_epsilon`` (0 for ε = ∞), via ``calibrate_dp_mechanism``."""
    delta = check_delta(delta)
    _check_schedule(rounds, sampling_rate)
    target_epsilon = check_epsilon_in_range(target_epsilon, delta, rounds, sampling_rate)
    if math.isinf(target_epsilon):
        return 0.0
    z = _calibrated(target_epsilon, delta, rounds, float(sampling_rate))
    if epsilon(z, delta, rounds, sampling_rate) > target_epsilon * (1 + 1e-6):
        raise ValueError(f"dp epsilon {target_epsilon:g}: the accountant's calibration missed it (z = {z:g}); "
                         "give --dp-noise-multiplier instead.")
    return z


@functools.lru_cache(maxsize=1024)
def _calibrated(target_epsilon: float, delta: float, rounds: int, sampling_rate: float) -> float:
    """:func:`noise_multiplier_for` of checked arguments, kept per argument tuple (a Brent search each)."""
    return float(dp_accounting.calibrate_dp_mechanism(
        dp_accounting.rdp.RdpAccountant, lambda z: dp_event(z, rounds, sampling_rate), target_epsilon, delta,
        dp_accounting.LowerEndpointAndGuess(NOISE_MULTIPLIERS[0], 1.0), tol=1e-6))


@dataclasses.dataclass(frozen=True)
class PrivacyReport:
    """The ``privacy`` section of ``metrics.json``."""

    mechanism: str
    clip: float | None
    noise_multiplier: float
    epsilon: float
    delta: float
    rounds: int
    sampling_rate: float
    details: dict = dataclasses.field(default_factory=dict)
    dp_seed: int | None = None

    def to_dict(self) -> dict:
        """The section: the fields, ``private`` (:func:`tff_esn.privacy.noise_seed.status`) and the details."""
        out = dataclasses.asdict(self)
        details, dp_seed = out.pop("details"), out.pop("dp_seed")
        out["epsilon"] = None if math.isinf(self.epsilon) else self.epsilon  # JSON has no ∞
        out["epsilon_infinite"] = math.isinf(self.epsilon)
        return {**out, **noise_seed.status(self.noise_multiplier, dp_seed), **details}
