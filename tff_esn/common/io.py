"""Atomic writes of run outputs (JSON, CSV, text): a reader never sees a half-written file.

A writer fills a temporary file beside the destination (mode 0666 less the umask), fsyncs it and
``os.replace``s it onto the destination; an exception leaves the previous file untouched.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np


def jsonable(value: Any) -> Any:
    """Plain-Python form of ``value``: numpy scalars/arrays, tuples, paths; NaN/inf → None."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"write_json_atomic: cannot serialise a value of type {type(value).__name__}: {value!r}.")


def _create_beside(path: Path) -> tuple[int, str]:
    """A new hidden temporary file in ``path``'s folder, mode 0666 & ~umask: ``(fd, name)``."""
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"atomic_write: no free temporary name beside {path}.")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", **open_kwargs: Any) -> Iterator[IO]:
    """A temporary file beside ``path``, fsynced and renamed onto it at the end; an exception removes it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_beside(path)
    try:
        with os.fdopen(fd, mode, **open_kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(err, OSError) and err.filename is None:
            err.filename = str(path)  # a full disk names the file it could not write
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Writes ``text`` to ``path`` atomically (creating parent folders); returns the path."""
    with atomic_write(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    return Path(path)


def write_json_atomic(path: str | os.PathLike, obj: Any, *, indent: int = 2) -> Path:
    """Writes ``obj`` as JSON atomically (numpy values converted, NaN/inf as null)."""
    text = json.dumps(jsonable(obj), indent=indent, sort_keys=False, allow_nan=False) + "\n"
    return write_text_atomic(path, text)


def write_csv_atomic(
    path: str | os.PathLike, rows: Iterable[Mapping[str, Any]], fieldnames: Sequence[str] | None = None
) -> Path:
    """Writes dict rows as CSV atomically; columns are ``fieldnames`` or the first row's keys."""
    rows = [dict(r) for r in rows]
    if fieldnames is None:
        if not rows:
            raise ValueError("write_csv_atomic: no rows and no fieldnames; cannot infer the columns.")
        fieldnames = list(rows[0])
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(fieldnames), extrasaction="raise", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: jsonable(v) for k, v in row.items()})
    return write_text_atomic(path, buffer.getvalue())
