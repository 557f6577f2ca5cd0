"""The preprocessing pipelines of the thesis and the papers, as frozen configurations.

Each pipeline turns one data set's raw subjects/users into a :class:`SequenceDataset` with
one client per subject (WESAD) or user (HHAR):

* ``thesis`` — thesis §5.2: wrist EDA + BVP → pEDA, tEDA, HR, HRV (:func:`wesad.thesis_features`),
  cut into sequences of ``sequence_length`` steps with per-step binary stress labels.
* ``incfed-wesad`` / ``pfedrr-wesad`` / ``fedip-wesad`` — IncFed §IV-a, pFedRR §3, FedIP §3:
  the 8 chest channels at 700 Hz, standardized per client, chunks of 350 / 700 / 700 samples
  inside one condition, 4 classes (baseline, stress, amusement, meditation).
* ``incfed-hhar`` — IncFed §IV-b: accelerometer + gyroscope of every phone, 32 features
  (6 axes, mean/std/min/max over windows of 200 with 50 % overlap, 2 magnitudes), sequences of 500.
* ``pfedrr-hhar`` / ``fedip-hhar`` — pFedRR §3, FedIP §3: the LG Nexus 4 only, resampled to
  100 Hz, standardized per user, chunks of 200 / 400.

A pipeline's fields are its options (``load_source(..., **options)``); the cache key is the
pipeline's name and fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import numpy as np

from tff_esn.data import wesad
from tff_esn.data.chunking import chunk_runs, split_sequences
from tff_esn.data.hrv import HRV_INDICES
from tff_esn.data.normalise import MA_MODES, standardize_to
from tff_esn.data.sequences import ClientSequences, SequenceDataset

Subjects = Iterable[tuple[str, dict]]
"""``(subject id, validated WESAD subject dict)`` pairs, produced one at a time."""


def _check_positive(owner: str, name: str, value: Any, kind: type = int) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    if kind is int:
        ok = ok and float(value).is_integer()
    if not ok:
        expected = "an integer ≥ 1" if kind is int else "a number > 0"
        raise ValueError(f"{owner}: {name} must be {expected}, got {value!r}.")


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

    def options(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ThesisPipeline(Pipeline):
    """Thesis §5.2 (see :func:`tff_esn.data.wesad.thesis_features`).

    Attributes:
        hrv_window_s: HRV window in seconds (Table 6.1: 5, 25 or 50).
        hrv_index: ``hrv_time`` index used as the HRV feature.
        rate_hz: output grid (1 Hz: ~6000 steps for a 100-minute subject, as in §5.2).
        ma_window_s: moving-average window in seconds (default: ``hrv_window_s``).
        ma_mode: ``divide`` (Table 5.3) or ``subtract``.
        sequence_length: steps per sequence (per-step labels).
    """

    name: ClassVar[str] = "thesis"
    data: ClassVar[str] = "wesad"
    hrv_window_s: float = 25
    hrv_index: str = "RMSSD"
    rate_hz: float = 1.0
    ma_window_s: float | None = None
    ma_mode: str = "divide"
    sequence_length: int = 60

    def __post_init__(self) -> None:
        _check_positive(self.name, "hrv_window_s", self.hrv_window_s, float)
        _check_positive(self.name, "rate_hz", self.rate_hz, float)
        if self.ma_window_s is not None:
            _check_positive(self.name, "ma_window_s", self.ma_window_s, float)
        _check_positive(self.name, "sequence_length", self.sequence_length)
        if self.hrv_index not in HRV_INDICES:
            raise ValueError(f"{self.name}: hrv_index must be one of {HRV_INDICES}, got {self.hrv_index!r}.")
        if self.ma_mode not in MA_MODES:
            raise ValueError(f"{self.name}: ma_mode must be one of {MA_MODES}, got {self.ma_mode!r}.")

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
    """8 chest channels at 700 Hz, standardized per client, chunks inside one condition, 4 classes.

    Attributes:
        chunk: samples per sequence (IncFed: 350; pFedRR, FedIP: 700).
        standardize: z-score each channel over the client's kept samples.
    """

    data: ClassVar[str] = "wesad"
    chunk: int = 350
    standardize: bool = True

    def __post_init__(self) -> None:
        _check_positive(self.name, "chunk", self.chunk)

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


def iter_subjects(subjects: Iterable[str], load) -> Iterator[tuple[str, dict]]:
    """``(id, load(id))`` lazily: one raw subject in memory at a time."""
    for sid in subjects:
        yield sid, load(sid)
