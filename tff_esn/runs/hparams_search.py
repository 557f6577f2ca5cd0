"""The search behind a hyper-parameter file: ``tff-esn tune`` writes ``search.json`` (its space, data and seed) beside
``best_hparams.json``, so a DP run reading the file (``--hparams``) can say whether that search ran on its own data.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

SEARCH_RECORD = "search.json"
"""The search record ``tff-esn tune`` writes into its folder, beside ``best_hparams.json``."""


def search_record(hparams: str | os.PathLike | None) -> dict[str, Any] | None:
    """The search record beside hyper-parameter file ``hparams`` (``None``: no file, or no readable record naming
    the search's ``data``)."""
    if hparams is None:
        return None
    path = Path(hparams).expanduser().parent / SEARCH_RECORD
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("data"), str) else None


def _files(source: str) -> list[Path] | None:
    """The files a ``npz:``/``ts:`` source reads (``None``: another kind of source)."""
    kind, _, arg = source.partition(":")
    if kind == "npz":
        return [Path(arg).expanduser()]
    if kind == "ts":
        stem = Path(arg).expanduser()
        return [stem.with_name(f"{stem.name}_{part}.ts") for part in ("TRAIN", "TEST")]
    return None


def _digest(paths: list[Path]) -> str | None:
    digest = hashlib.sha256()
    try:
        for path in paths:
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def same_data(searched: str, run: str) -> bool:
    """Whether sources ``searched`` and ``run`` hold the same data: their files' bytes (``npz:``/``ts:``, whatever
    their names), else the same source name (a generated or named data set); a file that cannot be read counts as
    the same data (the safe side of a privacy claim)."""
    files = _files(searched), _files(run)
    if files[0] is None or files[1] is None:
        return searched == run
    digests = _digest(files[0]), _digest(files[1])
    return None in digests or digests[0] == digests[1]
