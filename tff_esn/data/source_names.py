"""Light helpers of data source strings: which names are generated series, and a source's subset option."""

from __future__ import annotations

import re

SERIES = ("mackey-glass", "lorenz", "sine")
"""Generated series (:mod:`tff_esn.data.seed_sources.generators`) besides ``narmaN``; they take no argument."""


def is_series(kind: str) -> bool:
    """Whether ``kind`` names a generated series: ``narmaN`` (N ≥ 2) or one of :data:`SERIES`."""
    return kind in SERIES or bool(re.fullmatch(r"narma([2-9]|[1-9]\d+)", kind))


def option_subset(options: dict, name: str, available: tuple[str, ...]) -> tuple[str, ...]:
    """The option ``name`` popped from ``options``: a non-empty subset of ``available`` (default all)."""
    value = options.pop(name, None)
    if value is None:
        return available
    chosen = (value,) if isinstance(value, str) else tuple(value)
    if not chosen or not set(chosen) <= set(available):
        raise ValueError(f"{name}: expected a non-empty subset of {available}, got {list(chosen)}.")
    return chosen
