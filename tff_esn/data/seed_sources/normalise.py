"""Per-subject normalisations of the thesis and paper pipelines (thesis §5.2, FedIP §3)."""

from __future__ import annotations

import numpy as np

MA_MODES = ("divide", "subtract")


def standardize_to(x: np.ndarray, reference: np.ndarray, *, what: str) -> np.ndarray:
    """``(x − mean(ref)) / std(ref)`` per column (baseline: thesis §5.2; whole recording: FedIP §3)."""
    if reference.shape[0] == 0:
        raise ValueError(f"{what}: no samples to standardize against.")
    mean = np.nanmean(reference, axis=0)
    std = np.nanstd(reference, axis=0)
    flat = np.flatnonzero(~(std > 0))
    if flat.size:
        raise ValueError(f"{what}: column(s) {flat.tolist()} are constant over the reference samples "
                         "(a flat signal cannot be standardized).")
    return (x - mean) / std


def causal_moving_average(x: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean ``mean(x[max(0, t − window + 1) … t])`` along axis 0 (prefix sums; causal)."""
    pre = np.concatenate([np.zeros((1,) + x.shape[1:]), np.cumsum(x, axis=0, dtype=np.float64)])
    t = np.arange(1, x.shape[0] + 1)
    start = np.maximum(t - window, 0)
    counts = (t - start).reshape((-1,) + (1,) * (x.ndim - 1))
    return (pre[t] - pre[start]) / counts


def moving_average_normalise(x: np.ndarray, window: int, mode: str = "divide", eps: float = 1e-3) -> np.ndarray:
    """Causal moving-average normalisation (thesis §5.2, Table 5.3): ``x/MA`` (``|MA|`` ≥ ``eps``) or ``x − MA``."""
    ma = causal_moving_average(x, window)
    if mode == "subtract":
        return x - ma
    denom = np.where(np.abs(ma) < eps, np.where(ma < 0, -eps, eps), ma)
    return x / denom
