"""Partial IncFed (thesis appendix B.2–B.3): each client uploads k columns of its statistics.

Client c ranks its readout features by the importance vector ``I_c = B_c 1`` (thesis
eq. B.15, the row sums of ``B_c = S_c S_cᵀ`` read as a Fisher information, eqs. B.11–B.14),
picks ``round(α·k)`` features by importance and ``k − round(α·k)`` more uniformly at random
among the rest (§B.4: α mixes exploitation and exploration; α = 0 is the "Random"
strategy), and sends the masked matrices of eq. B.16::

    A_c* = A_c · diag(1_S),      B_c* = B_c · diag(1_S)

i.e. the k selected columns of A_c and of B_c — k(N_Y + N_F) floats, the thesis'
k(1 + N_x) for its single output — plus their indices. The server sums them (eq. B.17)
and solves ``W = A (B + λI)⁻¹`` (eq. B.4). ``B`` is no longer symmetric, so the system is
solved by LU. With k = N_F every column is sent and the result is IncFed's.

k counts readout features: the units, plus the constant bias input when the readout has one.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence

import numpy as np
import scipy.linalg

from tff_esn.incfed import check_clients
from tff_esn.ridge import RidgeStats, SingularSystemError


def importance(b: np.ndarray) -> np.ndarray:
    """``I = B 1`` (thesis eq. B.15): how much each feature correlates with all the others."""
    return np.asarray(b, dtype=np.float64).sum(axis=1)


def default_k(n_features: int, clients: int) -> int:
    """The thesis' choice k = (150 / |C| / 100) · N_x (§B.4), clipped to [1, N_F]."""
    return int(min(n_features, max(1, round(1.5 / clients * n_features))))


def check_k_alpha(k: int, alpha: float, n_features: int) -> None:
    """Raises ``ValueError`` unless 1 ≤ k ≤ n_features and 0 ≤ α ≤ 1."""
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 1 <= k <= n_features:
        raise ValueError(f"k: expected an integer in [1, {n_features}] (the readout features), got {k!r}.")
    if not np.isfinite(alpha) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha: expected a number in [0, 1], got {alpha!r}.")


def select_features(scores: np.ndarray, k: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``round(α k)`` top-importance features plus random others, k in all."""
    scores = np.asarray(scores, dtype=np.float64)
    check_k_alpha(k, alpha, scores.size)
    n_top = int(round(alpha * k))
    order = np.argsort(-scores, kind="stable")
    top, rest = order[:n_top], order[n_top:]
    explore = rng.choice(rest, size=k - n_top, replace=False) if k > n_top else np.empty(0, np.int64)
    return np.sort(np.concatenate([top, explore]).astype(np.int64))


def mask_stats(stats: RidgeStats, features: np.ndarray) -> RidgeStats:
    """``A_c*``, ``B_c*`` of thesis eq. B.16: the columns outside ``features`` zeroed."""
    mask = np.zeros(stats.n_features)
    mask[np.asarray(features, dtype=np.int64)] = 1.0
    return RidgeStats(stats.A * mask, stats.B * mask, stats.n, stats.clients, stats.bias)


def solve_general(total: RidgeStats, l2: float) -> np.ndarray:
    """``W = A (B + λI)⁻¹`` for a non-symmetric ``B`` (LU; no explicit inverse).

    Raises :class:`SingularSystemError` when the system is singular or, with ``l2 = 0``,
    numerically ill-conditioned.
    """
    matrix = total.regularized(l2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(matrix.T, total.A.T).T
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning) as err:
        if l2 > 0 and isinstance(err, scipy.linalg.LinAlgWarning):
            warnings.warn(f"Partial IncFed: ill-conditioned system ({err}).", RuntimeWarning, stacklevel=2)
            return scipy.linalg.solve(matrix.T, total.A.T).T
        raise SingularSystemError(
            f"B* + λI is singular (l2={l2}); features no client selected have a zero column: set l2 > 0."
        ) from None


@dataclasses.dataclass(frozen=True, eq=False)
class PartialResult:
    """Readout ``W`` and each client's selected feature indices."""

    readout: np.ndarray
    selected: tuple[np.ndarray, ...]


def fit_partial_incfed(stats: Sequence[RidgeStats], k: int, alpha: float, l2: float, *, seed: int = 0) -> PartialResult:
    """Partial IncFed readout (thesis eqs. B.15–B.17, B.4); client i draws from seed (seed, i)."""
    stats = check_clients(stats)
    check_k_alpha(k, alpha, stats[0].n_features)
    selected = tuple(
        select_features(importance(s.B), k, alpha, np.random.default_rng(np.random.SeedSequence([seed, i])))
        for i, s in enumerate(stats)
    )
    total = RidgeStats.sum(mask_stats(s, sel) for s, sel in zip(stats, selected))
    return PartialResult(solve_general(total, l2), selected)
