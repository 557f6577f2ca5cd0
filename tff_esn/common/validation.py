"""Checks shared by every config's ``__post_init__``: :func:`check_field`'s ``ValueError`` names the config,
the field, its ``tff-esn run`` flag and what was expected (no TensorFlow, no numpy)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any


def flag_of(config: Any, name: str) -> str:
    """The ``tff-esn run`` flag of ``config``'s field ``name`` (``metadata["flag"]`` or the name)."""
    fields = {f.name: f for f in dataclasses.fields(config)} if dataclasses.is_dataclass(config) else {}
    flag = fields[name].metadata.get("flag", name) if name in fields else name
    return "--" + flag.replace("_", "-")


def check_field(config: Any, name: str, ok: bool, expected: str, *, flag: str | None = None) -> None:
    """``ValueError`` naming ``config``'s field ``name``, its flag and ``expected`` unless ``ok``."""
    if not ok:
        shown = flag_of(config, name) if flag is None else flag
        where = f" ({shown})" if shown else ""
        raise ValueError(f"{type(config).__name__}.{name}{where}: expected {expected}, got {getattr(config, name)!r}.")


def is_finite(value: Any) -> bool:
    """Whether ``value`` is a finite int or float (``bool`` is not a number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_count(value: Any, low: int) -> bool:
    """Whether ``value`` is an int (not ``bool``) ≥ ``low``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


SEED_MAX = 2 ** 32 - 1
"""The largest seed every library a run seeds accepts (scikit-learn's ``random_state`` and NumPy's legacy seeding)."""


def is_seed(value: Any) -> bool:
    """Whether ``value`` is an int (not ``bool``) in [0, :data:`SEED_MAX`]."""
    return is_count(value, 0) and value <= SEED_MAX
