"""pFedRR: partial federated ridge regression with importance (I-) or random (R-) units.

pFedRR §2: client c sparsifies ``B_c`` to ``B̃_c = B_c ⊙ (M_S + I)`` (eq. 2), where
``M_S[i, j] = 1`` for ``i ≠ j`` both selected: the diagonal plus the block of the selected
units. The server solves ``W = (Σ A_c)(Σ B̃_c + λI)⁻¹``. ``B̃_c`` is block-diagonal up to a
permutation (the selected block of ``B_c`` and a non-negative diagonal), hence symmetric
positive semi-definite, and the Cholesky solve of :class:`RidgeStats` applies.

I-pFedRR ranks unit i by ``I_i = Σ_j B_ij²`` (eq. 5, the squared row of the Fisher matrix
``B``, eq. 4), min-max scales I to [0, 1] and selects ``S = {i : I_i ≥ 1 − τ}``. The paper
writes ``>`` (and ``0 ≤ i < N_x − 1``, an off-by-one): with ``>`` the least important unit,
scaled to 0, could never be chosen, so we use ``≥`` and accept τ ∈ (0, 1]; τ = 1 selects
every unit and gives the exact FedRR readout. When all importances are equal every unit
is selected. R-pFedRR selects the same number of units uniformly at random per client.
The three readouts (exact FedRR, I-, R-) are solved from the same client statistics on
the same reservoir in one pass (pFedRR §3).

Two deviations from the paper's text, with their evidence:

* **The readout bias is not a unit.** pFedRR's ``S`` ranges over the N_x reservoir units;
  its bias ``b_out`` (eq. 1) is separate. When the readout has a bias input (the constant-1
  last feature), it is left out of the ranking and the min-max scaling, kept in every
  selection (its row and column of ``B_c``: |S| + 1 floats more) and not counted in
  "% units". Ranked as a unit, its importance ``n² + Σ_j (Σ_t s_j)²`` dwarfs the units'
  with mean states: on OSULeaf (20 clients, 300 units, mean states) it was the only
  feature selected at every τ (0.3 % of the features, accuracy 0.17 against FedRR's 0.77).
* **A_c is masked like B̃_c** (``reading="consistent"``, the default): ``A_c* = A_c D_c``
  with ``D_c = diag(1_S)``; the paper sends ``A_c`` whole (``reading="literal"``). With
  ``A_c`` whole, a unit that no client selects has only its diagonal in ``B̃``, so its
  weight is its own univariate regression ``A_j / (B_jj + λ)``; the readout adds hundreds
  of such fits of correlated units, each to the full target, and their sum swamps the
  jointly fitted part. The system is well-posed (PSD, any λ > 0) but the model
  over-counts: on OSULeaf (mean states, 300 units) literal I-pFedRR predicts one or two
  classes, 0.17–0.22 at τ 0.1–0.9 (9 % of the units at τ 0.5; FedRR 0.77), where the
  consistent reading gives 0.42 (9 %), 0.65 (23 %) and 0.74 (53 %). A larger λ does not
  rescue the literal reading (without readout bias, τ 0.5: 0.16–0.18 for λ from 1e-6 to
  100; FedRR itself falls to chance from λ 0.1 on, the states' diagonal being ~0.16). The consistent
  ``(A_c D_c, B̃_c)`` is the ridge problem ``Σ_c ‖Y_c − W D_c S_c‖²`` plus the penalty
  ``Σ_c Σ_{j∉S_c} B_c,jj W_j²`` (the kept diagonal of the unselected units): a unit only
  learns from the clients that selected it. On synthetic WESAD (300 units, 9 clients)
  it gives 0.75 with 8 % of the units against FedRR's 0.72 (literal: 0.70).

The units are the readout features without the bias input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import numpy as np

from tff_esn.closed_form.configs import READINGS
from tff_esn.closed_form.incfed import check_clients
from tff_esn.esn.ridge import RidgeStats

Reading = Literal["consistent", "literal"]


def squared_row_importance(b: np.ndarray) -> np.ndarray:
    """pFedRR's importance ``I_i = Σ_j B_ij²`` (eq. 5, the squared rows of the Fisher matrix
    ``B``, eq. 4), min-max scaled to [0, 1]; all ones when constant.

    Not Partial IncFed's ``B 1`` (:func:`~tff_esn.closed_form.partial_incfed.row_sum_importance`).
    """
    values = np.square(np.asarray(b, dtype=np.float64)).sum(axis=1)
    span = values.max() - values.min()
    return np.ones_like(values) if span <= 0 else (values - values.min()) / span


def check_tau(tau: float) -> None:
    if not isinstance(tau, (int, float, np.floating)) or not np.isfinite(tau) or not 0 < tau <= 1:
        raise ValueError(f"tau: expected a number in (0, 1], got {tau!r}.")


def check_reading(reading: str) -> None:
    if reading not in READINGS:
        raise ValueError(f"reading: expected one of {', '.join(READINGS)}, got {reading!r}.")


def n_units(stats: RidgeStats) -> int:
    """Reservoir units among the readout features (all but the bias input)."""
    return stats.n_features - int(stats.bias)


def with_bias_index(units: np.ndarray, stats: RidgeStats) -> np.ndarray:
    """``units`` plus the bias feature's index when the readout has one (always kept)."""
    units = np.asarray(units, dtype=np.int64)
    return np.append(units, stats.n_features - 1) if stats.bias else units


def select_important(stats: RidgeStats, tau: float) -> np.ndarray:
    """Sorted unit indices ``{i : I_i ≥ 1 − τ}`` of the scaled importance over the units (pFedRR §2)."""
    check_tau(tau)
    units = n_units(stats)
    return np.flatnonzero(squared_row_importance(stats.B[:units, :units]) >= 1.0 - tau)


def sparsify(stats: RidgeStats, features: np.ndarray, reading: Reading = "consistent") -> RidgeStats:
    """``(A_c D, B_c ⊙ (M_S + I))`` (consistent) or ``(A_c, B_c ⊙ (M_S + I))`` (literal, pFedRR eq. 2)
    for the selected ``features`` (unit indices, plus the bias index when kept)."""
    check_reading(reading)
    keep = np.zeros(stats.n_features, dtype=bool)
    keep[np.asarray(features, dtype=np.int64)] = True
    mask = np.outer(keep, keep) | np.eye(stats.n_features, dtype=bool)
    a = stats.A * keep if reading == "consistent" else stats.A
    return RidgeStats(a, np.where(mask, stats.B, 0.0), stats.n, stats.clients, stats.bias)


def random_units(n_units: int, size: int, seed: int, client: int) -> np.ndarray:
    """R-pFedRR: ``size`` of ``n_units`` units uniformly at random for client number ``client``,
    sorted; drawn with seed ``(seed, client)``."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, client]))
    return np.sort(rng.choice(n_units, size=size, replace=False))


@dataclasses.dataclass(frozen=True, eq=False)
class ClientParts:
    """One client's I- and R-pFedRR statistics and its selected unit indices (bias excluded)."""

    important: RidgeStats
    random: RidgeStats
    important_units: np.ndarray
    random_units: np.ndarray


def client_parts(stats: RidgeStats, tau: float, seed: int, client: int,
                 reading: Reading = "consistent") -> ClientParts:
    """The I- and R-pFedRR statistics client number ``client`` sends (pFedRR eqs. 2, 5)."""
    important = select_important(stats, tau)
    random = random_units(n_units(stats), important.size, seed, client)
    return ClientParts(sparsify(stats, with_bias_index(important, stats), reading),
                       sparsify(stats, with_bias_index(random, stats), reading), important, random)


@dataclasses.dataclass(frozen=True, eq=False)
class PFedRRResult:
    """The exact (FedRR), I-pFedRR and R-pFedRR readouts and each client's selected units."""

    exact: np.ndarray
    important: np.ndarray
    random: np.ndarray
    important_units: tuple[np.ndarray, ...]
    random_units: tuple[np.ndarray, ...]
    n_units: int

    @property
    def percent_units(self) -> float:
        """Mean share of selected reservoir units over clients, in % (pFedRR Table 1)."""
        return float(np.mean([u.size for u in self.important_units]) / self.n_units * 100)


def fit_pfedrr(stats: Sequence[RidgeStats], tau: float, l2: float, *, seed: int = 0,
               per_client: bool = False, reading: Reading = "consistent",
               aggregate: Callable[[Iterable[RidgeStats]], RidgeStats] = RidgeStats.sum) -> PFedRRResult:
    """FedRR, I-pFedRR and R-pFedRR readouts from one set of client statistics.

    R-pFedRR's client i draws its units with seed ``(seed, i)``; ``reading`` says whether
    A_c is masked like B̃_c (consistent, default) or sent whole (literal; see the module).
    ``aggregate`` is the server's sum of the clients' uploads (plain, or
    :class:`tff_esn.privacy.aggregation.SecureRidgeSum`).
    """
    stats = check_clients(stats)
    check_tau(tau)
    check_reading(reading)
    parts = [client_parts(s, tau, seed, i, reading) for i, s in enumerate(stats)]

    def solve(items):
        return aggregate(items).solve(l2, per_client=per_client)

    return PFedRRResult(
        exact=solve(stats),
        important=solve(p.important for p in parts),
        random=solve(p.random for p in parts),
        important_units=tuple(p.important_units for p in parts),
        random_units=tuple(p.random_units for p in parts),
        n_units=n_units(stats[0]),
    )
