"""Own series as forecasting data: an ``.npz`` holding ``series`` (no ``y``), read by :func:`load_series_npz`, or a
CSV file of one column per channel, read by :func:`load_series_csv`.

Arrays: ``series`` — (n, T), (n, T, F) or a 1-D object array/list of (T_i,) or (T_i, F) arrays, the channels
forecast; ``client`` (n,) — who holds each; optional ``split`` (n,) — ``train``/``val``/``test`` per client;
optional ``exog`` — exogenous inputs shaped like ``series`` (T_i, E), fed to the reservoir, never forecast;
optional ``stream`` (n,) — rows of one client sharing a stream id are consecutive segments of one series, joined
in file order into one sequence (the reservoir runs through them as one stream). The forecast target is a series
channel ``H`` steps after the inputs (``Task("forecast", H, target)``; default H 1, channel ``s0``).

A CSV file (a header row, then one row per step) holds the same: a ``client`` column (required), optional ``split``
and ``stream`` columns, columns named ``exog…`` (exogenous inputs), and every other column a channel forecast, named
by its header. A client's rows of one stream id (all its rows without a ``stream`` column) are one series, in file
order; its ``split`` must be one value.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.common import run_warnings
from tff_esn.common.tasks import Task
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import (RAGGED_MODES, ClientSequences, SequenceDataset, _check_client_kinds,
                                    _client_groups, npz_arrays)

SERIES_KEYS = ("series", "client", "split", "exog", "stream")
CSV_META = ("client", "split", "stream")
"""A CSV's columns that say who holds a step and which series it is, not channels."""
EXOG_PREFIX = "exog"


def _channels(values: Any, key: str, source: str) -> list[np.ndarray]:
    """The (T_i, C) float64 arrays of ``values``: (n, T), (n, T, C) numbers or a list of (T_i,) / (T_i, C)."""
    array = None if isinstance(values, (list, tuple)) else np.asarray(values)
    if array is not None and array.dtype != object and (array.ndim not in (2, 3) or array.dtype.kind not in "biuf"):
        raise DataError(f"{source}: {key}: must be (n, T) or (n, T, C) real numbers or a list of (T_i,) or "
                        f"(T_i, C) arrays, got shape {array.shape} dtype {array.dtype}.")
    rows = []
    for i, item in enumerate(values if array is None or array.dtype == object else list(array)):
        try:
            row = np.asarray(item, np.float64)
        except (TypeError, ValueError):
            raise DataError(f"{source}: {key}[{i}]: not an array of real numbers.") from None
        row = row[:, None] if row.ndim == 1 else row
        if row.ndim != 2 or not row.shape[0] or not row.shape[1]:
            raise DataError(f"{source}: {key}[{i}]: must be a (T_i,) or (T_i, C) array of ≥ 1 step, got shape "
                            f"{row.shape}.")
        rows.append(row)
    widths = sorted({r.shape[1] for r in rows})
    if len(widths) != 1:
        raise DataError(f"{source}: {key}: every series needs the same channels, got {widths} channels.")
    return rows


def _check_values(rows: list[np.ndarray], key: str, source: str, *, constant: bool) -> None:
    """Refuses a NaN/inf step (a gap) and, with ``constant``, a channel that never changes (nothing to forecast)."""
    for i, row in enumerate(rows):
        bad = np.flatnonzero(~np.isfinite(row).all(axis=1))
        if bad.size:
            raise DataError(f"{source}: {key}[{i}]: NaN or inf at step {int(bad[0])} ({bad.size} steps): a gap; fill "
                            "it, or cut the series there into two rows (two streams).")
        flat = np.flatnonzero(np.ptp(row, axis=0) == 0) if constant and len(row) > 1 else []
        if len(flat):
            raise DataError(f"{source}: {key}[{i}]: channel {int(flat[0])} is constant ({row[0, flat[0]]!r}) over "
                            "its steps: nothing to forecast; drop that channel or that series.")


def _joined(rows: list[np.ndarray], ids: np.ndarray, streams: np.ndarray | None) -> tuple[list[np.ndarray], list[int]]:
    """Each (client, stream)'s rows concatenated in file order, and the index of its first row."""
    keys = [(cid, i if streams is None else str(streams[i])) for i, cid in enumerate(ids)]
    order = list(dict.fromkeys(keys))
    first = [keys.index(k) for k in order]
    return [np.concatenate([rows[i] for i, k in enumerate(keys) if k == key]) for key in order], first


def series_dataset_from_arrays(series: Any, client: Any, split: Any = None, *, exog: Any = None, stream: Any = None,
                               task: Task | None = None, source: str, ragged: str = "pad",
                               length: int | None = None, names: Sequence[str] | None = None,
                               exog_names: Sequence[str] | None = None) -> SequenceDataset:
    """Own ``series`` (module docstring) as a forecasting dataset of ``task`` (default one step ahead of the first
    channel): inputs the series' channels (and ``exog``) minus the last H steps, targets the channel H steps later;
    channels named ``names`` (default ``s0``, ``s1``, …) and ``exog_names`` (default ``exog0``, …)."""
    if ragged not in RAGGED_MODES:
        raise ValueError(f"ragged: expected one of {RAGGED_MODES}, got {ragged!r}.")
    task = Task("forecast", 1) if task is None else task
    if task.kind != "forecast":
        classes = task.kind == "classify"
        raise DataError(f"{source}: --task {task.kind}: the file holds series, no {'classes' if classes else 'targets'}"
                        f"; it forecasts (--task forecast), or give X and y for a "
                        f"{'classifier' if classes else 'regression'}.")
    rows = _channels(series, "series", source)
    n = len(rows)
    _check_client_kinds(client, source)
    named = {"client": np.asarray(client), "split": split, "stream": stream}
    named = {k: None if v is None else np.asarray(v) for k, v in named.items()}
    for key, values in named.items():
        if values is not None and values.shape != (n,):
            raise DataError(f"{source}: {key}: must have shape ({n},) like series, got {values.shape}.")
    _check_values(rows, "series", source, constant=True)
    width = rows[0].shape[1]
    if exog is not None:
        extra = _channels(exog, "exog", source)
        wrong = next((i for i, (r, e) in enumerate(zip(rows, extra)) if len(r) != len(e)), None)
        if len(extra) != n or wrong is not None:
            raise DataError(f"{source}: exog: needs one (T_i, E) array per series with its steps, got "
                            + (f"{len(extra)} for {n} series." if len(extra) != n else
                               f"{len(extra[wrong])} steps for series[{wrong}]'s {len(rows[wrong])}."))
        _check_values(extra, "exog", source, constant=False)
        rows = [np.concatenate([r, e], axis=1) for r, e in zip(rows, extra)]
    ids = np.array([str(c) for c in named["client"]])
    if ids.size and not all(i.strip() for i in ids):
        raise DataError(f"{source}: client: every series needs a non-empty client id.")
    order = list(dict.fromkeys(ids))
    groups = {} if named["split"] is None else _client_groups(ids, order, named["split"], source)
    rows, first = _joined(rows, ids, named["stream"])
    ids = ids[first]
    steps = np.array([len(r) for r in rows])
    if steps.min() != steps.max():
        if ragged == "pad" and length is None:
            raise DataError(f"{source}: series: {steps.min()}–{steps.max()} steps; forecasting needs series of one "
                            "length: cut them to their last shared steps (--ragged crop) or to --length L.")
        keep = int(steps.min()) if length is None else int(length)
        if not 1 <= keep <= steps.min():
            raise DataError(f"{source}: length: must be in [1, {steps.min()}] (the shortest series), got {keep}.")
        run_warnings.warn(f"{source}: series of {steps.min()}–{steps.max()} steps keep their last {keep} steps.",
                          stacklevel=3)
        rows = [r[len(r) - keep:] for r in rows]
    names = (tuple(names) if names is not None else tuple(f"s{k}" for k in range(width))) + (
        tuple(exog_names) if exog_names is not None else tuple(f"exog{k}" for k in range(rows[0].shape[1] - width)))
    target = task.target or names[0]
    if target not in names[:width]:
        raise DataError(f"{source}: --target {target}: no such series channel; its channels are "
                        f"{', '.join(names[:width])} (exogenous inputs are not forecast).")
    horizon, steps = task.horizon, len(rows[0])
    if steps <= horizon + 1:
        raise DataError(f"{source}: --horizon {horizon}: the series have {steps} steps; a forecast {horizon} steps "
                        f"ahead needs more than {horizon + 1} (use a shorter --horizon or longer series).")
    channel = names.index(target)
    clients = {}
    for cid in order:
        mine = np.stack([r for r, c in zip(rows, ids) if c == cid])
        clients[cid] = ClientSequences(mine[:, :-horizon].astype(np.float32), mine[:, horizon:, channel])
    return SequenceDataset(clients, 1, names, (f"{target}(t+{horizon})",), source, groups=groups,
                           task=dataclasses.replace(task, target=target))


def load_series_npz(path: str | Path, *, task: Task | None = None, ragged: str = "pad",
                    length: int | None = None) -> SequenceDataset:
    """An ``.npz`` of own series (module docstring) as forecasting data (:func:`series_dataset_from_arrays`)."""
    arrays = npz_arrays(path, SERIES_KEYS)
    path = Path(path).expanduser()
    if "series" not in arrays:
        raise DataError(f"npz:{path}: holds no series array (X and y: a classifier's or a regression's data).")
    return series_dataset_from_arrays(arrays["series"], arrays["client"], arrays.get("split"), exog=arrays.get("exog"),
                                      stream=arrays.get("stream"), task=task, source=f"npz:{path}", ragged=ragged,
                                      length=length)



def load_series_csv(path: str | Path, *, task: Task | None = None, ragged: str = "pad",
                    length: int | None = None) -> SequenceDataset:
    """A CSV file of own series (module docstring) as forecasting data (:func:`series_dataset_from_arrays`); a
    one-line :class:`DataError` for a missing or empty file, a missing ``client`` column, no channel column, a row of
    another width, a cell that is not a number, or a client with two splits."""
    path = Path(path).expanduser()
    source = f"csv:{path}"
    if not path.is_file():
        raise DataError(f"{source}: no such file.")
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        lines = [(reader.line_num, row) for row in reader if any(cell.strip() for cell in row)]
    if len(lines) < 2:
        raise DataError(f"{source}: needs a header row and at least one row of steps.")
    header = [h.strip() for h in lines[0][1]]
    if len(set(header)) != len(header) or "" in header:
        raise DataError(f"{source}: header: column names must be non-empty and distinct, got {header}.")
    if "client" not in header:
        raise DataError(f"{source}: header: needs a client column (who holds each step), got {header}.")
    exog = [h for h in header if h.startswith(EXOG_PREFIX)]
    channels = [h for h in header if h not in CSV_META and h not in exog]
    if not channels:
        raise DataError(f"{source}: header: no channel column (every column but {', '.join(CSV_META)} and "
                        f"{EXOG_PREFIX}… is a channel forecast), got {header}.")
    columns = {h: [] for h in header}
    lines = lines[1:]
    for number, row in lines:
        if len(row) != len(header):
            raise DataError(f"{source}: line {number}: {len(row)} fields, the header has {len(header)}.")
        for h, cell in zip(header, row):
            columns[h].append(cell.strip())
    numbers = [number for number, _ in lines]
    values = {h: _numbers(columns[h], numbers, h, source) for h in channels + exog}
    keys = list(zip(columns["client"], columns["stream"] if "stream" in columns else [""] * len(lines)))
    rows_of: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(keys):
        rows_of.setdefault(key, []).append(i)
    order, picks = list(rows_of), list(rows_of.values())
    split = None
    if "split" in columns:
        splits: dict[str, set[str]] = {}
        for (client, _), rows in rows_of.items():
            splits.setdefault(client, set()).update(columns["split"][i] for i in rows)
        wrong = next((c for c, groups in splits.items() if len(groups) != 1), None)
        if wrong is not None:
            raise DataError(f"{source}: split: client {wrong!r} has rows in {sorted(splits[wrong])}; give each "
                            "client one split.")
        split = [next(iter(splits[c])) for c, _ in order]
    return series_dataset_from_arrays([_stacked(values, channels, rows) for rows in picks], [c for c, _ in order],
                                      split, exog=[_stacked(values, exog, rows) for rows in picks] if exog else None,
                                      task=task, source=source, ragged=ragged, length=length, names=channels,
                                      exog_names=exog)


def _stacked(values: dict[str, np.ndarray], names: list[str], rows: list[int]) -> np.ndarray:
    """The (steps, channels) array of the columns ``names`` at the rows ``rows``."""
    return np.stack([values[h][rows] for h in names], axis=1)


def _numbers(cells: list[str], lines: list[int], column: str, source: str) -> np.ndarray:
    """A CSV column (its cells on file ``lines``) as float64; an empty cell is NaN: a gap, refused with its step."""
    out = np.empty(len(cells))
    for i, (cell, line) in enumerate(zip(cells, lines)):
        try:
            out[i] = float(cell) if cell else np.nan
        except ValueError:
            raise DataError(f"{source}: line {line}, column {column!r}: {cell!r} is not a number.") from None
    return out
