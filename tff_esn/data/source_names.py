"""The forms of a data source string (``npz:FILE``, ``ts:DIR/NAME``, ...), parsed without heavy imports.

The command line checks ``--data`` with :func:`parse_source` before anything loads;
:func:`tff_esn.data.sources.load_source` parses the same way.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

SOURCE_KINDS = ("synthetic-wesad", "synthetic-hhar", "wesad", "hhar", "npz", "ts")
SERIES = ("mackey-glass", "lorenz", "sine")
"""Generated series (:mod:`tff_esn.data.generators`) besides ``narmaN``; they take no argument."""


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


def parse_source(source: str) -> tuple[str, str]:
    """``(kind, argument)`` of a source (a path's ``~`` expanded); a ``ValueError`` names the
    expected forms, and suggests ``npz:PATH`` for a bare path."""
    if not isinstance(source, str):
        raise ValueError(f"source: expected a string, got {type(source).__name__}.")
    kind, _, arg = source.partition(":")
    if is_series(kind) and not arg and ":" not in source:
        return kind, ""
    if kind not in SOURCE_KINDS or (kind.startswith("synthetic") != (arg == "")):
        bare = kind not in SOURCE_KINDS and (source.endswith(".npz") or Path(source).expanduser().is_file())
        hint = f" (a file? write npz:{source})" if bare else ""
        raise ValueError(f"source: expected synthetic-wesad, synthetic-hhar, wesad:DIR, hhar:DIR, npz:FILE, "
                         f"ts:DIR/NAME or a series (narma10, narmaN, mackey-glass, lorenz, sine), got "
                         f"{source!r}{hint}.")
    return kind, os.path.expanduser(arg)
