"""The UEA/UCR time-series classification archive's ``.ts`` format as a data source.

``ts:DIR/NAME`` reads ``DIR/NAME_TRAIN.ts`` and ``DIR/NAME_TEST.ts`` (the layout of
timeseriesclassification.com and of the ``aeon`` package's bundled data sets). A file is a
header of ``@key value`` lines (``#`` lines are comments) — ``@problemName``,
``@timeStamps``, ``@missing``, ``@univariate``, ``@dimensions``, ``@equalLength``,
``@seriesLength``, ``@classLabel true LABEL…`` — then ``@data`` and one case per line: its
dimensions separated by ``:``, each a comma-separated series, the class label last; a
regression problem (``@targetlabel true``: Covid3Month, CardanoSentiment) ends each case with
its real target instead, and becomes a ``regress`` dataset.
Multivariate cases (one (T_i, F) sequence each), unequal lengths between cases and missing
values (``?`` or ``NaN``) are read; a case whose dimensions differ in length is refused.

The TRAIN file's cases are the training client ``train``, the TEST file's the test client
``test`` (the ``npz`` split reads these groups); a partitioner
(:mod:`tff_esn.data.partition`) spreads the training cases over many clients. Class labels
are strings mapped to 0…K−1 in the order of the TRAIN file's ``@classLabel`` list (else
sorted) and kept as the dataset's ``label_names``. The arrays go through
:func:`tff_esn.data.sequences.dataset_from_arrays`, the builder and validation of ``npz``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from tff_esn.data.errors import DataError, MissingDataError
from tff_esn.data.sequences import SequenceDataset, dataset_from_arrays

MISSING_MODES = ("refuse", "interpolate")
"""What a missing value (``?``/``NaN``) does: a :class:`DataError` (default), or linear
interpolation over time within its dimension (the nearest value at either end)."""


@dataclasses.dataclass(frozen=True)
class TsFile:
    """One parsed ``.ts`` file: (T_i, F) ``sequences`` (``NaN`` where a value is missing),
    string ``labels`` and the header's ``class_labels`` (``None`` when it lists none);
    ``regression`` when the header declares ``@targetlabel true`` (the labels are real targets)."""

    sequences: list[np.ndarray]
    labels: list[str]
    class_labels: tuple[str, ...] | None
    regression: bool = False


def _header(line: str, headers: dict[str, str], path: Path, number: int) -> None:
    key, _, value = line[1:].partition(" ")
    key = key.lower()
    if key == "timestamps" and value.strip().lower() == "true":
        raise DataError(f"{path}:{number}: @timeStamps true: time-stamped series are not supported; "
                        "export the series without time stamps.")
    headers[key] = value.strip()


def _case(line: str, path: Path, number: int) -> tuple[np.ndarray, str]:
    """A data line's (T, F) values (``NaN`` for ``?``) and its label."""
    *dims, label = line.split(":")
    label = label.strip()
    if not dims or not label:
        raise DataError(f"{path}:{number}: expected dimensions separated by ':' and a class label last, got "
                        f"{line[:60]!r}.")
    series = []
    for d, text in enumerate(dims):
        try:
            values = np.array(text.replace("?", "nan").split(","), dtype=np.float64)
        except ValueError as err:
            raise DataError(f"{path}:{number}: dimension {d}: not comma-separated numbers ({err}).") from None
        series.append(values)
    steps = sorted({s.size for s in series})
    if len(steps) != 1:
        raise DataError(f"{path}:{number}: dimensions of one case have different lengths {steps}; "
                        "every dimension needs one value per time step.")
    return np.stack(series, axis=1), label


def read_ts(path: str | Path) -> TsFile:
    """Parses one ``.ts`` file (module docstring).

    Raises:
        MissingDataError: the file does not exist.
        DataError: one line naming the file, the line number and what is wrong (no
            ``@data``, no class labels, time stamps, a case that disagrees with the header's
            ``@dimensions``/``@univariate`` or with the other cases, a label outside
            ``@classLabel``'s list, text that is no number).
    """
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(f"{path}: .ts file does not exist.")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable UTF-8 text file ({err}).") from None
    headers: dict[str, str] = {}
    sequences, labels = [], []
    data = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not data:
            if not line.startswith("@"):
                raise DataError(f"{path}:{number}: expected a @header line or @data before the cases, got "
                                f"{line[:60]!r}.")
            if line.lower() == "@data":
                data = True
            else:
                _header(line, headers, path, number)
            continue
        x, label = _case(line, path, number)
        sequences.append(x)
        labels.append(label)
    if not data:
        raise DataError(f"{path}: no @data line; not a .ts file.")
    if not sequences:
        raise DataError(f"{path}: @data holds no cases.")
    regression = headers.get("targetlabel", "").lower().startswith("true")
    declared = headers.get("classlabel", "").split()
    if not regression and (not declared or declared[0].lower() != "true"):
        raise DataError(f"{path}: @classLabel: the file declares no class labels (expected '@classLabel true "
                        "LABEL ...', or '@targetlabel true' for real targets); a classifier needs them.")
    class_labels = None if regression else tuple(declared[1:]) or None
    features = sorted({x.shape[1] for x in sequences})
    if len(features) != 1:
        raise DataError(f"{path}: cases have different numbers of dimensions {features}.")
    dims = headers.get("dimensions")
    univariate = headers.get("univariate", "").lower() == "true"
    if (dims is not None and dims.isdigit() and int(dims) != features[0]) or (univariate and features[0] != 1):
        raise DataError(f"{path}: the header declares {'1 dimension' if univariate else f'{dims} dimensions'}, "
                        f"the cases have {features[0]}.")
    if class_labels is not None:
        unknown = sorted(set(labels) - set(class_labels))
        if unknown:
            raise DataError(f"{path}: class label(s) {unknown[:5]} are not in @classLabel {list(class_labels)}.")
    if regression:
        try:
            [float(label) for label in labels]
        except ValueError as err:
            raise DataError(f"{path}: @targetlabel true: a case's target is not a number ({err}).") from None
    return TsFile(sequences, labels, class_labels, regression)


def _interpolate(x: np.ndarray) -> np.ndarray:
    """``x`` (T, F) with each dimension's missing values linearly interpolated over time (the
    nearest present value at either end); a dimension with no value at all is refused by the caller."""
    out = x.copy()
    steps = np.arange(x.shape[0])
    for f in np.flatnonzero(np.isnan(x).any(axis=0)):
        present = ~np.isnan(x[:, f])
        out[:, f] = np.interp(steps, steps[present], x[present, f])
    return out


def _fill_missing(parsed: TsFile, path: Path, missing: str) -> list[np.ndarray]:
    holes = [i for i, x in enumerate(parsed.sequences) if np.isnan(x).any()]
    if not holes:
        return parsed.sequences
    if missing == "refuse":
        raise DataError(f"{path}: case {holes[0]} (and {len(holes) - 1} more) has missing values ('?' or NaN); "
                        "impute them explicitly with missing='interpolate' (--missing interpolate).")
    empty = [i for i in holes if np.isnan(parsed.sequences[i]).all(axis=0).any()]
    if empty:
        raise DataError(f"{path}: case {empty[0]} has a dimension with no value at all; nothing to interpolate.")
    sequences = list(parsed.sequences)
    for i in holes:
        sequences[i] = _interpolate(sequences[i])
    return sequences


def ts_files(stem: str | Path) -> tuple[Path, Path]:
    """``(DIR/NAME_TRAIN.ts, DIR/NAME_TEST.ts)`` of ``stem`` = ``DIR/NAME``."""
    stem = Path(stem)
    return stem.with_name(f"{stem.name}_TRAIN.ts"), stem.with_name(f"{stem.name}_TEST.ts")


def load_ts(stem: str | Path, *, missing: str = "refuse", ragged: str = "pad",
            length: int | None = None) -> SequenceDataset:
    """The UEA/UCR problem ``stem`` = ``DIR/NAME`` (module docstring) as a :class:`SequenceDataset`.

    Args:
        stem: ``DIR/NAME``; ``DIR/NAME_TRAIN.ts`` and ``DIR/NAME_TEST.ts`` are read.
        missing: one of :data:`MISSING_MODES`.
        ragged, length: as :func:`tff_esn.data.sequences.load_npz`.

    Returns:
        Clients ``train`` (group ``train``) and ``test`` (group ``test``); ``label_names``
        the class labels, ``source`` ``"ts:DIR/NAME"``.

    Raises:
        MissingDataError: a file does not exist.
        DataError: one line naming the file and what is wrong (:func:`read_ts`; missing values
            under ``missing="refuse"``; the two files disagree on dimensions or class labels).
        ValueError: an unknown ``missing`` or ``ragged`` mode.
    """
    if missing not in MISSING_MODES:
        raise ValueError(f"missing: expected one of {MISSING_MODES}, got {missing!r}.")
    train_path, test_path = ts_files(stem)
    train, test = read_ts(train_path), read_ts(test_path)
    if train.sequences[0].shape[1] != test.sequences[0].shape[1]:
        raise DataError(f"{test_path}: {test.sequences[0].shape[1]} dimensions, but {train_path.name} has "
                        f"{train.sequences[0].shape[1]}.")
    if train.regression != test.regression:
        raise DataError(f"{test_path}: {'real' if test.regression else 'class'} targets, but {train_path.name} holds "
                        f"{'real' if train.regression else 'class'} targets.")
    groups = np.array(["train"] * len(train.labels) + ["test"] * len(test.labels))
    sequences = _fill_missing(train, train_path, missing) + _fill_missing(test, test_path, missing)
    if train.regression:
        y = np.array([float(label) for label in train.labels + test.labels])
        return dataset_from_arrays(sequences, y, groups, groups, source=f"ts:{stem}", ragged=ragged, length=length,
                                   label_names=("target",))
    names = train.class_labels or tuple(sorted(set(train.labels)))
    if test.class_labels is not None and set(test.class_labels) != set(names):
        raise DataError(f"{test_path}: @classLabel {list(test.class_labels)} differs from {train_path.name}'s "
                        f"{list(names)}.")
    unknown = sorted(set(test.labels) - set(names))
    if unknown:
        raise DataError(f"{test_path}: class label(s) {unknown[:5]} do not occur in {train_path.name}.")
    if len(names) < 2:
        raise DataError(f"{train_path}: a single class {list(names)}; a classifier needs at least 2.")
    code = {name: i for i, name in enumerate(names)}
    y = np.array([code[label] for label in train.labels + test.labels], np.int64)
    return dataset_from_arrays(sequences, y, groups, groups, source=f"ts:{stem}", ragged=ragged, length=length,
                               label_names=names)
