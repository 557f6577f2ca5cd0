"""Cutting labelled recordings into equal-length sequences (IncFed §IV, pFedRR §3, FedIP §3)."""

from __future__ import annotations

import numpy as np


def label_runs(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and stop indices of the maximal runs of equal labels."""
    labels = np.asarray(labels)
    if labels.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.diff(labels, prepend=labels[:1] - 1) != 0)
    return starts, np.append(starts[1:], labels.size)


def chunk_runs(x: np.ndarray, labels: np.ndarray, length: int, *, keep: np.ndarray | None = None,
               stride: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(n, length, F) chunks of (N, F) ``x`` inside label runs (cut where ``keep`` is False), ``stride`` apart,
    and their (n,) labels; short tails and non-finite chunks dropped."""
    stride = length if stride is None else stride
    labels = np.asarray(labels)
    run_labels = labels if keep is None else np.where(keep, labels, np.iinfo(np.int64).min)
    starts, stops = label_runs(run_labels)
    if keep is not None:
        ok = np.asarray(keep)[starts]
        starts, stops = starts[ok], stops[ok]
    begin = [np.arange(a, b - length + 1, stride) for a, b in zip(starts, stops) if b - a >= length]
    begin = np.concatenate(begin) if begin else np.zeros(0, np.int64)
    index = begin[:, None] + np.arange(length)[None, :]
    chunks = x[index]
    finite = np.all(np.isfinite(chunks), axis=(1, 2))
    return chunks[finite], labels[begin][finite]


def split_sequences(x: np.ndarray, y: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive non-overlapping sequences of ``length`` steps with per-step labels; the tail is dropped."""
    n = x.shape[0] // length
    return (x[: n * length].reshape(n, length, *x.shape[1:]), y[: n * length].reshape(n, length))
