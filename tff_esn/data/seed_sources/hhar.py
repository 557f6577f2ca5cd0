"""HHAR (Heterogeneity Activity Recognition): the CSV format, its loader, per-device recordings.

Four CSVs (``Phones_/Watch_`` accelerometer/gyroscope) with ``Index, Arrival_Time, Creation_Time, x, y, z,
User, Model, Device, gt``; ``null`` labels are dropped. :func:`device_recordings` builds one recording per
(user, model): the copy with fewer gaps, accelerometer and gyroscope joined by nearest time.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tff_esn.data.errors import DataError, MissingDataError

if TYPE_CHECKING:
    import pandas as pd  # imported where a CSV is read: loading other sources does not pay for pandas

COLUMNS = ("Index", "Arrival_Time", "Creation_Time", "x", "y", "z", "User", "Model", "Device", "gt")
FILES = {("phone", "acc"): "Phones_accelerometer.csv", ("phone", "gyro"): "Phones_gyroscope.csv",
         ("watch", "acc"): "Watch_accelerometer.csv", ("watch", "gyro"): "Watch_gyroscope.csv"}
USERS = tuple("abcdefghi")
ACTIVITIES = ("bike", "sit", "stand", "walk", "stairsup", "stairsdown")
NULL_LABEL = "null"
PHONE_MODELS = ("nexus4", "s3", "s3mini", "samsungold")
WATCH_MODELS = ("gear", "lgwatch")
GAP_S = 1.0
"""A pause between two samples longer than this (seconds) is a gap: sequences never span one."""

_DTYPES = {"Index": np.int64, "Arrival_Time": np.int64, "Creation_Time": np.int64, "x": np.float64,
           "y": np.float64, "z": np.float64, "User": "category", "Model": "category", "Device": "category",
           "gt": "category"}


def read_sensor_csv(path: str | Path) -> pd.DataFrame:
    """One HHAR CSV (``keep_default_na=False``) with its columns, dtypes and activity labels checked."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise MissingDataError(f"HHAR file {path} does not exist.")
    try:
        header = pd.read_csv(path, nrows=0).columns
    except (ValueError, OSError, pd.errors.ParserError) as err:
        raise DataError(f"{path}: header: not a CSV header ({type(err).__name__}: {err}).") from None
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing} in the header; expected {list(COLUMNS)}, "
                        f"found {list(header)}.")
    try:
        frame = pd.read_csv(path, usecols=list(COLUMNS), dtype=_DTYPES, keep_default_na=False)
    except (ValueError, TypeError, OverflowError, pd.errors.ParserError) as err:
        raise DataError(f"{path}: {_first_bad_cell(path) or f'rows: {type(err).__name__}: {err}'}") from None
    frame = frame[list(COLUMNS)]
    unknown = sorted(set(frame["gt"].cat.categories) - {*ACTIVITIES, NULL_LABEL})
    if unknown:
        raise DataError(f"{path}: gt: unknown activity label(s) {unknown[:5]}; expected {ACTIVITIES} or "
                        f"{NULL_LABEL!r}.")
    return frame


def _first_bad_cell(path: Path) -> str | None:
    """``"COLUMN: row R holds 'V', not an integer/a number"`` for the first cell that does not parse."""
    import pandas as pd

    try:
        text = pd.read_csv(path, usecols=list(COLUMNS), dtype=str, keep_default_na=False)
    except (ValueError, TypeError, pd.errors.ParserError):
        return None
    for column, dtype in _DTYPES.items():
        if dtype == "category":
            continue
        cells = text[column]
        values = pd.to_numeric(cells, errors="coerce")
        ok = values.notna() | cells.str.strip().str.lower().isin(("nan", "inf", "-inf", "+inf"))
        if dtype == np.int64:
            ok &= (values == values.round()) & (values.abs() < 2.0 ** 63)
        if not ok.all():
            row = int(np.flatnonzero(~ok.to_numpy())[0])
            kind = "an integer" if dtype == np.int64 else "a number"
            return f"{column}: row {row + 1} holds {cells.iloc[row][:20]!r}, not {kind}."
    return None


def read_hhar(directory: str | Path, devices: tuple[str, ...] = ("phone", "watch")) -> dict[tuple[str, str], pd.DataFrame]:
    """``{(device kind, sensor): frame}`` for the four CSVs (or the phone/watch pair asked for)."""
    directory = Path(directory)
    return {key: read_sensor_csv(directory / name) for key, name in FILES.items() if key[0] in devices}


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceRecording:
    """One user's recording on one model's copy ``device`` (e.g. ``nexus4_2``): ``t`` (n,) seconds from its
    start, ``values`` (n, 6) accelerometer then gyroscope x, y, z, ``labels`` (n,) indices into :data:`ACTIVITIES`."""

    device: str
    t: np.ndarray
    values: np.ndarray
    labels: np.ndarray

    def segments(self) -> list[slice]:
        """Gap-free stretches (no pause longer than :data:`GAP_S`)."""
        cuts = np.flatnonzero(np.diff(self.t) > GAP_S) + 1
        edges = np.concatenate([[0], cuts, [self.t.size]])
        return [slice(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _groups(frame: pd.DataFrame, columns: tuple[str, ...]) -> dict[tuple[str, ...], pd.DataFrame]:
    """Rows of ``frame`` per combination of the categorical ``columns`` (numpy on the category codes)."""
    import pandas as pd

    key = np.zeros(len(frame), dtype=np.int64)
    for c in columns:
        col = frame[c] if isinstance(frame[c].dtype, pd.CategoricalDtype) else frame[c].astype("category")
        key = key * (len(col.cat.categories) + 1) + col.cat.codes.to_numpy()
    order = np.argsort(key, kind="stable")
    values, starts = np.unique(key[order], return_index=True)
    bounds = np.append(starts, len(order))
    out = {}
    for i in range(len(values)):
        rows = frame.iloc[order[bounds[i]:bounds[i + 1]]]
        out[tuple(str(rows[c].iloc[0]) for c in columns)] = rows
    return out


def device_recordings(acc: pd.DataFrame, gyro: pd.DataFrame, *, models=None,
                      users=None) -> dict[tuple[str, str], DeviceRecording]:
    """``{(user, model): DeviceRecording}``: the copy with fewer accelerometer gaps, gyroscope joined by nearest
    ``Creation_Time`` (within two median periods), ``null`` and unjoined samples dropped."""
    import pandas as pd

    runs = {}
    keep = (acc["gt"] != NULL_LABEL).to_numpy()
    if models is not None:
        keep &= acc["Model"].isin(models).to_numpy()
    if users is not None:
        keep &= acc["User"].isin(users).to_numpy()
    acc = acc[keep]
    gyro_groups = _groups(gyro, ("User", "Device"))
    for (user, model), rows in _groups(acc, ("User", "Model")).items():
        candidates = []
        for (device,), dev_rows in _groups(rows, ("Device",)).items():
            g = gyro_groups.get((user, device))
            if g is None or len(g) < 2:
                continue
            t = dev_rows["Creation_Time"].to_numpy()
            gaps = int(np.sum(np.diff(np.sort(t)) > GAP_S * 1e9))
            candidates.append((gaps, -len(t), str(device), dev_rows, g))
        if not candidates:
            continue
        _, _, device, a, g = min(candidates, key=lambda c: c[:3])
        a = a.sort_values("Creation_Time")
        g = g.sort_values("Creation_Time")[["Creation_Time", "x", "y", "z"]]
        tolerance = int(2 * np.median(np.diff(g["Creation_Time"].to_numpy())))
        joined = pd.merge_asof(a[["Creation_Time", "x", "y", "z", "gt"]], g, on="Creation_Time",
                               direction="nearest", tolerance=max(tolerance, 1), suffixes=("", "_g"))
        joined = joined.dropna(subset=["x_g"])
        values = joined[["x", "y", "z", "x_g", "y_g", "z_g"]].to_numpy(np.float64)
        finite = np.all(np.isfinite(values), axis=1)
        joined, values = joined[finite], values[finite]
        if len(joined) < 2:
            continue
        labels = pd.Categorical(joined["gt"], categories=ACTIVITIES)
        t_ns = joined["Creation_Time"].to_numpy(np.int64)
        runs[(str(user), str(model))] = DeviceRecording(device, (t_ns - t_ns[0]) / 1e9, values,
                                                        labels.codes.astype(np.int64))
    return runs
