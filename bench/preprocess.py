"""Preprocessing speed: windowed HRV vs ``neurokit2.hrv_time``, and the thesis pipeline per subject.

Workload: one synthetic WESAD subject of ``minutes`` (100 ≈ a real subject; ``--quick``: 20).
Reported, each measured in this run:

* windowed HRV at a 1 s stride (one 25-s window per second) — ours (prefix sums) vs
  ``nk.hrv_time`` called per window (timed on a sample of windows, extrapolated);
* ``thesis_features`` for the whole subject, and the generation of the subject for scale
  (both devices, and wrist only — what the thesis pipeline's synthetic source simulates;
  the budget: 15 wrist-only subjects + their features within 10 min on 2 cores).
"""

from __future__ import annotations

import time
import warnings

import numpy as np


def main(flags: list[str]) -> None:
    import neurokit2 as nk

    from tff_esn.data.seed_sources.hrv import windowed_hrv
    from tff_esn.data.seed_sources.synthetic_wesad import generate_subject
    from tff_esn.data.seed_sources.wesad import thesis_features

    minutes = 20.0 if "--quick" in flags else 100.0
    t0 = time.perf_counter()
    subject = generate_subject("S2", minutes=minutes, seed=0)
    t_gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    generate_subject("S2", minutes=minutes, seed=0, devices=("wrist",))
    t_wrist = time.perf_counter() - t0

    bvp = subject["signal"]["wrist"]["BVP"].ravel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peaks = nk.ppg_findpeaks(nk.ppg_clean(bvp, sampling_rate=64), sampling_rate=64)["PPG_Peaks"]
    window = 25 * 64
    ends = np.arange(window, bvp.size, 64)
    t0 = time.perf_counter()
    windowed_hrv(peaks, 64, ends, window)
    t_ours = time.perf_counter() - t0
    sample = ends[:: max(1, len(ends) // 100)]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for end in sample:
            nk.hrv_time(peaks[(peaks > end - window) & (peaks <= end)], sampling_rate=64)
    t_nk = (time.perf_counter() - t0) / len(sample) * len(ends)

    t0 = time.perf_counter()
    x, _ = thesis_features(subject, hrv_window_s=25)
    t_thesis = time.perf_counter() - t0

    print(f"synthetic WESAD subject: {minutes:g} min, {len(peaks)} beats, {len(ends)} HRV windows (25 s, 1 s stride)")
    print("| step | seconds | ratio |\n|---|---:|---:|")
    print(f"| nk.hrv_time per window (reference, extrapolated from {len(sample)}) | {t_nk:.2f} | 1.00 |")
    print(f"| windowed_hrv (prefix sums, 6 indices) | {t_ours:.4f} | {t_ours / t_nk:.5f} |")
    print(f"| thesis_features (whole subject → {x.shape[0]} steps) | {t_thesis:.2f} | {t_thesis / t_nk:.4f} |")
    print(f"| generate_subject, chest + wrist (for scale) | {t_gen:.2f} | {t_gen / t_nk:.3f} |")
    print(f"| generate_subject, wrist only (thesis pipeline) | {t_wrist:.2f} | {t_wrist / t_nk:.4f} |")
    total = 15 * (t_wrist + t_thesis)
    print(f"| 15 wrist-only subjects + thesis_features (estimate) | {total:.1f} | {total / t_nk:.3f} |")
