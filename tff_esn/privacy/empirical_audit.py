"""The empirical privacy audit: a lower bound on ε from many runs of a mechanism on neighbouring data.

The likelihood-ratio test ``⟨x, w⟩``, ``w = (μ₁ − μ₀)/σ²``, thresholded on half the trials; the other
half's Clopper–Pearson rates give ``ε ≥ log((TPR_lo − δ) / FPR_hi)`` and its mirror images
(Jagielski et al. 2020; Nasr et al. 2021).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from scipy import stats

from tff_esn.common import streams


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """The two-sided ``1 − alpha`` Clopper–Pearson interval of a binomial proportion."""
    low = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    return low, high


def epsilon_lower_bound(true_positives: int, false_positives: int, trials: int, delta: float,
                        alpha: float = 0.05) -> float:
    """The ε any (ε, δ)-DP mechanism must exceed for these counts on ``trials`` runs per world (module docstring); 0 if none."""
    tpr_lo, tpr_hi = clopper_pearson(true_positives, trials, alpha / 2)
    fpr_lo, fpr_hi = clopper_pearson(false_positives, trials, alpha / 2)
    bounds = [0.0]
    # (ε, δ)-DP holds both ways: P₁(S) ≤ e^ε P₀(S) + δ and P₀(S) ≤ e^ε P₁(S) + δ, for S and its complement
    for p_lo, q_hi in ((tpr_lo, fpr_hi), (1 - fpr_hi, 1 - tpr_lo), (fpr_lo, tpr_hi), (1 - tpr_hi, 1 - fpr_lo)):
        if p_lo - delta > 0 and q_hi > 0:
            bounds.append(math.log((p_lo - delta) / q_hi))
    return max(bounds)


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """What :func:`audit` measured on the held-out half of the trials."""

    trials: int
    true_positives: int
    false_positives: int
    threshold: float
    epsilon_lower_bound: float
    alpha: float

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _best_threshold(scores0: np.ndarray, scores1: np.ndarray, delta: float, alpha: float) -> float:
    """The threshold (score > t: world 1) with the largest ε bound on these scores."""
    candidates = np.unique(np.concatenate([scores0, scores1]))
    n = len(scores0)
    tp = n - np.searchsorted(np.sort(scores1), candidates, side="right")
    fp = n - np.searchsorted(np.sort(scores0), candidates, side="right")
    a = alpha / 4
    tpr_lo = np.where(tp == 0, 0.0, stats.beta.ppf(a, np.maximum(tp, 1), n - tp + 1))
    fpr_hi = np.where(fp == n, 1.0, stats.beta.ppf(1 - a, fp + 1, np.maximum(n - fp, 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        bounds = np.fmax(np.log(np.maximum(tpr_lo - delta, 0) / fpr_hi),
                         np.log(np.maximum(1 - fpr_hi - delta, 0) / (1 - tpr_lo)))
    return float(candidates[int(np.nanargmax(np.where(np.isfinite(bounds), bounds, -np.inf)))])


def audit(release: Callable[[int, int], np.ndarray], trials: int, delta: float, *, direction: np.ndarray | None = None,
          alpha: float = 0.05) -> AuditResult:
    """Empirical ε lower bound of ``release(world, trial)`` (module docstring); ``direction``: first half's mean difference."""
    if trials < 4:
        raise ValueError(f"audit: expected trials ≥ 4 (half chooses the threshold), got {trials}.")
    outputs = [np.stack([np.ravel(release(world, t)) for t in range(trials)]) for world in (0, 1)]
    half = trials // 2
    if direction is None:
        direction = outputs[1][:half].mean(axis=0) - outputs[0][:half].mean(axis=0)
    scores = [o @ np.ravel(direction) for o in outputs]
    threshold = _best_threshold(scores[0][:half], scores[1][:half], delta, alpha)
    held = trials - half
    tp, fp = int(np.sum(scores[1][half:] > threshold)), int(np.sum(scores[0][half:] > threshold))
    return AuditResult(held, tp, fp, threshold, epsilon_lower_bound(tp, fp, held, delta, alpha), alpha)


@dataclasses.dataclass(frozen=True)
class Neighbours:
    """``release(world, trial)`` on neighbouring datasets, the direction ``(μ₁ − μ₀)/σ²`` and the reported ε."""

    release: Callable[[int, int], np.ndarray]
    direction: np.ndarray
    claimed_epsilon: float


def incfed_neighbours(epsilon: float, delta: float, *, dp_seed: int | None = None, features: int = 4,
                      outputs: int = 2, records: int = 6, states_per_record: int = 3, seed: int = 0) -> Neighbours:
    """IncFed's central release at ``epsilon``'s multiplier; world 1 adds a record of ``states_per_record`` states of norm C."""
    import tensorflow as tf

    from tff_esn.privacy import accounting, noise_seed
    from tff_esn.privacy.aggregation import StatsAggregation, server_noise
    from tff_esn.privacy.dp_stats import GaussianStats, clip_rows, natural_clip

    rng = streams.AUDIT_RECORDS.generator(seed)
    m, clip = states_per_record, natural_clip(features)
    states = rng.uniform(-1, 1, (records * m, features))
    labels = np.repeat(rng.integers(0, outputs, records), m)
    extra = rng.choice([-1.0, 1.0], (m, features))
    worlds = [(states, labels), (np.vstack([states, extra]), np.concatenate([labels, np.zeros(m, int)]))]
    dp = GaussianStats(accounting.noise_multiplier_for(epsilon, delta), delta, clip, m)
    upper = np.triu_indices(features)

    def totals(world: int):
        s, y = worlds[world]
        s = clip_rows(tf.constant(s, tf.float64), clip)
        onehot = tf.constant(np.eye(outputs)[y], tf.float64)
        return (tf.matmul(onehot, s, transpose_a=True), tf.matmul(s, s, transpose_a=True),
                tf.constant(float(len(y)), tf.float64), tf.constant(1, tf.int32))

    def flat(a, b, n) -> np.ndarray:
        return np.concatenate([np.ravel(a), np.asarray(b)[upper], [float(n)]])

    summed = [totals(w) for w in (0, 1)]

    def release(world: int, trial: int) -> np.ndarray:
        del trial
        agg = StatsAggregation(1, features, dp=dataclasses.replace(dp, seed=noise_seed.mechanism_seed(dp_seed)))
        a, b, n, _ = server_noise(summed[world], agg)
        return flat(a, b, n)

    clean = [flat(*s[:3]) for s in summed]
    sa, sb, sn = dp.server_stddevs(1)
    variance = np.concatenate([np.full(outputs * features, sa ** 2), np.full(len(upper[0]), sb ** 2), [sn ** 2]])
    return Neighbours(release, (clean[1] - clean[0]) / variance, accounting.epsilon(dp.noise_multiplier, delta))


def fedavg_neighbours(epsilon: float, delta: float, *, dp_seed: int | None = None, clients: int = 5, size: int = 8,
                      clip: float = 0.1, seed: int = 0) -> Neighbours:
    """One round of FedAvg's DP mean at the multiplier that meets ``epsilon``; world 1 adds a client clipped to C."""
    import tensorflow as tf

    from tff_esn.privacy import accounting, noise_seed
    from tff_esn.privacy.learning import LearningPrivacy, dp_release

    rng = streams.AUDIT_RECORDS.generator(seed)
    updates = [rng.normal(size=size) * clip / (2 * math.sqrt(size)) for _ in range(clients)]
    extra = rng.normal(size=size)
    extra *= 3 * clip / np.linalg.norm(extra)
    worlds = [updates, updates + [extra]]
    z = accounting.noise_multiplier_for(epsilon, delta)

    query = LearningPrivacy(z, clip).query(clients)
    steps = [tf.function(lambda state, r=[(tf.constant(u, tf.float32),) for u in w]: dp_release(query, r, state)[0])
             for w in worlds]
    initial = query.initial_global_state()

    def release(world: int, trial: int) -> np.ndarray:
        del trial
        seeded = initial.numerator_state._replace(seed=tf.constant([noise_seed.mechanism_seed(dp_seed), 0], tf.int64))
        return np.asarray(steps[world](initial._replace(numerator_state=seeded))[0], np.float64)

    sigma = z * clip / clients
    direction = (extra * min(1.0, clip / np.linalg.norm(extra)) / clients) / sigma ** 2
    return Neighbours(release, direction, accounting.epsilon(z, delta))


def audit_neighbours(case: Neighbours, trials: int, delta: float, alpha: float = 0.05) -> AuditResult:
    """:func:`audit` of ``case`` along its likelihood-ratio direction."""
    return audit(case.release, trials, delta, direction=case.direction, alpha=alpha)
