"""The preprocessing pipelines of the thesis and the papers, as frozen configurations.

``thesis`` (§5.2: wrist EDA + BVP → pEDA, tEDA, HR, HRV), ``incfed-wesad`` / ``pfedrr-wesad`` /
``fedip-wesad`` (chest, 700 Hz), ``incfed-hhar`` (window features) and ``pfedrr-hhar`` / ``fedip-hhar``
(Nexus 4 at 100 Hz): one client per subject or user. A pipeline's fields are its options and cache key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import numpy as np

from tff_esn.data.seed_sources import hhar, wesad
from tff_esn.data.seed_sources.chunking import chunk_runs, split_sequences
from tff_esn.data.seed_sources.hrv import HRV_INDICES
from tff_esn.data.seed_sources.normalise import MA_MODES, standardize_to
from tff_esn.data.sequences import ClientSequences, SequenceDataset
from tff_esn.common.validation import check_field, is_finite

Subjects = Iterable[tuple[str, dict]]
"""``(subject id, validated WESAD subject dict)`` pairs, produced one at a time."""


def _check_options(pipeline: "Pipeline", counts: tuple[str, ...] = (), positive: tuple[str, ...] = (),
                   choices: dict[str, tuple] | None = None) -> None:
    """Checks options: ``counts`` whole numbers ≥ 1, ``positive`` numbers > 0, ``choices`` among their values."""
    for name in counts:
        value = getattr(pipeline, name)
        check_field(pipeline, name, is_finite(value) and value >= 1 and float(value).is_integer(), "an integer ≥ 1",
                    flag="")
    for name in positive:
        check_field(pipeline, name, is_finite(getattr(pipeline, name)) and getattr(pipeline, name) > 0,
                    "a number > 0", flag="")
    for name, allowed in (choices or {}).items():
        check_field(pipeline, name, getattr(pipeline, name) in allowed, f"one of {allowed}", flag="")


def _dataset(clients: dict[str, ClientSequences], pipeline: "Pipeline", n_classes: int, features, labels,
             source: str) -> SequenceDataset:
    if not clients:
        raise ValueError(f"pipeline {pipeline.name!r} on {source}: no client yields a single sequence.")
    return SequenceDataset(clients, n_classes, tuple(features), tuple(labels), source)


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """Base of the pipeline configurations: ``name`` and the raw data set it reads."""

    name: ClassVar[str] = ""
    data: ClassVar[str] = ""
    wesad_devices: ClassVar[tuple[str, ...]] = ()
    """WESAD devices the pipeline reads (the synthetic source simulates only these)."""
    synthetic_minutes: ClassVar[float] = 5.0
    """Default length of a synthetic WESAD subject for this pipeline (real protocol: 100 min)."""

    def options(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ThesisPipeline(Pipeline):
    """Thesis §5.2 (:func:`tff_esn.data.seed_sources.wesad.thesis_features`): HRV window (Table 6.1: 5, 25 or 50 s)
    and index, ``rate_hz`` grid, moving average by ``ma_mode``, per-step labels; synthetic: 100 min, wrist."""

    name: ClassVar[str] = "thesis"
    data: ClassVar[str] = "wesad"
    wesad_devices: ClassVar[tuple[str, ...]] = ("wrist",)
    synthetic_minutes: ClassVar[float] = 100.0
    hrv_window_s: float = 25
    hrv_index: str = "RMSSD"
    rate_hz: float = 1.0
    ma_window_s: float | None = wesad.THESIS_MA_WINDOW_S
    ma_mode: str = wesad.THESIS_MA_MODE
    sequence_length: int = 60

    def __post_init__(self) -> None:
        _check_options(self, ("sequence_length",),
                       ("hrv_window_s", "rate_hz") + (() if self.ma_window_s is None else ("ma_window_s",)),
                       {"hrv_index": HRV_INDICES, "ma_mode": MA_MODES})

    def build(self, subjects: Subjects, source: str) -> SequenceDataset:
        clients = {}
        for sid, subject in subjects:
            x, y = wesad.thesis_features(subject, self.hrv_window_s, hrv_index=self.hrv_index, rate_hz=self.rate_hz,
                                         ma_window_s=self.ma_window_s, ma_mode=self.ma_mode, source=f"{source} {sid}")
            xs, ys = split_sequences(x, y, int(self.sequence_length))
            if len(xs):
                clients[sid] = ClientSequences(xs, ys)
        return _dataset(clients, self, 2, wesad.THESIS_FEATURES, ("not stressed", "stressed"), source)


@dataclasses.dataclass(frozen=True)
class WesadChestPipeline(Pipeline):
    """8 chest channels at 700 Hz z-scored per client, ``chunk`` samples in one condition, 4 classes; synthetic: 5 min."""

    data: ClassVar[str] = "wesad"
    wesad_devices: ClassVar[tuple[str, ...]] = ("chest",)
    chunk: int = 350
    standardize: bool = True

    def __post_init__(self) -> None:
        _check_options(self, ("chunk",))

    def build(self, subjects: Subjects, source: str) -> SequenceDataset:
        clients = {}
        for sid, subject in subjects:
            x, codes = wesad.chest_signals(subject)
            keep = np.isin(codes, wesad.AFFECT_CODES)
            if self.standardize and keep.any():
                x = standardize_to(x, x[keep], what=f"{source} {sid}: chest channels {wesad.CHEST_FEATURES}")
            chunks, labels = chunk_runs(x.astype(np.float32), codes, int(self.chunk), keep=keep)
            if len(chunks):
                clients[sid] = ClientSequences(chunks, np.searchsorted(wesad.AFFECT_CODES, labels))
        return _dataset(clients, self, 4, wesad.CHEST_FEATURES, wesad.AFFECT_NAMES, source)


@dataclasses.dataclass(frozen=True)
class IncFedWesad(WesadChestPipeline):
    """IncFed §IV-a: chunks of 350 samples (≈ 0.5 s)."""

    name: ClassVar[str] = "incfed-wesad"
    chunk: int = 350


@dataclasses.dataclass(frozen=True)
class PFedRRWesad(WesadChestPipeline):
    """pFedRR §3: chunks of 700 samples (1 s)."""

    name: ClassVar[str] = "pfedrr-wesad"
    chunk: int = 700


@dataclasses.dataclass(frozen=True)
class FedIPWesad(WesadChestPipeline):
    """FedIP §3: user-wise normalized, non-overlapping sequences of 700 samples (1 s)."""

    name: ClassVar[str] = "fedip-wesad"
    chunk: int = 700


PIPELINES: dict[str, type[Pipeline]] = {p.name: p for p in (ThesisPipeline, IncFedWesad, PFedRRWesad, FedIPWesad)}
"""Pipeline name → configuration class."""


def make_pipeline(name: str, **options: Any) -> Pipeline:
    """The pipeline ``name`` configured by ``options`` (its fields); unknown names/options raise."""
    if name not in PIPELINES:
        raise ValueError(f"pipeline: expected one of {sorted(PIPELINES)}, got {name!r}.")
    cls = PIPELINES[name]
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise ValueError(f"pipeline {name!r}: unknown option(s) {unknown}; its options are {sorted(fields)}.")
    return cls(**options)


def iter_subjects(subjects: Iterable[str], load, *, desc: str = "WESAD subjects") -> Iterator[tuple[str, dict]]:
    """``(id, load(id))`` lazily, one raw subject in memory at a time (tqdm bar on a terminal)."""
    import sys

    from tqdm.auto import tqdm

    subjects = list(subjects)
    for sid in tqdm(subjects, desc=desc, unit="subject", leave=False, disable=not sys.stderr.isatty()):
        yield sid, load(sid)


# ------------------------------------------------------------------ HHAR
HHAR_AXES = ("acc_x", "acc_y", "acc_z", "gyro_x", "gyro_y", "gyro_z")
HHAR_DEVICE_SETS = {"phones": hhar.PHONE_MODELS, "watches": hhar.WATCH_MODELS,
                    "all": hhar.PHONE_MODELS + hhar.WATCH_MODELS}
INCFED_HHAR_FEATURES = (*HHAR_AXES, *(f"{s}_{a}" for s in ("mean", "std", "min", "max") for a in HHAR_AXES),
                        "acc_magnitude", "gyro_magnitude")


def window_features(values: np.ndarray, window: int = 200) -> np.ndarray:
    """IncFed §IV-b's 32 features of a gap-free (n, 6) stretch: 6 axes, mean/std/min/max over the latest
    ``window``-sample window (50 % overlap; NaN before the first), two magnitudes."""
    n = values.shape[0]
    stride = max(window // 2, 1)
    stats = np.full((n, 24), np.nan)
    if n >= window:
        starts = np.arange((n - window) // stride + 1) * stride
        view = np.lib.stride_tricks.sliding_window_view(values, window, axis=0)[starts]  # (w, 6, window)
        per_window = np.concatenate([view.mean(-1), view.std(-1), view.min(-1), view.max(-1)], axis=1)
        t = np.arange(window - 1, n)
        stats[window - 1:] = per_window[np.minimum((t - (window - 1)) // stride, len(starts) - 1)]
    mags = np.stack([np.linalg.norm(values[:, :3], axis=1), np.linalg.norm(values[:, 3:], axis=1)], axis=1)
    return np.concatenate([values, stats, mags], axis=1)


def _hhar_clients(pipeline: Pipeline, runs: dict, source: str, features, prepare, *,
                  squared: bool = False) -> SequenceDataset:
    """One client per user: ``prepare(run)`` stretches, standardized per user (``squared`` appended), chunked in label runs."""
    clients = {}
    for user in sorted({u for u, _ in runs}):
        parts = [part for (u, _), run in sorted(runs.items()) if u == user for part in prepare(run)]
        if not parts:
            continue
        xs = [x for x, _ in parts]
        if pipeline.standardize:
            rows = np.concatenate(xs)
            rows = standardize_to(rows, rows[np.all(np.isfinite(rows), axis=1)],
                                  what=f"{source} user {user}: {pipeline.name} features")
            xs = np.split(rows, np.cumsum([len(x) for x in xs])[:-1])
        if squared:
            xs = [np.concatenate([x, x * x], axis=1) for x in xs]
        chunks, labels = [], []
        for x, (_, y) in zip(xs, parts):
            c, l = chunk_runs(x.astype(np.float32), y, int(pipeline.chunk))
            chunks.append(c)
            labels.append(l)
        if sum(len(c) for c in chunks):
            clients[user] = ClientSequences(np.concatenate(chunks), np.concatenate(labels))
    features = (*features, *(f"{name}^2" for name in features)) if squared else features
    return _dataset(clients, pipeline, len(hhar.ACTIVITIES), features, hhar.ACTIVITIES, source)


@dataclasses.dataclass(frozen=True)
class IncFedHhar(Pipeline):
    """IncFed §IV-b: ``devices``' 6 axes, 32 features over ``window`` samples, z-scored per user, ``chunk``-step sequences."""

    name: ClassVar[str] = "incfed-hhar"
    data: ClassVar[str] = "hhar"
    window: int = 200
    chunk: int = 500
    devices: str = "phones"
    standardize: bool = True

    def __post_init__(self) -> None:
        _check_options(self, ("window", "chunk"), choices={"devices": tuple(HHAR_DEVICE_SETS)})

    def models(self) -> tuple[str, ...]:
        return HHAR_DEVICE_SETS[self.devices]

    def build(self, runs: dict, source: str) -> SequenceDataset:
        def prepare(run):
            return [(window_features(run.values[s], int(self.window)), run.labels[s]) for s in run.segments()]

        return _hhar_clients(self, runs, source, INCFED_HHAR_FEATURES, prepare)


@dataclasses.dataclass(frozen=True)
class Nexus4Hhar(Pipeline):
    """pFedRR §3 / FedIP §3: Nexus 4 resampled to ``rate_hz`` per gap-free stretch, z-scored per user, ``chunk``
    steps; ``squared`` appends each axis' square (ours: motion power for the mean-state readout)."""

    data: ClassVar[str] = "hhar"
    rate_hz: float = 100.0
    chunk: int = 200
    standardize: bool = True
    squared: bool = False

    def __post_init__(self) -> None:
        _check_options(self, ("chunk",), ("rate_hz",))

    def models(self) -> tuple[str, ...]:
        return ("nexus4",)

    def build(self, runs: dict, source: str) -> SequenceDataset:
        def prepare(run):
            parts = []
            for s in run.segments():
                t = run.t[s]
                grid = np.arange(t[0], t[-1], 1.0 / self.rate_hz)
                x = np.stack([np.interp(grid, t, run.values[s][:, i]) for i in range(6)], axis=1)
                parts.append((x, run.labels[s][np.searchsorted(t, grid, side="right") - 1]))
            return parts

        return _hhar_clients(self, runs, source, HHAR_AXES, prepare, squared=self.squared)


@dataclasses.dataclass(frozen=True)
class PFedRRHhar(Nexus4Hhar):
    """pFedRR §3: chunks of 200 steps (2 s at 100 Hz)."""

    name: ClassVar[str] = "pfedrr-hhar"
    chunk: int = 200


@dataclasses.dataclass(frozen=True)
class FedIPHhar(Nexus4Hhar):
    """FedIP §3: the Nexus 4 at ≈ 200 Hz ("400 samples … ≈ 2 seconds"), non-overlapping 400-step sequences."""

    name: ClassVar[str] = "fedip-hhar"
    rate_hz: float = 200.0
    chunk: int = 400


PIPELINES.update({p.name: p for p in (IncFedHhar, PFedRRHhar, FedIPHhar)})
