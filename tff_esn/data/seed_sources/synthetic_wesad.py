"""Synthetic WESAD subjects in the exact file layout of the real data set.

Each subject follows the WESAD protocol in one of its two orders, scaled to ``minutes``: wrist signals
from a latent-arousal model calibrated to thesis §5.2 (:func:`wrist_signals`), chest signals from
neurokit2's simulators (:func:`_chest_signals`). Everything is a function of ``(seed, subject)``.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from tff_esn.common import streams
from tff_esn.data.seed_sources.wesad import CHEST_RATE, DEVICES, SUBJECTS, WRIST_RATES
from tff_esn.common.io import atomic_write

REAL_MINUTES = 100.0
"""Length of the real protocol the segment durations below add up to."""

GENERATOR_VERSION = {"chest": 1, "wrist": 5}
"""Version of each device's model, part of the cache key: raised whenever what it generates changes."""

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
    if order not in PROTOCOLS or not minutes > 0:
        raise ValueError(f"protocol_seconds: expected minutes > 0 and an order of {sorted(PROTOCOLS)}, got "
                         f"{minutes!r}, {order!r}.")
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
    """``fn`` over ``max(seconds, minimum)`` s (``length`` and ``duration`` both given to neurokit2), cut to ``seconds``."""
    n = seconds * rate
    sim_s = max(seconds, minimum)
    if fn.__name__ != "emg_simulate":
        kwargs["random_state_distort"] = "legacy"  # "spawn" costs MT19937 jumps on every call
    if with_length:
        kwargs["length"] = sim_s * rate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(fn(duration=sim_s, sampling_rate=rate, **kwargs), dtype=np.float64)[:n]


def generate_subject(subject: str, *, minutes: float = REAL_MINUTES, seed: int = 0,
                     devices: tuple[str, ...] = DEVICES) -> dict:
    """One synthetic WESAD-layout subject, protocol scaled to ``minutes`` (100 = real); each device its own seed stream."""
    unknown = [d for d in devices if d not in DEVICES] if isinstance(devices, tuple) else devices
    if unknown or not devices:
        raise ValueError(f"devices: expected a non-empty tuple of {DEVICES}, got {devices!r}.")
    number = _subject_number(subject)
    rng = streams.WESAD_SUBJECT.generator(seed, number)
    order = ("amusement-first", "stress-first")[int(rng.integers(2))]
    codes = protocol_seconds(minutes, order)
    signal = {}
    if "chest" in devices:
        signal["chest"] = _chest_signals(codes, minutes, rng)
    if "wrist" in devices:
        signal["wrist"] = wrist_signals(codes, minutes=minutes, rng=streams.WESAD_WRIST.generator(seed, number))[0]
    return {"signal": signal, "label": np.repeat(codes, CHEST_RATE).astype(np.int32), "subject": subject}


def _chest_segments(codes: np.ndarray, p: dict, r_k: dict, rng: np.random.Generator):
    """Per-second effect levels and per segment 700 Hz ECG, respiration, EMG and chest EDA from neurokit2
    (:data:`_EFFECTS` × responsiveness ``r_k``, jittered)."""
    import neurokit2 as nk

    seconds = codes.size
    starts = np.flatnonzero(np.diff(codes, prepend=-1))
    stops = np.append(starts[1:], seconds)
    effects = {k: np.zeros(seconds) for k in ("hr", "hrv", "rr", "scr", "tonic", "motion", "emg", "temp")}
    ecg, rsp, emg, scr_chest = [], [], [], []
    for start, stop in zip(starts, stops):
        code, dur = int(codes[start]), int(stop - start)
        e = _EFFECTS[code]
        jitter = 1.0 + 0.4 * rng.standard_normal()
        hr = p["hr"] + r_k["hr"] * jitter * e["hr"] + rng.normal(0, 3.0)
        rr = max(p["rr"] + r_k["rr"] * jitter * e["rr"] + rng.normal(0, 1.0), 5.0)
        scr_rate = p["scr"] * max(1.0 + r_k["scr"] * jitter * (e["scr"] - 1.0), 0.1)  # per minute
        motion = max(e["motion"] * r_k["motion"] * (1.0 + 0.5 * rng.standard_normal()), 0.002)
        for key, value in (("tonic", r_k["tonic"] * jitter * e["tonic"]), ("temp", r_k["temp"] * e["temp"]),
                           ("motion", motion), ("emg", e["emg"] * r_k["emg"])):
            effects[key][start:stop] = value
        s = rng.integers(2**31, size=6)
        ecg.append(0.25 * _simulate(nk.ecg_simulate, dur, CHEST_RATE, 10, heart_rate=hr, method="simple",
                                    noise=0.03 * p["noise"], random_state=int(s[0])))
        rsp.append(5.0 * _simulate(nk.rsp_simulate, dur, CHEST_RATE, 30, respiratory_rate=rr,
                                   noise=0.02 * p["noise"], random_state=int(s[2])))
        bursts = int(rng.poisson(e["emg"] * r_k["emg"] * dur / 60.0))
        emg.append(_simulate(nk.emg_simulate, dur, CHEST_RATE, max(2, bursts + 1), burst_number=bursts,
                             burst_duration=0.5, noise=0.01 * p["noise"], random_state=int(s[3])))
        n_scr = int(rng.poisson(scr_rate * dur / 60.0))
        scr_chest.append(p["scr_amp"] * (_simulate(nk.eda_simulate, dur, CHEST_RATE, 1, scr_number=n_scr, drift=0.0,
                                                   noise=0.0, random_state=int(s[4])) - 1.0))
    return effects, ecg, rsp, emg, scr_chest


def _chest_signals(codes: np.ndarray, minutes: float, rng: np.random.Generator) -> dict:
    """700 Hz chest streams from :func:`_chest_segments` (no ECG HRV; ``r_k["hrv"]`` still drawn, fixing the order)."""
    p = _profile(rng)
    # how strongly this subject expresses each effect: overall responsiveness × per-signal factor
    r_k = {k: p["responsiveness"] * rng.uniform(0.2, 1.6) for k in ("hr", "hrv", "rr", "scr", "tonic", "motion", "emg", "temp")}
    seconds = codes.size
    scale = minutes / REAL_MINUTES
    effects, ecg, rsp, emg, scr_chest = _chest_segments(codes, p, r_k, rng)

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
    n_chest = seconds * CHEST_RATE
    eda_chest = p["tonic_chest"] * (1 + _on_grid(tonic, CHEST_RATE)) + np.concatenate(scr_chest)
    noise = p["noise"]
    return {
        "ACC": accel(CHEST_RATE, chest_g, 1.0),
        "ECG": np.concatenate(ecg)[:, None],
        "EMG": np.concatenate(emg)[:, None],
        "EDA": (eda_chest + 0.01 * noise * rng.standard_normal(n_chest))[:, None],
        "Temp": (p["temp_chest"] + 0.5 * _on_grid(temp, CHEST_RATE) + 0.03 * rng.standard_normal(n_chest))[:, None],
        "Resp": np.concatenate(rsp)[:, None],
    }


# ------------------------------------------------------------------ wrist: the thesis pipeline's signals

_AROUSAL = {_T: 0.15, _BASE: 0.0, _STRESS: 1.0, _AMUSE: 0.25, _MEDI: -0.35}
"""Sympathetic arousal each condition drives towards (baseline 0, TSST 1)."""
_MOTION = {_T: 0.5, _BASE: 0.04, _STRESS: 0.1, _AMUSE: 0.08, _MEDI: 0.02}
"""Wrist motion level per condition (walking between rooms; gestures while speaking in the TSST)."""
_POOR_CONTACT = 0.12
"""Motion-independent BVP artefact level (a loose wrist strap; real wrist HR is noisy in the
baseline too: thesis Table 5.2's baseline-standardized HR has variance 1.6)."""
_TSST_PREPARATION = 0.25
"""Share of the stress block spent preparing the talk (arousal 0.7 instead of 1)."""


def _lag(target: np.ndarray, rise_s: float, recover_s: float) -> np.ndarray:
    """A response to ``target`` (per second), fast up, slow back: max of a fast and a slow first-order low-pass."""
    return np.maximum(_smooth_levels(target, rise_s), _smooth_levels(target, recover_s))


def _wrist_profile(rng: np.random.Generator) -> dict[str, float]:
    """Per-subject wrist physiology: resting levels, log-normal responsiveness (some non-responders), artefacts."""
    eda_responder = rng.random() > 0.2
    cardiac_responder = rng.random() > 0.1
    return dict(
        hr=rng.uniform(50, 105), rmssd=rng.lognormal(np.log(27), 0.35), tonic=rng.lognormal(0.0, 0.9),
        scr_rate=rng.uniform(2.0, 6.0), scr_amp=rng.lognormal(np.log(1.6), 0.4), temp=rng.uniform(30.5, 33.5),
        r_eda=rng.lognormal(0, 0.35) * (1.0 if eda_responder else 0.1),
        r_heart=rng.lognormal(0, 0.35) * (1.0 if cardiac_responder else 0.15),
        motion=rng.lognormal(0, 0.4), artefacts=rng.uniform(0.5, 1.5), bvp_gain=rng.uniform(40, 120),
        eda_responder=float(eda_responder), cardiac_responder=float(cardiac_responder),
    )


def _arousal_target(codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per-second arousal the conditions drive towards, jittered per block (±25 %)."""
    target = np.vectorize(_AROUSAL.get)(codes).astype(np.float64)
    starts = np.flatnonzero(np.diff(codes, prepend=-1))
    block = np.cumsum(np.isin(np.arange(codes.size), starts)) - 1
    target *= np.maximum(1.0 + 0.25 * rng.standard_normal(starts.size), 0.3)[block]
    for s in starts[codes[starts] == _STRESS]:  # TSST: preparation, then talk and arithmetic
        n = int(np.sum(block == block[s]))
        target[s:s + int(round(_TSST_PREPARATION * n))] *= 0.7
    return target


def _beats(hr: np.ndarray, rmssd: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Beat times (s): integrated heart rate inverted at whole beats, each jittered by ``N(0, RMSSD/√6)``
    (RR differences e₊₂ − 2e₊₁ + e have variance 6σ²)."""
    phase = np.concatenate([[0.0], np.cumsum(hr / 60.0)])
    k = np.arange(1, int(phase[-1]))
    t = np.interp(k, phase, np.arange(phase.size))
    rr = np.diff(t, prepend=0.0)
    sigma = np.interp(t, np.arange(rmssd.size) + 0.5, rmssd) / 1000.0 / np.sqrt(6.0)
    jitter = np.clip(rng.standard_normal(t.size) * sigma, -0.3 * rr, 0.3 * rr)
    return np.sort(t + jitter)


def _bvp(beats: np.ndarray, seconds: int, rate: int, gain: float, rng: np.random.Generator) -> np.ndarray:
    """Pulse wave at ``rate`` Hz: systolic and diastolic Gaussians per beat, jittered amplitude, respiratory baseline."""
    t = (np.arange(seconds * rate) + 0.5) / rate
    k = np.clip(np.searchsorted(beats, t, side="right") - 1, 0, beats.size - 2)
    u = np.clip((t - beats[k]) / (beats[k + 1] - beats[k]), -1.0, 2.0)
    amp = gain * np.exp(0.1 * rng.standard_normal(beats.size))[k]
    wave = np.exp(-0.5 * ((u - 0.18) / 0.07) ** 2) + 0.35 * np.exp(-0.5 * ((u - 0.45) / 0.09) ** 2) - 0.28
    breath = 0.15 * gain * np.sin(2 * np.pi * rng.uniform(0.2, 0.3) * t + rng.uniform(0, 2 * np.pi))
    return amp * wave + breath


def _band_noise(n: int, rate: int, low: float, high: float, rng: np.random.Generator) -> np.ndarray:
    """Unit-variance Gaussian noise band-limited to ``[low, high]`` Hz (Butterworth, 2nd order)."""
    from scipy.signal import butter, sosfilt

    noise = sosfilt(butter(2, [low, high], btype="band", fs=rate, output="sos"), rng.standard_normal(n))
    return noise / max(noise.std(), 1e-12)


def _episodes(level: np.ndarray, rate_per_min: float, mean_s: float, rng: np.random.Generator) -> np.ndarray:
    """0/1 per second: episodes at ``rate_per_min · level`` per minute, lasting exponential(``mean_s``) s."""
    starts = rng.random(level.size) < rate_per_min * level / 60.0
    on = np.zeros(level.size + 1)
    idx = np.flatnonzero(starts)
    ends = np.minimum(idx + np.ceil(rng.exponential(mean_s, idx.size)).astype(int), level.size)
    np.add.at(on, idx, 1.0)
    np.add.at(on, ends, -1.0)
    return (np.cumsum(on)[:-1] > 0).astype(np.float64)


def _scr_train(rate_per_min: np.ndarray, amplitude: float, seconds: int, rate: int,
               rng: np.random.Generator) -> np.ndarray:
    """SCRs at ``rate`` Hz: Poisson onsets, log-normal amplitudes, bi-exponential shape (Benedek & Kaernbach 2010)."""
    from scipy.signal import lfilter

    per_sample = np.repeat(rate_per_min / 60.0 / rate, rate)
    onsets = rng.poisson(per_sample).astype(np.float64)
    impulses = onsets * amplitude * rng.lognormal(0.0, 0.3, onsets.size)
    fast, slow = np.exp(-1.0 / (0.75 * rate)), np.exp(-1.0 / (2.0 * rate))
    t_peak = np.log(np.log(fast) / np.log(slow)) / (np.log(slow) - np.log(fast))  # samples to the peak
    norm = slow ** t_peak - fast ** t_peak
    return (lfilter([1.0], [1.0, -slow], impulses) - lfilter([1.0], [1.0, -fast], impulses)) / norm


def wrist_signals(codes: np.ndarray, *, minutes: float, rng: np.random.Generator) -> tuple[dict, dict]:
    """Wrist streams (``ACC`` 32 Hz, ``BVP`` 64 Hz, ``EDA``, ``TEMP`` 4 Hz) for ``codes`` and the profile: arousal
    drives lagged responses (Kirschbaum et al. 1993; Boucsein 2012; Kim et al. 2018); BVP artefacts."""
    seconds = codes.size
    scale = minutes / REAL_MINUTES
    p = _wrist_profile(rng)
    target = _arousal_target(codes, rng)
    heart = _lag(target, max(2.0, 20.0 * scale), max(4.0, 90.0 * scale))
    skin = _lag(target, max(3.0, 60.0 * scale), max(6.0, 240.0 * scale))

    def wander(size: float, tau_s: float) -> np.ndarray:  # slow random drift of about ``size`` over the recording
        return _smooth_levels(np.cumsum(rng.normal(0, size / np.sqrt(seconds), seconds)), max(2.0, tau_s * scale))

    hr = p["hr"] + 22.0 * p["r_heart"] * heart + wander(8.0, 60.0) + 1.5 * rng.standard_normal(seconds)
    hr = np.clip(hr, 40.0, 180.0)
    rmssd = p["rmssd"] * np.exp(-0.5 * p["r_heart"] * heart) * np.exp(0.15 * rng.standard_normal(seconds))
    rmssd = np.maximum(rmssd, 12.0)  # a physiological floor
    beats = _beats(hr, rmssd, rng)

    motion_level = np.vectorize(_MOTION.get)(codes) * p["motion"]
    artefact = _episodes((_POOR_CONTACT + motion_level) * p["artefacts"], 3.0, 6.0, rng)
    bvp_rate, eda_rate, acc_rate = WRIST_RATES["BVP"], WRIST_RATES["EDA"], WRIST_RATES["ACC"]
    bvp = _bvp(beats, seconds, bvp_rate, p["bvp_gain"], rng)
    strength = np.repeat(artefact * rng.lognormal(0.0, 0.5, seconds), bvp_rate)
    bvp += p["bvp_gain"] * strength * _band_noise(bvp.size, bvp_rate, 0.5, 4.0, rng)
    bvp += 0.02 * p["bvp_gain"] * rng.standard_normal(bvp.size)

    tonic = p["tonic"] * (1.0 + 0.8 * p["r_eda"] * skin) + wander(0.15 * p["tonic"], 120.0)
    scr_rate = p["scr_rate"] * np.exp(0.9 * p["r_eda"] * _lag(target, max(1.0, 10.0 * scale), max(3.0, 60.0 * scale)))
    scr = _scr_train(scr_rate, p["scr_amp"] * (0.3 + p["tonic"]), seconds, eda_rate, rng)
    eda = _on_grid(tonic, eda_rate) + scr + 0.003 * rng.standard_normal(seconds * eda_rate)

    temp = p["temp"] - 0.4 * p["r_heart"] * _lag(target, max(3.0, 120.0 * scale), max(6.0, 300.0 * scale))
    temp = temp + wander(0.3, 300.0)
    shake = _on_grid(motion_level + 0.3 * artefact, acc_rate)[:, None] * rng.standard_normal((seconds * acc_rate, 3))
    gravity = np.array([-0.6, 0.2, 0.7]) + 0.1 * rng.standard_normal(3)
    wrist = {
        "ACC": np.round(64.0 * (gravity + shake)),
        "BVP": bvp[:, None],
        "EDA": np.maximum(eda, 0.01)[:, None],
        "TEMP": (_on_grid(temp, eda_rate) + 0.02 * rng.standard_normal(seconds * eda_rate))[:, None],
    }
    return wrist, p


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
    paths = []
    for s in subjects:
        paths.append(write_subject(generate_subject(s, minutes=minutes, seed=seed), out_dir))
        if progress is not None:
            progress(s)
    return paths
