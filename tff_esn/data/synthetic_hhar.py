"""Synthetic HHAR: the four CSVs of the real data set, from simple per-activity motion models.

Each user performs the six activities in a random order, ``minutes`` each, with short
``null`` pauses between them, carrying every phone (nexus4, s3, s3mini, samsungold; two
copies each) and watch (gear, lgwatch; two copies each). The motion is a continuous function
of time per user and activity — gravity in an activity-dependent orientation of the pelvis
(the phones ride in a waist pouch, Stisen et al. 2015: tilted back ~25° when sitting,
forward when biking, upright when standing or walking, forward on the way up and back on
the way down) plus periodic gait/pedalling accelerations and rotations at a user-specific
cadence (stairs up slower and harder, stairs down faster, biking smooth with large
rotations) along body directions that vary a little per user, and a slow sway. Every user
carries the devices in nearly the same orientation (:data:`PLACEMENT_STD_RAD`). Every device samples it at its own
native rate (with clock drift and jitter) and adds its own bias, gain and noise; each copy
drops a few stretches (gaps); samsungold has no gyroscope. Everything is a function of
``(seed, user, device)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from tff_esn.data.hhar import ACTIVITIES, COLUMNS, FILES, NULL_LABEL, USERS

DEVICES = {  # model: (kind, native Hz, has gyroscope, noise std m/s²)
    "nexus4": ("phone", 200.0, True, 0.05), "s3": ("phone", 150.0, True, 0.06),
    "s3mini": ("phone", 100.0, True, 0.08), "samsungold": ("phone", 50.0, False, 0.12),
    "gear": ("watch", 100.0, True, 0.07), "lgwatch": ("watch", 200.0, True, 0.06),
}
G = 9.81
PLACEMENT_STD_RAD = np.radians(15.0)
"""Std of the angle by which a user's devices sit rotated against the common frame. HHAR's
phones ride in a tight waist pouch (Stisen et al. 2015; IncFed §IV-b), so every user carries
them in nearly the same orientation: a small rotation about a random axis. (Version 1 drew
a uniformly random quaternion instead — rotations of 26–149° across users — which made the
gravity direction, the cue separating sit/stand/stairs, a user identity feature.)"""
_GAIT_AXIS, _GAIT_AXIS2, _ROT_AXIS = (0.3, 1.0, 0.4), (0.5, 0.5, 1.0), (1.0, 0.0, 0.3)
"""Body-frame directions of the gait acceleration (mostly vertical, some forward), of its
2nd harmonic, and of the rotation (pelvis/thigh pitch about the lateral axis)."""
AXIS_SPREAD = 0.3
"""Per-user deviation of those directions (version 1 drew them uniformly on the sphere per
user, so the axis carrying the gait energy was a user identity feature too)."""
GENERATOR_VERSION = 2
"""Bumped whenever what :func:`generate_frames` produces changes (part of the cache key)."""
# per activity: tilt (rad, about x), pelvis angle (0 upright … π/2 horizontal; the phones sit
# in a waist pouch, so sitting and biking tilt the pelvis back/forward by ~25–30°, not the
# thigh's 80°), cadence factor, acceleration amplitude (m/s²), 2nd-harmonic share, gyroscope
# amplitude (rad/s)
_MOTION = {
    "bike": (0.0, 0.5, 0.6, 1.2, 0.2, 1.6),
    "sit": (0.0, 0.45, 0.0, 0.05, 0.0, 0.02),
    "stand": (0.0, 0.05, 0.0, 0.12, 0.0, 0.05),
    "walk": (0.0, 0.2, 1.0, 2.6, 0.35, 1.0),
    "stairsup": (0.25, 0.3, 0.8, 3.0, 0.5, 1.1),
    "stairsdown": (-0.2, 0.2, 1.12, 3.8, 0.25, 1.3),
}


def _schedule(rng: np.random.Generator, minutes: float) -> tuple[np.ndarray, np.ndarray]:
    """Segment start times (s) and labels (index into ACTIVITIES, −1 = null) of one user."""
    active = minutes * 60.0
    pause = max(2.0, 0.1 * active)
    labels, starts, t = [], [], 0.0
    for a in rng.permutation(len(ACTIVITIES)):
        labels += [-1, int(a)]
        starts += [t, t + pause]
        t += pause + active
    labels.append(-1)
    starts.append(t)
    return np.array(starts + [t + pause]), np.array(labels)


def _motion(t: np.ndarray, labels: np.ndarray, user: dict, watch: bool) -> tuple[np.ndarray, np.ndarray]:
    """Acceleration (m/s²) and rotation rate (rad/s), (n, 3) each, at times ``t``."""
    params = np.array([_MOTION[a] for a in ACTIVITIES] + [(0.0, 0.6, 0.3, 0.8, 0.1, 0.4)])  # last row: null
    p = params[labels]
    tilt = p[:, 0] + user["tilt"]
    angle = p[:, 1] + user["angle"]
    freq = p[:, 2] * user["cadence"]
    amp = p[:, 3] * user["vigour"] * (1.6 if watch else 1.0)
    phase = 2 * np.pi * freq * t
    gravity = G * np.stack([np.sin(angle), np.cos(angle) * np.cos(tilt), np.cos(angle) * np.sin(tilt)], axis=1)
    sway = user["sway"] * np.stack([np.sin(2 * np.pi * f * t + s) for f, s in zip(user["sway_f"], user["sway_p"])], axis=1)
    gait = amp[:, None] * (np.sin(phase)[:, None] * user["axes"] + p[:, 4:5] * np.sin(2 * phase + 0.7)[:, None] * user["axes2"])
    rot = (p[:, 5] * user["vigour"])[:, None] * np.sin(phase[:, None] + user["rot_phase"]) * user["rot_axes"]
    rotation = user["placement"]  # how the device sits on this user: a rotation of the whole frame
    return (gravity + gait + sway) @ rotation.T, (rot + 0.1 * sway) @ rotation.T


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix by ``angle`` (rad) about the unit ``axis`` (Rodrigues' formula)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def _user(seed: int, u: int) -> dict:
    rng = np.random.default_rng(np.random.SeedSequence([seed, u, 0]))
    unit = lambda: (v := rng.normal(size=3)) / np.linalg.norm(v)  # noqa: E731
    near = lambda base: (v := np.asarray(base) + AXIS_SPREAD * rng.normal(size=3)) / np.linalg.norm(v)  # noqa: E731
    placement = _rotation(unit(), rng.normal(0.0, PLACEMENT_STD_RAD))
    return dict(placement=placement, tilt=rng.normal(0, 0.15), angle=rng.normal(0, 0.15), cadence=rng.uniform(1.5, 2.2),
                vigour=rng.uniform(0.6, 1.5), axes=near(_GAIT_AXIS), axes2=near(_GAIT_AXIS2), rot_axes=near(_ROT_AXIS),
                rot_phase=rng.uniform(0, 2 * np.pi, 3), sway=rng.uniform(0.1, 0.4),
                sway_f=rng.uniform(0.05, 0.3, 3), sway_p=rng.uniform(0, 2 * np.pi, 3), rng=rng)


def _device_samples(rng, rate: float, duration: float) -> np.ndarray:
    """Sample times (s) of one device: native rate with drift and jitter, minus a few gaps."""
    rate = rate * rng.uniform(0.97, 1.03)
    n = int(duration * rate)
    t = np.sort(np.clip(np.arange(n) / rate + rng.normal(0, 0.1 / rate, n), 0, duration))
    for _ in range(int(rng.integers(0, 4))):
        start = rng.uniform(0, duration)
        t = t[(t < start) | (t > start + rng.uniform(1.5, 4.0))]
    return t


def generate_frames(*, users: Iterable[str] = USERS, minutes: float = 5.0, seed: int = 0,
                    models: Iterable[str] | None = None) -> dict[tuple[str, str], pd.DataFrame]:
    """The four HHAR tables (only ``models``' rows when given) as DataFrames in the CSV layout."""
    users = list(users)
    unknown = [u for u in users if u not in USERS]
    if unknown:
        raise ValueError(f"users: expected a subset of {USERS}, got {unknown}.")
    if not minutes > 0:
        raise ValueError(f"minutes: expected > 0, got {minutes!r}.")
    models = list(DEVICES) if models is None else list(models)
    parts: dict[tuple[str, str], list[pd.DataFrame]] = {key: [] for key in FILES}
    for user in users:
        u = USERS.index(user)
        profile = _user(seed, u)
        starts, seg_labels = _schedule(profile["rng"], minutes)
        duration = float(starts[-1])
        for d, (model, (kind, rate, has_gyro, noise)) in enumerate(DEVICES.items()):
            if model not in models:
                continue
            for copy in (1, 2):
                rng = np.random.default_rng(np.random.SeedSequence([seed, u, 1 + 2 * d + copy]))
                t0_ns = int(rng.integers(10**12, 10**14))
                bias, gain = rng.normal(0, 0.2, 3), rng.uniform(0.97, 1.03, 3)
                for sensor in ("acc", "gyro") if has_gyro else ("acc",):
                    t = _device_samples(rng, rate * (1.0 if sensor == "acc" else rng.uniform(0.98, 1.02)), duration)
                    labels = seg_labels[np.searchsorted(starts, t, side="right") - 1]
                    acc, gyro = _motion(t, labels, profile, kind == "watch")
                    signal = acc * gain + bias if sensor == "acc" else gyro + 0.05 * bias
                    signal = signal + rng.normal(0, noise if sensor == "acc" else noise / 5, signal.shape)
                    gt = np.where(labels < 0, NULL_LABEL, np.array(ACTIVITIES)[np.maximum(labels, 0)])
                    created = t0_ns + np.round(t * 1e9).astype(np.int64)
                    parts[(kind, sensor)].append(pd.DataFrame({
                        "Index": np.arange(t.size), "Arrival_Time": 1424696633000 + np.round(t * 1000 + rng.uniform(5, 60)).astype(np.int64),
                        "Creation_Time": created, "x": signal[:, 0], "y": signal[:, 1], "z": signal[:, 2],
                        "User": user, "Model": model, "Device": f"{model}_{copy}", "gt": gt,
                    }))
    out = {}
    for key, frames in parts.items():
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({c: [] for c in COLUMNS})
        for c in ("User", "Model", "Device", "gt"):
            frame[c] = frame[c].astype("category")
        out[key] = frame[list(COLUMNS)]
    return out


def write_hhar(out_dir: str | Path, **kwargs) -> list[Path]:
    """Writes the four CSVs (see :func:`generate_frames` for the options) into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for key, frame in generate_frames(**kwargs).items():
        path = out_dir / FILES[key]
        tmp = path.with_suffix(".csv.tmp")
        frame.to_csv(tmp, index=False)
        tmp.replace(path)
        paths.append(path)
    return paths

