"""Synthetic WESAD subjects in the exact file layout of the real data set.

Each subject follows the WESAD protocol — baseline, amusement, stress (TSST), two guided
meditations, transients in between — in one of the two published orders (amusement before
or after stress), time-scaled so the recording lasts ``minutes`` (the real protocol is
≈ 100 min, ≈ 11.5 % of it stress). Signals come from neurokit2's simulators, one call per
protocol segment with that segment's parameters: ``ecg_simulate`` (chest ECG),
``ppg_simulate`` (wrist BVP), ``rsp_simulate`` (chest Resp), ``emg_simulate`` (chest EMG),
``eda_simulate`` (skin-conductance responses on chest and wrist), on top of slow tonic
EDA/temperature levels and posture + motion accelerations.

Clients are not identically distributed: each subject draws its own baselines (heart rate,
HRV, breathing rate, tonic EDA, SCR rate, temperature, posture, sensor noise) and a
responsiveness that scales every condition effect; each segment jitters the effects. The
condition effects: stress raises heart rate, SCR rate, tonic EDA, breathing rate, muscle
activity and motion and lowers HRV and skin temperature; meditation does the reverse;
amusement lies in between. Everything is a function of ``(seed, subject)``.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from tff_esn.data.wesad import CHEST_RATE, SUBJECTS, WRIST_RATES
from tff_esn.io import atomic_write

REAL_MINUTES = 100.0
"""Length of the real protocol the segment durations below add up to."""

_T, _BASE, _STRESS, _AMUSE, _MEDI = 0, 1, 2, 3, 4
PROTOCOLS = {
    "amusement-first": ((_T, 4), (_BASE, 20), (_T, 9), (_AMUSE, 6.5), (_T, 9), (_MEDI, 7), (_T, 9),
                        (_STRESS, 11.5), (_T, 9), (_MEDI, 7), (_T, 8)),
    "stress-first": ((_T, 4), (_BASE, 20), (_T, 9), (_STRESS, 11.5), (_T, 9), (_MEDI, 7), (_T, 9),
                     (_AMUSE, 6.5), (_T, 9), (_MEDI, 7), (_T, 8)),
}
"""The two WESAD condition orders as ``(label code, real minutes)`` segments (sum 100 min)."""

# Condition effects (per unit responsiveness): Δheart rate (bpm), HRV factor, Δbreathing
# rate (/min), SCR-rate factor, Δtonic EDA (µS), motion (g), EMG bursts/min, Δskin temp (°C).
_EFFECTS = {
    _T: dict(hr=4.0, hrv=0.9, rr=1.0, scr=1.2, tonic=0.1, motion=0.05, emg=3.0, temp=0.0),
    _BASE: dict(hr=0.0, hrv=1.0, rr=0.0, scr=1.0, tonic=0.0, motion=0.01, emg=1.0, temp=0.0),
    _STRESS: dict(hr=14.0, hrv=0.55, rr=5.0, scr=2.2, tonic=0.9, motion=0.04, emg=6.0, temp=-0.4),
    _AMUSE: dict(hr=3.0, hrv=1.05, rr=1.5, scr=1.4, tonic=0.25, motion=0.015, emg=2.0, temp=0.0),
    _MEDI: dict(hr=-5.0, hrv=1.3, rr=-4.0, scr=0.5, tonic=-0.3, motion=0.005, emg=0.3, temp=0.2),
}


def protocol_seconds(minutes: float, order: str) -> np.ndarray:
    """Per-second label codes of a ``minutes``-long recording in ``order`` (segments ≥ 1 s)."""
    if order not in PROTOCOLS:
        raise ValueError(f"order: expected one of {sorted(PROTOCOLS)}, got {order!r}.")
    if not minutes > 0:
        raise ValueError(f"minutes: expected > 0, got {minutes!r}.")
    segments = PROTOCOLS[order]
    edges = np.round(np.cumsum([0.0] + [m for _, m in segments]) * 60.0 * minutes / REAL_MINUTES).astype(int)
    lengths = np.maximum(np.diff(edges), 1)
    return np.repeat([code for code, _ in segments], lengths)


def _profile(rng: np.random.Generator) -> dict[str, float]:
    return dict(
        hr=rng.uniform(60, 82), hrv=rng.uniform(0.08, 0.16), rr=rng.uniform(11, 17), scr=rng.uniform(1.0, 4.0),
        tonic_chest=rng.lognormal(1.0, 0.5), tonic_wrist=rng.lognormal(-0.3, 0.5), scr_amp=rng.uniform(0.3, 1.2),
        temp_chest=rng.uniform(33.5, 35.0), temp_wrist=rng.uniform(30.5, 33.5), responsiveness=rng.uniform(0.35, 1.3),
        noise=rng.uniform(0.5, 1.5), tilt=rng.uniform(-0.4, 0.4), bvp_gain=rng.uniform(30, 80),
    )


def _smooth_levels(per_second: np.ndarray, tau_s: float) -> np.ndarray:
    """First-order low-pass (time constant ``tau_s`` seconds) of a per-second level, causal."""
    from scipy.signal import lfilter

    a = np.exp(-1.0 / max(tau_s, 1e-6))
    return lfilter([1 - a], [1, -a], per_second, zi=[a * per_second[0]])[0]


def _on_grid(per_second: np.ndarray, rate: int) -> np.ndarray:
    """Per-second values (at t = 0.5, 1.5, …) interpolated to ``rate`` Hz."""
    t = (np.arange(per_second.size * rate) + 0.5) / rate
    return np.interp(t, np.arange(per_second.size) + 0.5, per_second)


def _simulate(fn, seconds: int, rate: int, minimum: int, *, with_length: bool = True, **kwargs) -> np.ndarray:
    """``fn`` over ``max(seconds, minimum)`` s truncated to ``seconds``: neurokit2's
    simulators fail on segments shorter than a beat or breath, and simulate 10 s when given
    ``length`` without ``duration`` (SPEC pitfalls), so both are passed."""
    n = seconds * rate
    sim_s = max(seconds, minimum)
    if fn.__name__ != "emg_simulate":
        kwargs["random_state_distort"] = "legacy"  # "spawn" costs ~10 ms of MT19937 jumps per call
    if with_length:
        kwargs["length"] = sim_s * rate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = np.asarray(fn(duration=sim_s, sampling_rate=rate, **kwargs), dtype=np.float64)
    if out.size < n:
        raise RuntimeError(f"{fn.__name__} returned {out.size} samples for {sim_s} s at {rate} Hz.")
    return out[:n]


def generate_subject(subject: str, *, minutes: float = REAL_MINUTES, seed: int = 0) -> dict:
    """One synthetic subject dict in the WESAD layout (see :mod:`tff_esn.data.wesad`)."""
    import neurokit2 as nk

    number = _subject_number(subject)
    rng = np.random.default_rng(np.random.SeedSequence([seed, number]))
    order = ("amusement-first", "stress-first")[int(rng.integers(2))]
    codes = protocol_seconds(minutes, order)
    p = _profile(rng)
    # how strongly this subject expresses each effect: overall responsiveness × per-signal factor
    r_k = {k: p["responsiveness"] * rng.uniform(0.2, 1.6) for k in ("hr", "hrv", "rr", "scr", "tonic", "motion", "emg", "temp")}
    seconds = codes.size
    scale = minutes / REAL_MINUTES

    # per-segment parameters (effects scaled by responsiveness, jittered per segment)
    starts = np.flatnonzero(np.diff(codes, prepend=-1))
    stops = np.append(starts[1:], seconds)
    effects = {k: np.zeros(seconds) for k in ("hr", "hrv", "rr", "scr", "tonic", "motion", "emg", "temp")}
    ecg, ppg, rsp, emg, scr_chest, scr_wrist = [], [], [], [], [], []
    for start, stop in zip(starts, stops):
        code, dur = int(codes[start]), int(stop - start)
        e = _EFFECTS[code]
        jitter = 1.0 + 0.4 * rng.standard_normal()
        hr = p["hr"] + r_k["hr"] * jitter * e["hr"] + rng.normal(0, 3.0)
        hrv = p["hrv"] * max(1.0 + r_k["hrv"] * jitter * (e["hrv"] - 1.0), 0.2)
        rr = max(p["rr"] + r_k["rr"] * jitter * e["rr"] + rng.normal(0, 1.0), 5.0)
        scr_rate = p["scr"] * max(1.0 + r_k["scr"] * jitter * (e["scr"] - 1.0), 0.1)  # per minute
        motion = max(e["motion"] * r_k["motion"] * (1.0 + 0.5 * rng.standard_normal()), 0.002)
        for key, value in (("tonic", r_k["tonic"] * jitter * e["tonic"]), ("temp", r_k["temp"] * e["temp"]),
                           ("motion", motion), ("emg", e["emg"] * r_k["emg"])):
            effects[key][start:stop] = value
        s = rng.integers(2**31, size=6)
        ecg.append(0.25 * _simulate(nk.ecg_simulate, dur, CHEST_RATE, 10, heart_rate=hr, method="simple",
                                    noise=0.03 * p["noise"], random_state=int(s[0])))
        ppg.append(_simulate(nk.ppg_simulate, dur, WRIST_RATES["BVP"], 10, heart_rate=hr, ibi_randomness=hrv,
                             frequency_modulation=0.1, motion_amplitude=0.1 + 3 * motion,
                             drift=0.0, random_state=int(s[1]), with_length=False))
        rsp.append(5.0 * _simulate(nk.rsp_simulate, dur, CHEST_RATE, 30, respiratory_rate=rr,
                                   noise=0.02 * p["noise"], random_state=int(s[2])))
        bursts = int(rng.poisson(e["emg"] * r_k["emg"] * dur / 60.0))
        emg.append(_simulate(nk.emg_simulate, dur, CHEST_RATE, max(2, bursts + 1), burst_number=bursts,
                             burst_duration=0.5, noise=0.01 * p["noise"], random_state=int(s[3])))
        n_scr = int(rng.poisson(scr_rate * dur / 60.0))
        for out, rate, seed_i in ((scr_chest, CHEST_RATE, s[4]), (scr_wrist, WRIST_RATES["EDA"], s[5])):
            out.append(p["scr_amp"] * (_simulate(nk.eda_simulate, dur, rate, 1, scr_number=n_scr, drift=0.0,
                                                 noise=0.0, random_state=int(seed_i)) - 1.0))

    tau = max(3.0, 90.0 * scale)  # tonic EDA / temperature follow conditions with a lag
    def wander(size: float) -> np.ndarray:  # slow random drift, same size at any time scale
        return _smooth_levels(np.cumsum(rng.normal(0, size / np.sqrt(seconds), seconds)), tau)

    tonic = _smooth_levels(effects["tonic"], tau) + wander(0.8)
    temp = _smooth_levels(effects["temp"], 2 * tau) + wander(0.6)
    motion = effects["motion"]

    def accel(rate: int, gravity: np.ndarray, gain: float) -> np.ndarray:
        steps = seconds * 8
        shake = rng.standard_normal((steps, 3)) * np.repeat(motion, 8)[:, None]
        t8 = (np.arange(steps) + 0.5) / 8
        t = (np.arange(seconds * rate) + 0.5) / rate
        moves = np.stack([np.interp(t, t8, shake[:, i]) for i in range(3)], axis=1)
        return gain * (gravity + moves + 0.003 * p["noise"] * rng.standard_normal((t.size, 3)))

    chest_g = np.array([0.9 * np.cos(p["tilt"]), 0.05, -0.4 + 0.9 * np.sin(p["tilt"])])
    wrist_g = np.array([-0.6, 0.2 + 0.5 * p["tilt"], 0.7])
    n_chest = seconds * CHEST_RATE
    eda_chest = p["tonic_chest"] * (1 + _on_grid(tonic, CHEST_RATE)) + np.concatenate(scr_chest)
    eda_wrist = p["tonic_wrist"] * (1 + _on_grid(tonic, WRIST_RATES["EDA"])) + 0.3 * np.concatenate(scr_wrist)
    noise = p["noise"]
    chest = {
        "ACC": accel(CHEST_RATE, chest_g, 1.0),
        "ECG": np.concatenate(ecg)[:, None],
        "EMG": np.concatenate(emg)[:, None],
        "EDA": (eda_chest + 0.01 * noise * rng.standard_normal(n_chest))[:, None],
        "Temp": (p["temp_chest"] + 0.5 * _on_grid(temp, CHEST_RATE) + 0.03 * rng.standard_normal(n_chest))[:, None],
        "Resp": np.concatenate(rsp)[:, None],
    }
    n4 = seconds * WRIST_RATES["EDA"]
    wrist = {
        "ACC": np.round(accel(WRIST_RATES["ACC"], wrist_g, 64.0)),
        "BVP": (p["bvp_gain"] * np.concatenate(ppg) + 2.0 * noise * rng.standard_normal(seconds * 64))[:, None],
        "EDA": np.maximum(eda_wrist + 0.005 * noise * rng.standard_normal(n4), 0.0)[:, None],
        "TEMP": (p["temp_wrist"] + _on_grid(temp, 4) + 0.02 * rng.standard_normal(n4))[:, None],
    }
    return {"signal": {"chest": chest, "wrist": wrist},
            "label": np.repeat(codes, CHEST_RATE).astype(np.int32), "subject": subject}


def _subject_number(subject: str) -> int:
    if subject not in SUBJECTS:
        raise ValueError(f"subject: expected one of {SUBJECTS}, got {subject!r}.")
    return int(subject[1:])


def write_subject(data: dict, out_dir: str | Path) -> Path:
    """Writes ``out_dir/S{n}/S{n}.pkl`` (pickle protocol 2, like the Python-2 originals), atomically."""
    subject = data["subject"]
    path = Path(out_dir) / subject / f"{subject}.pkl"
    with atomic_write(path) as fh:
        pickle.dump(data, fh, protocol=2)
    return path


def generate_wesad(out_dir: str | Path, *, subjects: Iterable[str] = SUBJECTS, minutes: float = REAL_MINUTES,
                   seed: int = 0, progress=None) -> list[Path]:
    """Writes synthetic ``S{n}/S{n}.pkl`` files for ``subjects`` into ``out_dir``, one subject at a time."""
    subjects = list(subjects)
    for s in subjects:
        _subject_number(s)
    paths = []
    for s in subjects:
        paths.append(write_subject(generate_subject(s, minutes=minutes, seed=seed), out_dir))
        if progress is not None:
            progress(s)
    return paths
