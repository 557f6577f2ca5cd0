"""Progress bars of long runs: drawn on a terminal, silent on a pipe unless asked.

:func:`progress_bar` is the one tqdm bar every command uses (rounds, candidates, epochs, trials, cells): shown
when the caller wants it (``--no-progress`` says no) and stderr is a terminal, or when the environment variable
:data:`PROGRESS_ENV` is ``1`` (a log file that should hold the bars).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from typing import Any

PROGRESS_ENV = "TFF_ESN_PROGRESS"
"""``1``: draw progress bars on a pipe too; ``0``: never draw them."""


def shown(wanted: bool = True) -> bool:
    """Whether a bar is drawn: ``wanted``, and stderr a terminal or :data:`PROGRESS_ENV` ``1`` (``0``: never)."""
    forced = os.environ.get(PROGRESS_ENV)
    if not wanted or forced == "0":
        return False
    return forced == "1" or sys.stderr.isatty()


def _size() -> dict[str, int]:
    """``ncols``/``nrows`` where stderr is a terminal reporting a size of 0 (a fresh pseudo-terminal, on which tqdm
    draws nothing): ``$COLUMNS``/``$LINES`` or 80 × 24; empty (tqdm asks the terminal) otherwise."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return {}
    if size.columns and size.lines:
        return {}
    columns, lines = shutil.get_terminal_size()
    return {"ncols": columns, "nrows": lines}


def progress_bar(iterable: Iterable | None = None, *, wanted: bool = True, **kwargs: Any):
    """A ``tqdm`` bar over ``iterable`` (or ``total=``) on stderr, disabled unless :func:`shown` (``wanted``)."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=not shown(wanted), file=sys.stderr, **{**_size(), **kwargs})
