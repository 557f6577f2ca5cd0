"""Windowed time-domain heart-rate variability, vectorised over windows.

:func:`windowed_hrv` gives ``neurokit2.hrv_time``'s indices (v0.2.12 formulas) for every window at once from
prefix sums over the RR intervals; a window with too few intervals for an index gives NaN.
"""

from __future__ import annotations

import numpy as np

HRV_INDICES = ("MeanNN", "SDNN", "RMSSD", "SDSD", "pNN50", "pNN20")
"""Time-domain indices :func:`windowed_hrv` computes, named as ``hrv_time`` names them (without ``HRV_``)."""


def windowed_hrv(peaks: np.ndarray, sampling_rate: float, ends: np.ndarray, window: int,
                 indices: tuple[str, ...] = HRV_INDICES) -> dict[str, np.ndarray]:
    """``{index: (len(ends),)}``: HRV ``indices`` of ``peaks`` (at ``sampling_rate`` Hz) per trailing window
    ``(end − window, end]``; NaN with too few peaks."""
    peaks = np.asarray(peaks, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    rri = np.diff(peaks) / sampling_rate * 1000.0
    center = rri.mean() if len(rri) else 0.0
    drr = np.diff(rri)
    # window k: peaks [lo, hi) → intervals [lo, hi − 1) → successive differences [lo, hi − 2)
    lo = np.searchsorted(peaks, ends - window, side="right")
    hi = np.searchsorted(peaks, ends, side="right")
    n_rr = np.maximum(hi - lo - 1, 0)
    n_d = np.maximum(n_rr - 1, 0)
    a = np.minimum(lo, rri.size)  # an empty window's start may lie past the last interval
    b = a + n_rr
    c = np.minimum(lo, drr.size)
    d = c + n_d

    def window_sum(values: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
        pre = np.concatenate([[0.0], np.cumsum(values, dtype=np.float64)])
        return pre[stop] - pre[start]

    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        s1 = window_sum(rri - center, a, b)
        mean_c = s1 / n_rr
        if "MeanNN" in indices:
            out["MeanNN"] = np.where(n_rr >= 1, center + mean_c, np.nan)
        if "SDNN" in indices:
            s2 = window_sum((rri - center) ** 2, a, b)
            var = np.maximum(s2 - s1 * mean_c, 0.0) / (n_rr - 1)
            out["SDNN"] = np.where(n_rr >= 2, np.sqrt(var), np.nan)
        if "RMSSD" in indices:
            out["RMSSD"] = np.where(n_d >= 1, np.sqrt(window_sum(drr ** 2, c, d) / n_d), np.nan)
        if "SDSD" in indices:
            t1 = window_sum(drr, c, d)
            t2 = window_sum(drr ** 2, c, d)
            var = np.maximum(t2 - t1 * t1 / n_d, 0.0) / (n_d - 1)
            out["SDSD"] = np.where(n_d >= 2, np.sqrt(var), np.nan)
        for name, threshold in (("pNN50", 50.0), ("pNN20", 20.0)):
            if name in indices:
                count = window_sum((np.abs(drr) > threshold).astype(np.float64), c, d)
                out[name] = np.where(n_rr >= 1, count / (n_d + 1) * 100.0, np.nan)
    return out
