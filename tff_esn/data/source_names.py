"""What a data source string names, read without loading anything: the sources of the seeds' data and of own
data, the generated series and the task a series means, and a source's subset option."""

from __future__ import annotations

import re

SEED_SOURCES = ("wesad", "hhar")
"""Source kinds of the seeds' data (``synthetic-`` copies included): the class defaults hold there."""
OWN_DATA_SOURCES = ("npz", "ts")
"""The command line's sources of own data (``npz:FILE``, ``ts:DIR/NAME``): no pipeline, own-data defaults."""

SERIES = ("mackey-glass", "lorenz", "sine")
"""Generated series (:mod:`tff_esn.data.seed_sources.generators`) besides ``narmaN``; they take no argument."""
SERIES_SPELLED = "narma10 (narmaN), mackey-glass, lorenz, sine"
"""The generated series as help and error messages name them."""
SERIES_TASK = "forecast"
"""The task a generated series means: its values have no labels or targets of their own."""
_NARMA = re.compile(r"narma([2-9]|[1-9]\d+)")


def source_kind(source: str) -> str:
    """``npz`` for ``npz:FILE``, ``wesad`` for ``synthetic-wesad`` and ``wesad:DIR``, …"""
    kind = source.split(":", 1)[0]
    return kind[len("synthetic-"):] if kind.startswith("synthetic-") else kind


def own_data(source: str) -> bool:
    """Whether ``source`` holds a researcher's own data (not the seeds'; no pipeline; own-data defaults apply)."""
    return source_kind(source) not in SEED_SOURCES


def narma_order(kind: str) -> int | None:
    """N of ``narmaN`` (N ≥ 2, no leading zero), else ``None``."""
    match = _NARMA.fullmatch(kind)
    return int(match.group(1)) if match else None


def is_series(kind: str) -> bool:
    """Whether ``kind`` names a generated series: ``narmaN`` (N ≥ 2) or one of :data:`SERIES`."""
    return kind in SERIES or narma_order(kind) is not None


def series_source(source: str) -> bool:
    """Whether ``source`` is a generated series: a series name with no ``:`` argument."""
    return ":" not in source and is_series(source)


def named_task(source: str) -> str | None:
    """The task ``source``'s name alone means: :data:`SERIES_TASK` for a generated series, else ``None``."""
    return SERIES_TASK if series_source(source) else None


def option_subset(options: dict, name: str, available: tuple[str, ...]) -> tuple[str, ...]:
    """The option ``name`` popped from ``options``: a non-empty subset of ``available`` (default all)."""
    value = options.pop(name, None)
    if value is None:
        return available
    chosen = (value,) if isinstance(value, str) else tuple(value)
    if not chosen or not set(chosen) <= set(available):
        raise ValueError(f"{name}: expected a non-empty subset of {available}, got {list(chosen)}.")
    return chosen
