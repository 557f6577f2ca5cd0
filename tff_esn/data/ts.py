"""The UEA/UCR time-series classification archive's ``.ts`` format as a data source.

``ts:DIR/NAME`` reads ``NAME_TRAIN.ts`` (client ``train``) and ``NAME_TEST.ts`` (client ``test``):
multivariate, unequal lengths and missing values; ``@targetlabel true`` is a regression. Class labels map
to 0…K−1 in ``@classLabel`` order and become ``label_names``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tff_esn.data.errors import DataError, MissingDataError
from tff_esn.data.layout import DataLayout
from tff_esn.data.sequences import SequenceDataset, dataset_from_arrays

MISSING_MODES = ("refuse", "interpolate")
"""What a missing value (``?``/``NaN``) does: a :class:`DataError` (default), or linear
interpolation over time within its dimension (the nearest value at either end)."""


def _header(line: str, headers: dict[str, str], path: Path, number: int) -> None:
    key, _, value = line[1:].partition(" ")
    key = key.lower()
    if key == "timestamps" and value.strip().lower() == "true":
        raise DataError(f"{path}:{number}: @timeStamps true: time-stamped series are not supported; "
                        "export the series without time stamps.")
    headers[key] = value.strip()


def _case(line: str, path: Path, number: int) -> tuple[np.ndarray, str]:
    """A data line's (T, F) values (``NaN`` for ``?``) and its label, the line's shape checked by :func:`scan_ts`."""
    *dims, label = line.split(":")
    series = []
    for d, text in enumerate(dims):
        try:
            series.append(np.array(text.replace("?", "nan").split(","), dtype=np.float64))
        except ValueError as err:
            raise DataError(f"{path}:{number}: dimension {d}: not comma-separated numbers ({err}).") from None
    return np.stack(series, axis=1), label.strip()


def _lines(path: Path) -> Iterator[tuple[int, str, bool]]:
    """``(line number, stripped line, is case)`` of every content line of ``path``, streamed."""
    if not path.is_file():
        raise MissingDataError(f"{path}: .ts file does not exist.")
    data = False
    try:
        with path.open(encoding="utf-8") as fh:
            for number, raw in enumerate(fh, start=1):
                line = raw.strip()
                if not line or line.startswith("#"):
                    continue
                if not data:
                    if not line.startswith("@"):
                        raise DataError(f"{path}:{number}: expected a @header line or @data before the cases, got "
                                        f"{line[:60]!r}.")
                    data = line.lower() == "@data"
                yield number, line, data and line.lower() != "@data"
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable UTF-8 text file ({err}).") from None
    if not data:
        raise DataError(f"{path}: no @data line; not a .ts file.")


@dataclasses.dataclass(frozen=True)
class TsScan:
    """A streaming pass's findings: cases' ``lengths`` and ``labels``, ``dimensions``, ``class_labels``, real targets."""

    lengths: np.ndarray
    labels: list[str]
    dimensions: int
    class_labels: tuple[str, ...] | None
    stored_bytes: int
    regression: bool = False


def scan_ts(path: str | Path) -> TsScan:
    """One streaming pass over ``path``: steps per case, dimensions, labels, header checked (:func:`_check_header`)."""
    path = Path(path)
    headers: dict[str, str] = {}
    lengths, labels, dims = [], [], set()
    for number, line, case in _lines(path):
        if not case:
            if line.lower() != "@data":
                _header(line, headers, path, number)
            continue
        *parts, label = line.split(":")
        label = label.strip()
        steps = sorted({part.count(",") + 1 for part in parts})
        if len(steps) != 1 or not label:
            raise DataError(f"{path}:{number}: " + (
                f"dimensions of one case have different lengths {steps}; every dimension needs one value per time "
                "step." if len(steps) > 1 else
                f"expected dimensions separated by ':' and a class label last, got {line[:60]!r}."))
        lengths.append(steps[0])
        labels.append(label)
        dims.add(len(parts))
    if not labels:
        raise DataError(f"{path}: @data holds no cases.")
    lengths = np.array(lengths, np.int64)
    class_labels, regression = _check_header(headers, lengths, sorted(dims), labels, path)
    return TsScan(lengths, labels, next(iter(dims)), class_labels, 8 * int(lengths.sum()) * next(iter(dims)),
                  regression)


def _check_header(headers: dict[str, str], lengths: np.ndarray, dims: list[int], labels: list[str],
                  path: Path) -> tuple[tuple[str, ...] | None, bool]:
    """Header class labels and real-target flag, after checking the header's ``@`` lines against the cases."""
    regression = headers.get("targetlabel", "").lower().startswith("true")
    declared = headers.get("classlabel", "").split()
    class_labels = None if regression else tuple(declared[1:]) or None
    declared_dims, series = headers.get("dimensions"), headers.get("serieslength")
    univariate = headers.get("univariate", "").lower() == "true"
    wrong = np.flatnonzero(lengths != int(series))[:1] if series is not None and series.isdigit() else [0]
    _refuse(path, (
        (not regression and (not declared or declared[0].lower() != "true"),
         "@classLabel: the file declares no class labels (expected '@classLabel true LABEL ...', or '@targetlabel "
         "true' for real targets); a classifier needs them."),
        (len(dims) != 1, lambda: f"cases have different numbers of dimensions {dims}."),
        ((declared_dims is not None and declared_dims.isdigit() and int(declared_dims) != dims[0])
         or (univariate and dims[0] != 1),
         lambda: f"the header declares {'1 dimension' if univariate else f'{declared_dims} dimensions'}, the cases "
                 f"have {dims[0]}."),
        (headers.get("equallength", "").lower() == "true" and lengths.min() != lengths.max(),
         lambda: f"@equalLength true, but the cases have {lengths.min()}–{lengths.max()} steps; fix the header "
                 "(@equalLength false) or the cases."),
        (series is not None and len(wrong),
         lambda: f"@seriesLength {series}, but case {wrong[0]} has {lengths[wrong[0]]} steps (the cases have "
                 f"{lengths.min()}–{lengths.max()}); fix the header or the cases."),
        (class_labels is not None and not set(labels) <= set(class_labels),
         lambda: f"class label(s) {sorted(set(labels) - set(class_labels))[:5]} are not in @classLabel "
                 f"{list(class_labels)}."),
        (regression and not all(_is_number(label) for label in labels),
         lambda: f"@targetlabel true: a case's target is not a number "
                 f"({next(label for label in labels if not _is_number(label))!r})."),
    ))
    return class_labels, regression


def _refuse(path: Path, checks) -> None:
    """A :class:`DataError` naming ``path`` and the message of the first failed ``(failed, message)``."""
    message = next((m for failed, m in checks if failed), None)
    if message is not None:
        raise DataError(f"{path}: {message() if callable(message) else message}")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_cases(path: str | Path) -> list[np.ndarray]:
    """The (T_i, F) cases of a checked ``.ts`` file (NaN if missing); malformed: a :class:`DataError` with the line."""
    path = Path(path)
    return [_case(line, path, number)[0] for number, line, case in _lines(path) if case]


def _interpolate(x: np.ndarray) -> np.ndarray:
    """``x`` (T, F) with missing values linearly interpolated per dimension (nearest value at the ends)."""
    out = x.copy()
    steps = np.arange(x.shape[0])
    for f in np.flatnonzero(np.isnan(x).any(axis=0)):
        present = ~np.isnan(x[:, f])
        out[:, f] = np.interp(steps, steps[present], x[present, f])
    return out


def _fill_missing(sequences: list[np.ndarray], path: Path, missing: str) -> list[np.ndarray]:
    holes = [i for i, x in enumerate(sequences) if np.isnan(x).any()]
    empty = [i for i in holes if np.isnan(sequences[i]).all(axis=0).any()]
    _refuse(path, ((holes and missing == "refuse",
                    lambda: f"case {holes[0]} (and {len(holes) - 1} more) has missing values ('?' or NaN); impute "
                            "them explicitly with missing='interpolate' (--missing interpolate)."),
                   (empty, lambda: f"case {empty[0]} has a dimension with no value at all; nothing to interpolate.")))
    sequences = list(sequences)
    for i in holes:
        sequences[i] = _interpolate(sequences[i])
    return sequences


def _label_names(train: TsScan, test: TsScan, train_path: Path, test_path: Path) -> tuple[str, ...]:
    """Class names (TRAIN's @classLabel, else sorted labels; ``()`` for real), checked against TEST's."""
    kind = {True: "real", False: "class"}
    names = () if train.regression else train.class_labels or tuple(sorted(set(train.labels)))
    unknown = sorted(set(test.labels) - set(names))
    _refuse(test_path, (
        (train.dimensions != test.dimensions,
         f"{test.dimensions} dimensions, but {train_path.name} has {train.dimensions}."),
        (train.regression != test.regression,
         f"{kind[test.regression]} targets, but {train_path.name} holds {kind[train.regression]} targets."),
        (not train.regression and test.class_labels is not None and set(test.class_labels) != set(names),
         lambda: f"@classLabel {list(test.class_labels)} differs from {train_path.name}'s {list(names)}."),
        (not train.regression and unknown, f"class label(s) {unknown[:5]} do not occur in {train_path.name}."),
    ))
    _refuse(train_path, ((not train.regression and len(names) < 2,
                          f"a single class {list(names)}; a classifier needs at least 2."),))
    return names


def _scans(stem: str | Path) -> tuple[tuple[Path, Path], tuple[TsScan, TsScan], tuple[str, ...]]:
    """``DIR/NAME``'s two files, their streaming passes (:func:`scan_ts`) and the class names."""
    paths = ts_files(stem)
    scans = scan_ts(paths[0]), scan_ts(paths[1])
    return paths, scans, _label_names(*scans, *paths)


def ts_layout(stem: str | Path) -> DataLayout:
    """The ``DataLayout`` of ``DIR/NAME``'s two files (one block each) from :func:`scan_ts`, labels checked."""
    _, scans, _ = _scans(stem)
    return DataLayout(f"ts:{stem}", tuple(s.lengths for s in scans), scans[0].dimensions,
                      sum(s.stored_bytes for s in scans))


def ts_files(stem: str | Path) -> tuple[Path, Path]:
    """``(DIR/NAME_TRAIN.ts, DIR/NAME_TEST.ts)`` of ``stem`` = ``DIR/NAME``."""
    stem = Path(stem)
    return stem.with_name(f"{stem.name}_TRAIN.ts"), stem.with_name(f"{stem.name}_TEST.ts")


def load_ts(stem: str | Path, *, missing: str = "refuse", ragged: str = "pad",
            length: int | None = None) -> SequenceDataset:
    """UEA/UCR problem ``DIR/NAME`` as a :class:`SequenceDataset` (clients ``train``, ``test``); ``missing``: :data:`MISSING_MODES`."""
    if missing not in MISSING_MODES:
        raise ValueError(f"missing: expected one of {MISSING_MODES}, got {missing!r}.")
    (train_path, test_path), scans, names = _scans(stem)
    train, test = scans
    sequences = [x for path in (train_path, test_path) for x in _fill_missing(_read_cases(path), path, missing)]
    groups = np.array(["train"] * len(train.labels) + ["test"] * len(test.labels))
    if train.regression:
        y = np.array([float(label) for label in train.labels + test.labels])
        return dataset_from_arrays(sequences, y, groups, groups, source=f"ts:{stem}", ragged=ragged, length=length,
                                   label_names=("target",))
    code = {name: i for i, name in enumerate(names)}
    y = np.array([code[label] for label in train.labels + test.labels], np.int64)
    return dataset_from_arrays(sequences, y, groups, groups, source=f"ts:{stem}", ragged=ragged, length=length,
                               label_names=names)
