"""WESAD: the subject-file format, its loader, and the per-subject feature extraction.

``S{n}/S{n}.pkl``: ``{"signal": {"chest": {...} at 700 Hz, "wrist": {ACC 32 Hz, BVP 64 Hz, EDA, TEMP 4 Hz}},
"label": (N,) at 700 Hz}``; labels 0 transient, 1 baseline, 2 stress, 3 amusement, 4 meditation.
:func:`load_subject` reads one file through :mod:`tff_esn.data.safe_pickle` and validates it.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.data.errors import DataError, MissingDataError
from tff_esn.data.seed_sources.hrv import windowed_hrv
from tff_esn.data.seed_sources.normalise import moving_average_normalise, standardize_to
from tff_esn.data.safe_pickle import load_data_pickle

SUBJECTS = tuple(f"S{n}" for n in (*range(2, 12), *range(13, 18)))
"""The 15 WESAD subjects (S1 and S12 were discarded by the dataset's authors)."""

CHEST_RATE = 700
CHEST_CHANNELS = {"ACC": 3, "ECG": 1, "EMG": 1, "EDA": 1, "Temp": 1, "Resp": 1}
WRIST_RATES = {"ACC": 32, "BVP": 64, "EDA": 4, "TEMP": 4}
WRIST_CHANNELS = {"ACC": 3, "BVP": 1, "EDA": 1, "TEMP": 1}
DEVICES = ("chest", "wrist")
"""The two devices of a WESAD recording (``['signal']`` keys)."""
LABEL_CODES = {0: "transient", 1: "baseline", 2: "stress", 3: "amusement", 4: "meditation",
               5: "ignore", 6: "ignore", 7: "ignore"}

CHEST_FEATURES = ("ACC_x", "ACC_y", "ACC_z", "ECG", "EMG", "EDA", "Temp", "Resp")
"""The 8 chest channels of the paper pipelines (IncFed §IV-a), in this column order."""

AFFECT_CODES = (1, 2, 3, 4)
AFFECT_NAMES = ("baseline", "stress", "amusement", "meditation")
"""The 4 classes of the paper pipelines: WESAD codes 1–4 → classes 0–3."""

THESIS_FEATURES = ("pEDA", "tEDA", "HR", "HRV")
"""The thesis features (thesis §5.2), in the order :func:`thesis_features` returns them."""

STRESS_CODE = 2

THESIS_MA_WINDOW_S = 25.0 * 64
"""Default moving-average window of the thesis pipeline (s on the 1 Hz grid): Table 5.3's
caption, "moving average with a sliding window of 25×64", read as 25×64 steps."""
THESIS_MA_MODE = "subtract"
"""Default moving-average normalisation of the thesis pipeline (see :func:`thesis_features`)."""


def subject_files(directory: str | Path) -> dict[str, Path]:
    """``{"S2": DIR/S2/S2.pkl, ...}`` for every subject file present, in subject order."""
    directory = Path(directory)
    if not directory.is_dir():
        raise MissingDataError(f"WESAD directory {directory} does not exist.")
    found = {}
    for sub in directory.iterdir():
        if re.fullmatch(r"S\d+", sub.name) and (sub / f"{sub.name}.pkl").is_file():
            found[sub.name] = sub / f"{sub.name}.pkl"
    if not found:
        raise MissingDataError(f"{directory}: no WESAD subject files S<n>/S<n>.pkl found.")
    return dict(sorted(found.items(), key=lambda kv: int(kv[0][1:])))


def _keys(container: Any) -> str:
    """The keys of a dict (any types) for a message, or the type of a non-dict."""
    return str(sorted(map(repr, container))) if isinstance(container, dict) else f"a {type(container).__name__}"


def _array(container: dict, key: str, where: str, source: str) -> np.ndarray:
    value = container.get(key) if isinstance(container, dict) else None
    if not isinstance(value, np.ndarray):
        raise DataError(f"{source}: {where}[{key!r}] must be a numpy array, got "
                        f"{type(value).__name__ if value is not None else f'a missing key (found {_keys(container)})'}.")
    return value


def validate_subject(data: Any, source: str = "<subject>", devices: tuple[str, ...] = DEVICES) -> dict:
    """``data`` checked against the WESAD layout of ``devices``; a :class:`DataError` names ``source`` and the key."""
    signal = data.get("signal") if isinstance(data, dict) else None
    missing = [f"[{k!r}]" for k in ("signal", "label", "subject") if not isinstance(data, dict) or k not in data] \
        or [f"['signal'][{d!r}]" for d in devices if not isinstance(signal, dict) or d not in signal]
    if missing:
        found = _keys(data) if signal is None else f"{_keys(data)}, ['signal']: {_keys(signal)}"
        raise DataError(f"{source}: missing key {', '.join(missing)} (found {found}).")
    label = _array(data, "label", "", source)
    n = label.shape[0] if label.ndim == 1 else 0
    if n == 0 or n % CHEST_RATE or label.dtype.kind not in "biuf" or not np.all(label == np.round(label)):
        raise DataError(f"{source}: ['label'] must be 1-D integer codes for a whole number (> 0) of seconds at "
                        f"{CHEST_RATE} Hz, got shape {label.shape} dtype {label.dtype}.")
    bad = np.setdiff1d(np.unique(label), list(LABEL_CODES))
    if bad.size:
        raise DataError(f"{source}: ['label'] holds codes {bad.tolist()} outside {sorted(LABEL_CODES)}.")
    seconds = n // CHEST_RATE
    for device, channels, rates in (("chest", CHEST_CHANNELS, None), ("wrist", WRIST_CHANNELS, WRIST_RATES)):
        if device not in devices:
            continue
        for key, width in channels.items():
            where = f"['signal'][{device!r}]"
            arr = _array(signal[device], key, where, source)
            length = n if rates is None else seconds * rates[key]
            if arr.shape != (length, width) or arr.dtype.kind not in "biuf":
                raise DataError(f"{source}: {where}[{key!r}] expected shape ({length}, {width}) of real numbers "
                                f"({seconds} s at {CHEST_RATE if rates is None else rates[key]} Hz), got {arr.shape} "
                                f"{arr.dtype}.")
            if rates is None and not np.all(np.isfinite(arr)):
                raise DataError(f"{source}: {where}[{key!r}] contains NaN or inf.")
    return data


def load_subject(path: str | Path) -> dict:
    """One ``S{n}.pkl`` through the allow-list unpickler, checked by :func:`validate_subject`."""
    return validate_subject(load_data_pickle(path), str(path))


# ------------------------------------------------------------------ paper pipelines (chest, 700 Hz)
def chest_signals(subject: dict) -> tuple[np.ndarray, np.ndarray]:
    """The 8 chest channels (N, 8) float64 in :data:`CHEST_FEATURES` order and the label codes (N,)."""
    chest = subject["signal"]["chest"]
    x = np.concatenate([np.asarray(chest[k], dtype=np.float64) for k in CHEST_CHANNELS], axis=1)
    return x, np.asarray(subject["label"]).astype(np.int64)


# ------------------------------------------------------------------ thesis pipeline (wrist)
def _finite_or_interpolated(signal: np.ndarray, what: str) -> np.ndarray:
    """Linearly fills NaN/inf samples from their finite neighbours (a gap must not crash neurokit2)."""
    signal = np.asarray(signal, dtype=np.float64).ravel()
    ok = np.isfinite(signal)
    if ok.all():
        return signal
    if ok.sum() < 2:
        raise DataError(f"{what}: fewer than 2 finite samples.")
    idx = np.arange(signal.size)
    return np.interp(idx, idx[ok], signal[ok])


def _forward_filled(x: np.ndarray) -> np.ndarray:
    """Row-wise forward fill of NaNs along axis 0 (causal: uses past rows only)."""
    idx = np.where(np.isfinite(x), np.arange(x.shape[0])[:, None], 0)
    np.maximum.accumulate(idx, axis=0, out=idx)
    return np.take_along_axis(x, idx, axis=0)


def wrist_features(subject: dict, hrv_window_s: float = 25, *, hrv_index: str = "RMSSD",
                   rate_hz: float = 1.0, source: str = "<subject>") -> tuple[np.ndarray, np.ndarray]:
    """Thesis §5.2 phases 1–2: (T, 4) pEDA, tEDA, HR, HRV (:func:`windowed_hrv`; NaN with too few peaks)
    on grid ``k / rate_hz``, and the codes."""
    import neurokit2 as nk

    wrist = subject["signal"]["wrist"]
    seconds = len(subject["label"]) // CHEST_RATE
    grid = np.arange(int(seconds * rate_hz)) / rate_hz
    eda_rate, bvp_rate = WRIST_RATES["EDA"], WRIST_RATES["BVP"]

    eda = _finite_or_interpolated(wrist["EDA"], f"{source}: ['signal']['wrist']['EDA']")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eda_clean skips filtering at 4 Hz and says so
        eda_clean = np.asarray(nk.eda_clean(eda, sampling_rate=eda_rate), dtype=np.float64)
        parts = nk.eda_phasic(eda_clean, sampling_rate=eda_rate)
    t_eda = np.arange(eda.size) / eda_rate
    phasic = np.interp(grid, t_eda, parts["EDA_Phasic"].to_numpy())
    tonic = np.interp(grid, t_eda, parts["EDA_Tonic"].to_numpy())

    bvp = _finite_or_interpolated(wrist["BVP"], f"{source}: ['signal']['wrist']['BVP']")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cleaned = np.asarray(nk.ppg_clean(bvp, sampling_rate=bvp_rate), dtype=np.float64)
        try:
            peaks = np.asarray(nk.ppg_findpeaks(cleaned, sampling_rate=bvp_rate)["PPG_Peaks"], dtype=np.int64)
        except (IndexError, ValueError):
            peaks = np.zeros(0, dtype=np.int64)
        if peaks.size < 3:
            raise DataError(f"{source}: ['signal']['wrist']['BVP'] yields {peaks.size} heartbeats; "
                             "at least 3 are needed for heart rate and HRV.")
        rate = np.asarray(nk.ppg_rate(peaks, sampling_rate=bvp_rate, desired_length=bvp.size), dtype=np.float64)
    heart_rate = np.interp(grid, np.arange(bvp.size) / bvp_rate, rate)
    ends = np.minimum(np.round(grid * bvp_rate).astype(np.int64), bvp.size - 1)
    hrv = windowed_hrv(peaks, bvp_rate, ends, int(round(hrv_window_s * bvp_rate)), (hrv_index,))[hrv_index]

    codes = np.asarray(subject["label"]).astype(np.int64)[np.floor(grid * CHEST_RATE).astype(np.int64)]
    return np.stack([phasic, tonic, heart_rate, hrv], axis=1), codes


def thesis_features(subject: dict, hrv_window_s: float = 25, *, hrv_index: str = "RMSSD", rate_hz: float = 1.0,
                    ma_window_s: float | None = THESIS_MA_WINDOW_S, ma_mode: str = THESIS_MA_MODE,
                    source: str = "<subject>") -> tuple[np.ndarray, np.ndarray]:
    """Thesis §5.2 (Tables 5.1–5.3): :func:`wrist_features` by :func:`normalise_thesis_features`
    (``None, "divide"``: literal §5.2, DEVIATIONS.md); (T, 4) float32 and labels stress → 1."""
    ma_window_s = hrv_window_s if ma_window_s is None else ma_window_s
    features, codes = wrist_features(subject, hrv_window_s, hrv_index=hrv_index, rate_hz=rate_hz, source=source)
    return normalise_thesis_features(features, codes, ma_steps=max(1, int(round(ma_window_s * rate_hz))),
                                     ma_mode=ma_mode, source=source)


def normalise_thesis_features(features: np.ndarray, codes: np.ndarray, *, ma_steps: int, ma_mode: str,
                              source: str = "<subject>") -> tuple[np.ndarray, np.ndarray]:
    """Thesis §5.2 phases 3–4: HRV filled, leading rows dropped, baseline-standardised, moving-average normalised."""
    defined = np.all(np.isfinite(features), axis=1)
    if not defined.any():
        raise DataError(f"{source}: no time step where all thesis features are defined.")
    first = int(np.argmax(defined))
    features, codes = _forward_filled(features[first:]), codes[first:]
    features = standardize_to(features, features[codes == 1], what=f"{source}: baseline (label 1) of {THESIS_FEATURES}")
    features = moving_average_normalise(features, ma_steps, ma_mode)
    return features.astype(np.float32), (codes == STRESS_CODE).astype(np.int64)
