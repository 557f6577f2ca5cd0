"""Partial IncFed (thesis App. B.2–B.3): each client uploads the statistics of k readout features.

Client c keeps ``round(α·k)`` features by importance ``I_c = B_c 1`` (eq. B.15) and the rest at random
(§B.4), masks its statistics (eq. B.16: ``columns`` = ``B_c D_c``, ``block`` = ``D_c B_c D_c``, ``nystrom`` =
``B_c[:, S] B_c[S, S]⁺ B_c[S, :]``); the server sums (eq. B.17) and solves (eq. B.4).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import numpy as np
import scipy.linalg

from tff_esn.common import streams
from tff_esn.closed_form.configs import PartialIncFedConfig, partial_incfed_cost
from tff_esn.closed_form.private_sum import dense_if_secure, private_sum
from tff_esn.closed_form.run import Run
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.ridge import RidgeStats, SingularSystemError, singular_message
from tff_esn.common.run_warnings import warn

Mask = Literal["nystrom", "block", "columns"]
PINV_RCOND = 1e-10
"""Eigenvalues of ``B_c[S, S]`` below this share of the largest are dropped in its pseudo-inverse."""


def row_sum_importance(b: np.ndarray) -> np.ndarray:
    """Partial IncFed's importance ``I = B 1`` (thesis eq. B.15), unscaled and signed."""
    return np.asarray(b, dtype=np.float64).sum(axis=1)


def default_k(n_features: int, clients: int) -> int:
    """The thesis' choice k = (150 / |C| / 100) · N_x (§B.4), clipped to [1, N_F]."""
    return int(min(n_features, max(1, round(1.5 / clients * n_features))))


def select_features(scores: np.ndarray, k: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``round(α k)`` top-importance features plus random others, k in all."""
    scores = np.asarray(scores, dtype=np.float64)
    n_top = int(round(alpha * k))
    order = np.argsort(-scores, kind="stable")
    top, rest = order[:n_top], order[n_top:]
    explore = rng.choice(rest, size=k - n_top, replace=False) if k > n_top else np.empty(0, np.int64)
    return np.sort(np.concatenate([top, explore]).astype(np.int64))


def nystrom(stats: RidgeStats, features: np.ndarray) -> RidgeStats:
    """Client statistics completed from their ``features`` columns (module docstring, ``"nystrom"``)."""
    features = np.asarray(features, dtype=np.int64)
    values, vectors = np.linalg.eigh(stats.B[np.ix_(features, features)])
    keep = values > PINV_RCOND * max(values.max(), 0.0)
    half = vectors[:, keep] / np.sqrt(values[keep])  # B_SS⁺ = half halfᵀ
    projected = half.T @ stats.B[features, :]
    return RidgeStats(stats.A[:, features] @ half @ projected, projected.T @ projected, stats.n, stats.clients,
                      stats.bias)


def mask_stats(stats: RidgeStats, features: np.ndarray, mask: Mask = "nystrom") -> RidgeStats:
    """``A_c*``, ``B_c*`` of thesis eq. B.16 in the reading ``mask`` (block, nystrom or columns)."""
    if mask == "nystrom":
        return nystrom(stats, features)
    keep = np.zeros(stats.n_features)
    keep[np.asarray(features, dtype=np.int64)] = 1.0
    b = stats.B * np.outer(keep, keep) if mask == "block" else stats.B * keep
    return RidgeStats(stats.A * keep, b, stats.n, stats.clients, stats.bias)


def solve_general(total: RidgeStats, l2: float) -> np.ndarray:
    """``W = A (B + λI)⁻¹`` for a non-symmetric ``B`` by LU (least squares with a RunWarning if singular)."""
    matrix = total.regularized(l2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(matrix.T, total.A.T).T
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
        if l2 == 0:
            raise SingularSystemError(singular_message(l2)) from None
    warn(singular_message(l2) + " The column-masked B* of the literal eq. B.16 is not positive definite and λ "
         "does not regularise it (use mask='nystrom').")
    cutoff = matrix.shape[0] * np.finfo(np.float64).eps
    return scipy.linalg.lstsq(matrix.T, total.A.T, cond=cutoff)[0].T


@dataclasses.dataclass(frozen=True, eq=False)
class PartialResult:
    """Readout ``W`` and each client's selected feature indices."""

    readout: np.ndarray
    selected: tuple[np.ndarray, ...]


def select_all(stats: Sequence[RidgeStats], k: int, alpha: float, *, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Every client's k features (importance eq. B.15 + exploration); client i draws from ``streams.PARTIAL_FEATURES``."""
    return tuple(
        select_features(row_sum_importance(s.B), k, alpha, streams.PARTIAL_FEATURES.generator(seed, i))
        for i, s in enumerate(stats)
    )


def fit_partial_incfed(stats: Sequence[RidgeStats], k: int, alpha: float, l2: float, *, seed: int = 0,
                       mask: Mask = "nystrom",
                       aggregate: Callable[[Iterable[RidgeStats]], RidgeStats] = RidgeStats.sum) -> PartialResult:
    """Partial IncFed readout (thesis eqs. B.15–B.17, B.4) with the eq. B.16 reading ``mask``."""
    selected = select_all(stats, k, alpha, seed=seed)
    total = aggregate(mask_stats(s, sel, mask) for s, sel in zip(stats, selected))
    readout = solve_general(total, l2) if mask == "columns" else total.solve(l2)
    return PartialResult(readout, selected)


# --------------------------------------------------------------------------- the registry's run function
def run_partial_incfed(dataset: SequenceDataset, split: Split, config: PartialIncFedConfig) -> dict:
    """Partial IncFed (thesis eqs. B.15–B.17)."""
    run = Run(dataset, split, config, "partial-incfed")
    k = config.k if config.k is not None else default_k(run.n_features, len(run.train_ids))
    l2 = run.choose_l2(lambda grid: [run.scorer(fit_partial_incfed(
        run.stats(), k, config.alpha, l2, seed=config.seed, mask=config.mask).readout) for l2 in grid])
    stats, aggregate, sections = private_sum(run, run.stats)
    result = fit_partial_incfed(stats, k, config.alpha, l2, seed=config.seed, mask=config.mask, aggregate=aggregate)
    cost = dense_if_secure(run, partial_incfed_cost(k, run.n_features, run.n_outputs))
    return {**run.report(run.model(result.readout), cost, k=k, alpha=config.alpha, mask=config.mask),
            **sections()}
