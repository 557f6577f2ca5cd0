"""Synthetic HHAR: the four CSVs of the real data set, from a motion model of gait, posture and cycling.

Each user performs the six activities with ``null`` pauses, carrying every phone and watch; devices sample
the user's motion at their own rates with their own errors (Stisen et al. 2015). Everything is a function
of ``(seed, user, device)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from tff_esn.common import streams
from tff_esn.data.seed_sources.hhar import ACTIVITIES, COLUMNS, FILES, NULL_LABEL, USERS
from tff_esn.common.io import atomic_write

DEVICES = {  # model: (kind, native Hz, has gyroscope, noise std m/s²)
    "nexus4": ("phone", 200.0, True, 0.05), "s3": ("phone", 150.0, True, 0.06),
    "s3mini": ("phone", 100.0, True, 0.08), "samsungold": ("phone", 50.0, False, 0.12),
    "gear": ("watch", 100.0, True, 0.07), "lgwatch": ("watch", 200.0, True, 0.06),
}
JITTER = {"nexus4": 0.15, "s3": 0.25, "s3mini": 0.35, "samsungold": 0.6, "gear": 0.3, "lgwatch": 0.2}
"""Std of each model's timestamp jitter per sampling interval (Stisen et al. 2015: worst on older models)."""
G = 9.81
PLACEMENT_STD_RAD = np.radians(15.0)
"""Std of the angle of a user's pouch against the common frame (a small rotation about a random axis)."""
POUCH_MOVE = (0.04, np.radians(15.0))
"""Per bout: probability that the phones are re-seated, and the std of their rotation against the user's
placement until the next move."""
_GAIT_AXIS, _GAIT_AXIS2, _ROT_AXIS = (0.3, 1.0, 0.4), (0.5, 0.5, 1.0), (1.0, 0.0, 0.3)
"""Body-frame (x forward, y up, z lateral) directions of the gait acceleration, its 2nd harmonic and the
pelvis rock; each user's deviates by :data:`AXIS_SPREAD`."""
AXIS_SPREAD = 0.3
GENERATOR_VERSION = 3
"""Bumped whenever what :func:`generate_frames` produces changes (part of the cache key)."""


@dataclasses.dataclass(frozen=True)
class Motion:
    """Mean motion of one activity and its user (``*_user``) and bout (``*_bout``) spreads: angles in rad,
    cadence (Hz), amplitudes in m/s² and rad/s."""

    pitch: float
    pitch_user: float
    pitch_bout: float
    cadence: float | tuple[float, float]
    cadence_user: float
    amp: float
    amp_user: float
    harmonic: float
    harmonic_phase: float
    gyro: float
    vibration: float = 0.0
    interruption: tuple[str, float] | None = None
    """(kind of bout, probability): a bout of another motion inside this activity."""


_MOTION = {
    "walk": Motion(0.05, 0.05, 0.03, 1.0, 0.0, 2.0, 0.0, 0.35, 0.7, 0.6, interruption=("stop", 0.08)),
    "stairsup": Motion(0.12, 0.06, 0.04, 0.86, 0.06, 1.8, 0.12, 0.45, 1.2, 0.65, interruption=("landing", 0.25)),
    "stairsdown": Motion(0.0, 0.06, 0.04, 0.97, 0.06, 2.3, 0.12, 0.3, 0.2, 0.7, interruption=("landing", 0.25)),
    "stand": Motion(0.02, 0.06, 0.03, 0.45, 0.1, 0.15, 0.3, 0.0, 0.0, 0.05, interruption=("steps", 0.12)),
    "sit": Motion(-0.33, 0.12, 0.07, 0.45, 0.1, 0.08, 0.3, 0.0, 0.0, 0.03, interruption=("fidget", 0.12)),
    "bike": Motion(0.35, 0.1, 0.05, (1.67, 2.83), 0.0, 0.9, 0.2, 0.6, 0.4, 0.5, vibration=0.4,
                   interruption=("coast", 0.15)),
}
_NULL = Motion(0.3, 0.1, 0.1, 0.5, 0.1, 0.6, 0.3, 0.1, 0.0, 0.3)
"""Between activities (dropped by the pipelines)."""


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix by ``angle`` (rad) about the unit ``axis`` (Rodrigues' formula)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def _unit(rng: np.random.Generator, base=(0.0, 0.0, 0.0), spread: float = 1.0) -> np.ndarray:
    v = np.asarray(base) + spread * rng.normal(size=3)
    return v / np.linalg.norm(v)


def _user(seed: int, u: int) -> dict:
    """A user's body: pouch placement, cadence (Hz), vigour, gait directions, per-activity pitch/cadence/amplitude/phase."""
    rng = streams.HHAR_USER.generator(seed, u)
    walk = rng.uniform(1.6, 2.0)
    vigour = rng.uniform(0.75, 1.3)
    styles = {}
    for a, m in [*_MOTION.items(), ("null", _NULL)]:
        cadence = rng.uniform(*m.cadence) if isinstance(m.cadence, tuple) else walk * (m.cadence + m.cadence_user * rng.normal())
        styles[a] = dict(pitch=m.pitch + m.pitch_user * rng.normal(), cadence=cadence,
                         amp=m.amp * vigour * max(0.3, 1 + m.amp_user * rng.normal()),
                         phase2=m.harmonic_phase + 0.4 * rng.normal(), tilt=0.05 * rng.normal())
    return dict(placement=_rotation(_unit(rng), rng.normal(0.0, PLACEMENT_STD_RAD)), walk=walk, vigour=vigour,
                styles=styles, axes=_unit(rng, _GAIT_AXIS, AXIS_SPREAD), axes2=_unit(rng, _GAIT_AXIS2, AXIS_SPREAD),
                rot_axes=_unit(rng, _ROT_AXIS, AXIS_SPREAD), rot_phase=rng.uniform(0, 2 * np.pi, 3), rng=rng)


_BOUT_FIELDS = ("start", "label", "pitch", "tilt", "freq", "amp", "share2", "phase2", "gyro", "yaw", "vibration")


def _bouts(user: dict, minutes: float) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The user's run as 2–8 s bouts (random order, ``null`` pauses) with motion (:data:`_BOUT_FIELDS`) and pouch rotation."""
    rng = user["rng"]
    active = minutes * 60.0
    pause = max(2.0, 0.1 * active)
    rows, rotations = [], []
    rotation, t = user["placement"], 0.0

    def add(label: int, name: str, length: float) -> None:
        nonlocal rotation, t
        end = t + length
        while t < end - 1e-9:
            dur = min(rng.uniform(2.0, 8.0), end - t)
            m = _NULL if name == "null" else _MOTION[name]
            style = user["styles"][name]
            kind = m.interruption[0] if m.interruption and rng.random() < m.interruption[1] else name
            row = dict(start=t, label=label, pitch=style["pitch"] + m.pitch_bout * rng.normal(), tilt=style["tilt"],
                       freq=style["cadence"] * (1 + 0.03 * rng.normal()), amp=style["amp"] * (1 + 0.1 * rng.normal()),
                       share2=m.harmonic, phase2=style["phase2"], gyro=m.gyro * user["vigour"], yaw=0.0,
                       vibration=m.vibration * (1 + 0.2 * rng.normal()))
            walk = user["styles"]["walk"]
            if kind == "stop":  # a short stop while walking
                row.update(amp=0.15 * user["vigour"], gyro=0.05, pitch=user["styles"]["stand"]["pitch"])
            elif kind == "landing":  # level steps and a turn of ≈ 180° between two flights
                dur = min(dur, 3.0)
                row.update(freq=walk["cadence"], amp=walk["amp"], share2=_MOTION["walk"].harmonic,
                           phase2=walk["phase2"], pitch=walk["pitch"], yaw=rng.choice((-1, 1)) * np.pi / dur)
            elif kind == "steps":  # a few steps while standing
                row.update(freq=walk["cadence"], amp=0.5 * walk["amp"], share2=0.3, gyro=0.3)
            elif kind == "fidget":  # shifting on the chair
                row.update(amp=0.5 * user["vigour"], freq=rng.uniform(0.3, 1.0), gyro=0.25, pitch=row["pitch"] + 0.1 * rng.normal())
            elif kind == "coast":  # not pedalling
                row.update(amp=0.1 * row["amp"], gyro=0.1 * row["gyro"])
            elif name == "walk" and rng.random() < 0.1:  # a turn while walking
                row["yaw"] = rng.choice((-1, 1)) * rng.uniform(0.5, 1.0) * np.pi / dur
            if rng.random() < POUCH_MOVE[0]:
                rotation = _rotation(_unit(rng), rng.normal(0.0, POUCH_MOVE[1])) @ user["placement"]
            rows.append(row)
            rotations.append(rotation)
            t += dur

    for a in rng.permutation(len(ACTIVITIES)):
        add(-1, "null", pause)
        add(int(a), ACTIVITIES[a], active)
    add(-1, "null", pause)
    bouts = {f: np.array([r[f] for r in rows]) for f in _BOUT_FIELDS}
    bouts["end"] = np.float64(t)
    return bouts, np.array(rotations)


RAMP_S = 0.8
"""Seconds over which posture and amplitude move from one bout's value to the next."""


def _motion(t: np.ndarray, bouts: dict, rotations: np.ndarray, user: dict, watch: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, 3) acceleration, rotation rate and label index (−1 = null) at ``t``: gravity at the bout's pitch/tilt,
    two gait harmonics, a turn, vibration, rotated by the pouch rotation."""
    start = bouts["start"]
    k = np.searchsorted(start, t, side="right") - 1
    prev = np.maximum(k - 1, 0)
    ramp = np.clip((t - start[k]) / RAMP_S, 0.0, 1.0)
    smooth = {f: bouts[f][prev] + ramp * (bouts[f][k] - bouts[f][prev]) for f in ("pitch", "tilt", "amp", "gyro")}
    durations = np.diff(np.append(start, bouts["end"]))
    phase0 = np.concatenate([[0.0], np.cumsum(2 * np.pi * bouts["freq"] * durations)[:-1]])
    phase = phase0[k] + 2 * np.pi * bouts["freq"][k] * (t - start[k])
    pitch, tilt = smooth["pitch"], smooth["tilt"]
    gravity = G * np.stack([np.sin(pitch), np.cos(pitch) * np.cos(tilt), np.cos(pitch) * np.sin(tilt)], axis=1)
    amp = smooth["amp"] * (1.6 if watch else 1.0)
    gait = amp[:, None] * (np.sin(phase)[:, None] * user["axes"]
                           + bouts["share2"][k][:, None] * np.sin(2 * phase + bouts["phase2"][k])[:, None] * user["axes2"])
    vib = bouts["vibration"][k][:, None] * np.sin(2 * np.pi * np.array([9.0, 13.0, 17.0]) * t[:, None] + user["rot_phase"])
    rot = smooth["gyro"][:, None] * np.sin(phase[:, None] / 2 + user["rot_phase"]) * user["rot_axes"]
    rot[:, 1] += bouts["yaw"][k]
    rot[:, 2] += np.where(ramp < 1.0, (bouts["pitch"][k] - bouts["pitch"][prev]) / RAMP_S, 0.0)
    r = rotations[k]
    return np.einsum("nij,nj->ni", r, gravity + gait + vib), np.einsum("nij,nj->ni", r, rot), bouts["label"][k]


def _device_samples(rng, rate: float, duration: float, jitter: float) -> np.ndarray:
    """Sample times (s) of one device: native rate with drift and jitter, minus a few gaps."""
    rate = rate * rng.uniform(0.97, 1.03)
    n = int(duration * rate)
    t = np.sort(np.clip(np.arange(n) / rate + rng.normal(0, jitter / rate, n), 0, duration))
    for _ in range(int(rng.integers(0, 4))):
        start = rng.uniform(0, duration)
        t = t[(t < start) | (t > start + rng.uniform(1.5, 4.0))]
    return t


def generate_frames(*, users: Iterable[str] = USERS, minutes: float = 5.0, seed: int = 0,
                    models: Iterable[str] | None = None) -> dict[tuple[str, str], pd.DataFrame]:
    """The four HHAR tables (only ``models``' rows when given) as DataFrames in the CSV layout."""
    users = list(users)
    if not set(users) <= set(USERS) or not minutes > 0:
        raise ValueError(f"generate_frames: expected users among {USERS} and minutes > 0, got {users}, {minutes!r}.")
    models = list(DEVICES) if models is None else list(models)
    parts: dict[tuple[str, str], list[pd.DataFrame]] = {key: [] for key in FILES}
    for user in users:
        u = USERS.index(user)
        profile = _user(seed, u)
        bouts, rotations = _bouts(profile, minutes)
        duration = float(bouts["end"])
        for d, (model, (kind, rate, has_gyro, noise)) in enumerate(DEVICES.items()):
            if model not in models:
                continue
            for copy in (1, 2):
                rng = streams.HHAR_DEVICE.generator(seed, u, 1 + 2 * d + copy)
                t0_ns = int(rng.integers(10**12, 10**14))
                bias, gain = rng.normal(0, 0.3, 3), rng.uniform(0.95, 1.05, 3)
                gyro_bias, gyro_drift = rng.normal(0, 0.02, 3), rng.normal(0, 1e-4, 3)
                for sensor in ("acc", "gyro") if has_gyro else ("acc",):
                    sensor_rate = rate * (1.0 if sensor == "acc" else rng.uniform(0.98, 1.02))
                    t = _device_samples(rng, sensor_rate, duration, JITTER[model])
                    acc, gyro, labels = _motion(t, bouts, rotations, profile, kind == "watch")
                    if sensor == "acc":
                        signal = acc * gain + bias + rng.normal(0, noise, acc.shape)
                    else:
                        signal = gyro + gyro_bias + gyro_drift * t[:, None] + rng.normal(0, noise / 5, gyro.shape)
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
    """Writes the four CSVs (see :func:`generate_frames` for the options) into ``out_dir``, atomically."""
    paths = []
    for key, frame in generate_frames(**kwargs).items():
        with atomic_write(Path(out_dir) / FILES[key], "w", newline="") as fh:
            frame.to_csv(fh, index=False)
        paths.append(Path(out_dir) / FILES[key])
    return paths

