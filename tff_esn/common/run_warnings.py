"""Warnings a run records: inputs or settings that can mislead without stopping the run.

:func:`warn` says one; :func:`recording` collects them in order without repeats (shown once on stderr)
for ``metrics.json["warnings"]``; inside :func:`said_once` (a command of many runs) stderr shows each
message once in all, and the block ends with a line per repeated message and its count.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator

_SHOWN: list[Counter[str]] = []
"""The open :func:`said_once` block's count of each message its :func:`recording` blocks said."""


class RunWarning(UserWarning):
    """An input or setting that can give a misleading result; recorded in ``metrics.json``."""


def warn(message: str, *, stacklevel: int = 2) -> None:
    """Emits ``message`` (whitespace folded to one line) as a :class:`RunWarning`."""
    warnings.warn(" ".join(str(message).split()), RunWarning, stacklevel=stacklevel + 1)


def merged(*lists: Iterable[str]) -> list[str]:
    """The messages of ``lists`` in order, each once (a run's own list beside what was said around it)."""
    return list(dict.fromkeys(m for messages in lists for m in messages))


@contextlib.contextmanager
def recording() -> Iterator[list[str]]:
    """The distinct :class:`RunWarning` messages emitted inside the block, each printed to stderr once."""
    said: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always", RunWarning)
        outer = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if not issubclass(category, RunWarning):
                return outer(message, category, filename, lineno, file, line)
            text = str(message)
            if text not in said:
                said.append(text)
                if _SHOWN:
                    _SHOWN[-1][text] += 1
                if not _SHOWN or _SHOWN[-1][text] == 1:
                    print(f"warning: {text}", file=sys.stderr)

        warnings.showwarning = show
        yield said


@contextlib.contextmanager
def said_once(width: int = 100) -> Iterator[Counter[str]]:
    """Inside the block each :class:`RunWarning` message reaches stderr once, however many runs say it; on leaving,
    one line per repeated message: ``warning (said N times in all): start of the message…``."""
    counts: Counter[str] = Counter()
    _SHOWN.append(counts)
    try:
        yield counts
    finally:
        _SHOWN.remove(counts)
        for text, n in counts.items():
            if n > 1:
                print(f"warning (said {n} times in all): {text[:width]}{'…' if len(text) > width else ''}",
                      file=sys.stderr)
