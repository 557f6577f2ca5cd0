"""pFedRR: partial federated ridge regression with importance (I-) or random (R-) units.

pFedRR §2: client c keeps ``A_c`` whole and sparsifies ``B_c`` to
``B̃_c = B_c ⊙ (M_S + I)`` (eq. 2), where ``M_S[i, j] = 1`` for ``i ≠ j`` both selected:
the diagonal plus the block of the selected units. The server solves
``W = (Σ A_c)(Σ B̃_c + λI)⁻¹``. ``B̃_c`` is block-diagonal up to a permutation (the
selected block of ``B_c`` and a non-negative diagonal), hence symmetric positive
semi-definite, and the Cholesky solve of :class:`RidgeStats` applies.

I-pFedRR ranks unit i by ``I_i = Σ_j B_ij²`` (eq. 5, the squared row of the Fisher matrix
``B``, eq. 4), min-max scales I to [0, 1] and selects ``S = {i : I_i ≥ 1 − τ}``. The paper
writes ``>`` (and ``0 ≤ i < N_x − 1``, an off-by-one): with ``>`` the least important unit,
scaled to 0, could never be chosen, so we use ``≥`` and accept τ ∈ (0, 1]; τ = 1 selects
every unit and gives the exact FedRR readout. When all importances are equal every unit
is selected. R-pFedRR selects the same number of units uniformly at random per client.
The three readouts (exact FedRR, I-, R-) are solved from the same client statistics on
the same reservoir in one pass (pFedRR §3). Units are the readout features, including the
bias input when the readout has one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from tff_esn.incfed import check_clients
from tff_esn.ridge import RidgeStats


def importance(b: np.ndarray) -> np.ndarray:
    """``Σ_j B_ij²`` min-max scaled to [0, 1] (pFedRR eq. 5); all ones when constant."""
    values = np.square(np.asarray(b, dtype=np.float64)).sum(axis=1)
    span = values.max() - values.min()
    return np.ones_like(values) if span <= 0 else (values - values.min()) / span


def check_tau(tau: float) -> None:
    if not isinstance(tau, (int, float, np.floating)) or not np.isfinite(tau) or not 0 < tau <= 1:
        raise ValueError(f"tau: expected a number in (0, 1], got {tau!r}.")


def select_important(b: np.ndarray, tau: float) -> np.ndarray:
    """Sorted indices ``{i : I_i ≥ 1 − τ}`` of the scaled importance (pFedRR §2)."""
    check_tau(tau)
    return np.flatnonzero(importance(b) >= 1.0 - tau)


def sparsify(stats: RidgeStats, units: np.ndarray) -> RidgeStats:
    """``(A_c, B_c ⊙ (M_S + I))`` for the selected ``units`` (pFedRR eq. 2)."""
    keep = np.zeros(stats.n_features, dtype=bool)
    keep[np.asarray(units, dtype=np.int64)] = True
    mask = np.outer(keep, keep) | np.eye(stats.n_features, dtype=bool)
    return RidgeStats(stats.A, np.where(mask, stats.B, 0.0), stats.n, stats.clients, stats.bias)


def random_units(n_features: int, size: int, seed: int, client: int) -> np.ndarray:
    """R-pFedRR: ``size`` of ``n_features`` units uniformly at random for client number ``client``,
    sorted; drawn with seed ``(seed, client)``."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, client]))
    return np.sort(rng.choice(n_features, size=size, replace=False))


@dataclasses.dataclass(frozen=True, eq=False)
class PFedRRResult:
    """The exact (FedRR), I-pFedRR and R-pFedRR readouts and each client's selections."""

    exact: np.ndarray
    important: np.ndarray
    random: np.ndarray
    important_units: tuple[np.ndarray, ...]
    random_units: tuple[np.ndarray, ...]

    @property
    def percent_units(self) -> float:
        """Mean share of selected units over clients, in % (pFedRR Table 1)."""
        n_features = self.exact.shape[1]
        return float(np.mean([u.size for u in self.important_units]) / n_features * 100)


def fit_pfedrr(stats: Sequence[RidgeStats], tau: float, l2: float, *, seed: int = 0,
               per_client: bool = False) -> PFedRRResult:
    """FedRR, I-pFedRR and R-pFedRR readouts from one set of client statistics.

    R-pFedRR's client i draws its units with seed ``(seed, i)``.
    """
    stats = check_clients(stats)
    check_tau(tau)
    important = tuple(select_important(s.B, tau) for s in stats)
    random = tuple(random_units(s.n_features, sel.size, seed, i) for i, (s, sel) in enumerate(zip(stats, important)))

    def solve(parts):
        return RidgeStats.sum(parts).solve(l2, per_client=per_client)

    return PFedRRResult(
        exact=solve(stats),
        important=solve(sparsify(s, u) for s, u in zip(stats, important)),
        random=solve(sparsify(s, u) for s, u in zip(stats, random)),
        important_units=important,
        random_units=random,
    )
