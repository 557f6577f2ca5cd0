"""Sufficient statistics of ridge regression and their exact solution: rows are samples, ``A = Yᵀ S``,
``B = Sᵀ S`` (IncFed eq. 6), ``W = A (B + λI)⁻¹`` (eqs. 3, 10); the statistics add over any partition (eqs. 8–9)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.linalg

from tff_esn.common.run_warnings import warn

STATS_CHUNK = 64
"""Time steps whose states a chunked harvest (either backend) stacks and reduces to
statistics at once (memory O(chunk · batch · units))."""


def ridge_products(states: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Yᵀ S, Sᵀ S)`` of state rows ``S`` and targets ``Y`` (IncFed eqs. 6–7) in the rows' dtype, as float64."""
    return (targets.T @ states).astype(np.float64, copy=False), (states.T @ states).astype(np.float64, copy=False)


class SingularSystemError(np.linalg.LinAlgError):
    """``B + λI`` is singular (typically ``l2 = 0`` with fewer samples than features)."""


def singular_tolerance(eigenvalues: np.ndarray) -> float:
    """``N·ε·max |e|``: eigenvalues at or below it are rounding noise (a singular system)."""
    eigenvalues = np.asarray(eigenvalues, dtype=np.float64)
    return float(eigenvalues.size * np.finfo(np.float64).eps * np.abs(eigenvalues).max(initial=0.0))


def singular_message(l2: float) -> str:
    """The :class:`SingularSystemError` (``l2 = 0``) or RunWarning (``l2 > 0``) text of a singular ridge system."""
    if l2 == 0:
        return ("B is singular or not positive definite and l2 = 0: the ridge readout is not unique; "
                "set l2 > 0 (e.g. --l2 auto or 1e-6) or use more states than readout features.")
    return (f"B + λI is numerically singular at λ = {l2:g} (its smallest eigenvalue is at most N·ε·largest): "
            "solved by the pseudo-inverse (eigen-directions at rounding level dropped), the minimum-norm "
            "readout; a larger λ (--l2 auto) regularises it instead.")


CERTIFICATE_MARGIN = 4.0
"""Factor by which :func:`certified_regular`'s bounds must clear the singular tolerance, so that the
rounding of the computed eigenvalues (a few ε·‖M‖) cannot turn the certified case singular."""


def certified_regular(matrix: np.ndarray, lower: np.ndarray) -> bool:
    """Whether ``matrix = L Lᵀ`` is regular: ``e_min ≥ 1 / ‖L⁻¹‖_F²`` above
    :data:`CERTIFICATE_MARGIN` · N·ε·``min(trace M, ‖M‖_∞)``; ``False`` when the bounds do not decide."""
    inverse, info = scipy.linalg.lapack.dtrtri(lower, lower=1)
    if info != 0:
        return False
    inverse_norm = float(np.square(np.tril(inverse)).sum())
    largest = min(float(np.trace(matrix)), float(np.abs(matrix).sum(axis=1).max()))
    tolerance = matrix.shape[0] * np.finfo(np.float64).eps * largest
    return bool(np.isfinite(inverse_norm) and inverse_norm > 0 and 1.0 / inverse_norm > CERTIFICATE_MARGIN * tolerance)


def solve_symmetric(a: np.ndarray, matrix: np.ndarray, l2: float) -> np.ndarray:
    """``W = a · matrix⁻¹`` for ``matrix = B + λI`` (IncFed eq. 10): Cholesky, else pseudo-inverse with a RunWarning."""
    try:
        factor = scipy.linalg.cho_factor(matrix, lower=True, check_finite=True)
    except np.linalg.LinAlgError:
        factor = None
    if factor is not None and certified_regular(matrix, factor[0]):
        return scipy.linalg.cho_solve(factor, a.T).T
    eigenvalues = np.linalg.eigvalsh(matrix)
    if factor is not None and eigenvalues[0] > singular_tolerance(eigenvalues):
        return scipy.linalg.cho_solve(factor, a.T).T
    if l2 == 0:
        raise SingularSystemError(singular_message(l2))
    warn(singular_message(l2))
    eigenvalues, vectors = np.linalg.eigh(matrix)
    keep = eigenvalues > singular_tolerance(eigenvalues)
    return ((a @ vectors[:, keep]) / eigenvalues[keep]) @ vectors[:, keep].T


def _added(total: np.ndarray, part: np.ndarray) -> np.ndarray:
    """``total + part``, in place when that keeps the sum's dtype."""
    if np.result_type(total, part) == total.dtype:
        total += part
        return total
    return total + part


def _as_2d(name: str, value: np.ndarray, rows: int | None = None) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 2:
        hint = f" for a single output use {name}[:, None]" if arr.ndim == 1 else ""
        raise ValueError(f"{name}: expected a 2-D array (n_samples, n_columns), got shape {arr.shape};{hint}.")
    if rows is not None and arr.shape[0] != rows:
        raise ValueError(f"{name}: expected {rows} rows (one per state), got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or inf.")
    return arr


def with_bias(states: np.ndarray) -> np.ndarray:
    """States with a constant-1 column appended (the readout bias input)."""
    states = np.asarray(states)
    return np.concatenate([states, np.ones(states.shape[:-1] + (1,), states.dtype)], axis=-1)


def one_hot(labels: np.ndarray, n_classes: int) -> np.ndarray:
    """(n,) integer labels → (n, n_classes) float64 one-hot targets."""
    return np.eye(n_classes, dtype=np.float64)[np.asarray(labels)]


SYMMETRY_RTOL = 1e-6
"""Largest ``max |B − Bᵀ| / max |B|`` accepted as symmetric (float32 aggregation rounds at ~1e-7)."""


def asymmetry_of(matrix: np.ndarray) -> float:
    """``max |M − Mᵀ| / max |M|`` (0 for a zero matrix): how far ``M`` is from symmetric."""
    matrix = np.asarray(matrix, dtype=np.float64)
    scale = float(np.abs(matrix).max(initial=0.0))
    return 0.0 if scale == 0 else float(np.abs(matrix - matrix.T).max()) / scale


@dataclasses.dataclass(frozen=True, eq=False)
class RidgeStats:
    """Ridge statistics ``A = Yᵀ S``, ``B = Sᵀ S`` (float64) of ``n`` samples of ``clients`` parties (IncFed eq. 7)."""

    A: np.ndarray
    B: np.ndarray
    n: int
    clients: int = 1
    bias: bool = False

    def __post_init__(self) -> None:
        if self.A.ndim != 2 or self.B.ndim != 2 or self.B.shape != (self.A.shape[1], self.A.shape[1]):
            raise ValueError(
                f"RidgeStats: A must be (n_outputs, n_features) and B (n_features, n_features); "
                f"got A {self.A.shape}, B {self.B.shape}."
            )

    @classmethod
    def zeros(cls, n_features: int, n_outputs: int, *, bias: bool = False) -> "RidgeStats":
        """Empty statistics (no samples, no clients): the identity of ``+``."""
        f = n_features + int(bias)
        return cls(np.zeros((n_outputs, f)), np.zeros((f, f)), 0, 0, bias)

    @classmethod
    def from_states(cls, states: np.ndarray, targets: np.ndarray, *, bias: bool = False) -> "RidgeStats":
        """Statistics of one client's states (n, N_R) and targets (n, N_Y) (IncFed eq. 6)."""
        s = _as_2d("states", states)
        y = _as_2d("targets", targets, rows=s.shape[0])
        if s.shape[0] == 0:
            raise ValueError("states: no samples; a client needs at least one state.")
        if bias:
            s = with_bias(s)
        return cls(*ridge_products(s, y), s.shape[0], 1, bias)

    @property
    def n_features(self) -> int:
        """Columns of ``W`` (including the bias column when ``bias``)."""
        return self.B.shape[0]

    @property
    def n_outputs(self) -> int:
        return self.A.shape[0]

    def _check_compatible(self, other: "RidgeStats") -> None:
        if self.A.shape != other.A.shape or self.bias != other.bias:
            raise ValueError(
                "RidgeStats: statistics of different shapes cannot be merged "
                f"(A {self.A.shape} bias={self.bias} vs A {other.A.shape} bias={other.bias}); "
                "every client must use the same reservoir size and readout layout."
            )

    def __add__(self, other: "RidgeStats") -> "RidgeStats":
        """Merge (IncFed eqs. 8–9): sums of A, B, n and client counts."""
        self._check_compatible(other)
        return RidgeStats(self.A + other.A, self.B + other.B, self.n + other.n,
                          self.clients + other.clients, self.bias)

    def __radd__(self, other):
        if isinstance(other, int) and other == 0:  # support builtin sum()
            return self
        return self.__add__(other)

    @staticmethod
    def sum(parts: Iterable["RidgeStats"]) -> "RidgeStats":
        """Sum of an iterable of statistics (at least one), added in order as it is read (a stream of clients is
        released part by part): the sums of chained ``+``, without a copy per part."""
        parts = iter(parts)
        first = next(parts, None)
        if first is None:
            raise ValueError("RidgeStats.sum: no statistics to sum (no clients).")
        A, B, n, clients, added = first.A, first.B, first.n, first.clients, False
        for part in parts:
            first._check_compatible(part)
            if not added:
                A, B, added = A.copy(), B.copy(), True
            A, B = _added(A, part.A), _added(B, part.B)
            n, clients = n + part.n, clients + part.clients
        return RidgeStats(A, B, n, clients, first.bias) if added else first

    def update(self, states: np.ndarray, targets: np.ndarray) -> "RidgeStats":
        """Incremental update with new local data (IncFed eqs. 11–12); same client count."""
        new = RidgeStats.from_states(states, targets, bias=self.bias)
        self._check_compatible(new)
        return RidgeStats(self.A + new.A, self.B + new.B, self.n + new.n, self.clients, self.bias)

    def regularized(self, l2: float, *, per_client: bool = False) -> np.ndarray:
        """``B + λI``, or ``B + clients·λI`` with ``per_client`` (each client adds λI to its B_c, IncFed eq. 7)."""
        if not np.isfinite(l2) or l2 < 0:
            raise ValueError(f"l2: expected a finite number ≥ 0, got {l2!r}.")
        scale = l2 * (self.clients if per_client else 1)
        return self.B + scale * np.eye(self.n_features)

    def _check_solvable(self, method: str) -> None:
        """Raises ``ValueError`` for statistics without samples or with a non-symmetric ``B``."""
        if self.n == 0:
            raise ValueError(f"RidgeStats.{method}: no samples were accumulated (empty clients?).")
        asymmetry = asymmetry_of(self.B)
        if asymmetry > SYMMETRY_RTOL:
            raise ValueError(
                f"RidgeStats.{method}: B is not symmetric (max |B − Bᵀ| / max |B| = {asymmetry:.2e} > "
                f"{SYMMETRY_RTOL:g}); the Cholesky solve needs B = Sᵀ S. Solve a non-symmetric system by LU "
                "(tff_esn.closed_form.partial_incfed.solve_general)."
            )

    def solve(self, l2: float, *, per_client: bool = False) -> np.ndarray:
        """Readout ``W = A (B + λI)⁻¹`` (IncFed eq. 10) by :func:`solve_symmetric`; ``B`` must be symmetric."""
        self._check_solvable("solve")
        return solve_symmetric(self.A, self.regularized(l2, per_client=per_client), l2)

    def solve_path(self, l2s: Sequence[float], *, per_client: bool = False) -> np.ndarray:
        """``W(λ) = (A V) diag(1 / (e + λ)) Vᵀ`` for every λ > 0 of ``l2s``, from one eigendecomposition of ``B``."""
        self._check_solvable("solve_path")
        grid = np.asarray(l2s, dtype=np.float64)
        if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
            raise ValueError(f"l2s: expected a non-empty sequence of finite numbers > 0, got {l2s!r}.")
        scale = self.clients if per_client else 1
        eigenvalues, vectors = np.linalg.eigh(self.B)
        eigenvalues = np.clip(eigenvalues, 0.0, None)  # B = Sᵀ S is PSD; rounding may give tiny negatives
        projected = self.A @ vectors
        return np.stack([(projected / (eigenvalues + scale * l2)) @ vectors.T for l2 in grid])


def predict(weights: np.ndarray, states: np.ndarray, *, bias: bool = False) -> np.ndarray:
    """Readout output ``S @ Wᵀ`` (IncFed eq. 2), appending the bias input when ``bias``."""
    states = np.asarray(states, dtype=np.float64)
    if bias:
        states = with_bias(states)
    return states @ weights.T


def size_weighted_mean(values: Sequence[np.ndarray], sizes: Sequence[float]) -> np.ndarray:
    """FedAvg's mean ``Σ_c (n_c / n) v_c`` of equally shaped per-client arrays, float64 (IncFed eq. 5, corrected)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    return np.tensordot(sizes / sizes.sum(), np.stack(values).astype(np.float64), axes=1)
