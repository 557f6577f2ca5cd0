"""Recursive least squares: ``P = (Σ s sᵀ + λI)⁻¹`` from ``I/λ``; a block ``S``, ``Y`` gives
``K = P Sᵀ (I_m + S P Sᵀ)⁻¹``, ``W ← W + (Y − S Wᵀ)ᵀ Kᵀ``, ``P ← P − K S P``: the batch ridge readout (IncFed eq. 3)."""

from __future__ import annotations

import numpy as np

from tff_esn.esn.ridge import with_bias


class RLSReadout:
    """An online ridge readout (module docstring); ``bias`` appends the constant-1 input to every row."""

    def __init__(self, n_features: int, n_outputs: int, l2: float, *, bias: bool = False):
        if not np.isfinite(l2) or l2 <= 0:
            raise ValueError(f"l2 (--l2): RLS starts from P = I/λ and needs a finite λ > 0, got {l2!r}.")
        self.bias = bias
        self.P = np.eye(n_features) / l2
        self.W = np.zeros((n_outputs, n_features))
        self.n = 0

    def update(self, states: np.ndarray, targets: np.ndarray) -> "RLSReadout":
        """Adds a block of ``states`` (m, N_R) and ``targets`` (m, N_Y) (module docstring)."""
        s = np.asarray(states, np.float64)
        y = np.asarray(targets, np.float64)
        if self.bias:
            s = with_bias(s)
        if s.shape[0] <= s.shape[1]:
            ps = self.P @ s.T
            gain = np.linalg.solve(np.eye(s.shape[0]) + s @ ps, ps.T).T
            self.P = self.P - gain @ ps.T
        else:  # the same P and gain through the N_F × N_F system: fewer flops for a block of m > N_F states
            self.P = np.linalg.inv(np.linalg.inv(self.P) + s.T @ s)
            gain = self.P @ s.T
        self.W = self.W + (y - s @ self.W.T).T @ gain.T
        self.P = (self.P + self.P.T) / 2
        self.n += s.shape[0]
        return self

    @property
    def readout(self) -> np.ndarray:
        """The readout ``W`` (N_Y, N_F) after the blocks seen so far."""
        return self.W.copy()
