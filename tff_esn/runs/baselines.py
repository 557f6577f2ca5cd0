"""Reference models that every reported result is compared with, on the same split.

The training majority class and logistic regression on standardised inputs (per-step inputs, or
per-sequence mean, std, min, max and last value), class-balanced and plain; ``reference`` names the
stronger of the two on the run's selection objective; real-valued tasks have :func:`real_baselines`;
:func:`ridge_on_features` is the seeds' ridge on the same rows.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from tff_esn.common import streams
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.common.metrics import classification_metrics, regression_metrics
from tff_esn.esn import states_numpy
from tff_esn.esn.ridge import RidgeStats, one_hot, predict

GROUPS = ("val", "test")
MAX_TRAIN_ROWS = 200_000
MAX_WINDOW = 200
"""Most lags of the lagged-input ridge baseline of a real-valued task."""
LAG_GRID = (1, 2, 3, 5, 10, 20, 50, 100, 200)
"""Lag counts the linear autoregression (lagged-input ridge) chooses from on the validation clients."""
L2_GRID = tuple(10.0 ** k for k in range(-8, 4))
"""λ the lagged-input ridge baseline chooses from on the validation clients."""

_memo: "weakref.WeakKeyDictionary[SequenceDataset, dict[tuple, dict]]" = weakref.WeakKeyDictionary()
_row_memo: "weakref.WeakKeyDictionary[SequenceDataset, dict[tuple, tuple]]" = weakref.WeakKeyDictionary()


def sequence_features(x: np.ndarray, per_step: bool, lengths: np.ndarray | None = None) -> np.ndarray:
    """Logistic-regression inputs of (n, T, F) padded sequences: (n·T, F) rows ``per_step``, else (n, 5F)
    mean, std, min, max, last over ``lengths`` (float64, blocked by :data:`~tff_esn.esn.states_numpy.HARVEST_VALUES`)."""
    x = np.asarray(x)
    if per_step:
        return np.asarray(x, np.float64).reshape(-1, x.shape[2])
    steps = np.full(x.shape[0], x.shape[1], np.int64) if lengths is None else np.asarray(lengths)
    rows = max(1, states_numpy.HARVEST_VALUES // max(1, x.shape[1] * x.shape[2]))
    return np.concatenate([_summary(np.asarray(x[i:i + rows], np.float64), steps[i:i + rows])
                           for i in range(0, max(x.shape[0], 1), rows)])


def _summary(b: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Mean, std, min, max and last value of (rows, T, F) zero-padded sequences over their ``n`` first steps."""
    valid = np.arange(b.shape[1])[None, :, None] < n[:, None, None]
    mean = b.sum(axis=1, keepdims=True) / n[:, None, None]
    centred = np.where(valid, b - mean, 0.0)
    return np.concatenate([mean[:, 0], np.sqrt((centred * centred).sum(axis=1) / n[:, None]),
                           np.where(valid, b, np.inf).min(axis=1), np.where(valid, b, -np.inf).max(axis=1),
                           b[np.arange(b.shape[0]), n - 1]], axis=1)


def _rows(dataset: SequenceDataset, ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Clients ``ids``' rows (:func:`sequence_features`) and labels; summaries memoised per dataset and ids."""
    memo = _row_memo.setdefault(dataset, {})
    key = tuple(ids)
    if key in memo:
        return memo[key]
    pooled = dataset.pooled(ids)
    rows = sequence_features(pooled.x, pooled.per_step, pooled.lengths), pooled.y.reshape(-1)
    if not pooled.per_step:
        for array in rows:
            array.flags.writeable = False
        memo[key] = rows
    return rows


def _training_rows(dataset: SequenceDataset, split: Split,
                   seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training rows (≤ ``MAX_TRAIN_ROWS``, subsampled by ``seed``), labels, and standardising mean and deviation."""
    x_train, y_train = _rows(dataset, split.train)
    if x_train.shape[0] > MAX_TRAIN_ROWS:
        keep = streams.BASELINE_ROWS.generator(seed).choice(
            x_train.shape[0], MAX_TRAIN_ROWS, replace=False)
        x_train, y_train = x_train[keep], y_train[keep]
    return (x_train, y_train, *_scale(x_train))


def _scale(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean and deviation of ``x``'s columns that standardise rows (a constant column's deviation is 1)."""
    std = x.std(axis=0)
    std[std == 0] = 1.0
    return x.mean(axis=0), std


LOGISTIC = {"logistic_regression": "balanced", "logistic_regression_plain": None}
"""The logistic-regression baselines and their ``class_weight``: class-balanced, and plain."""


def baseline_scores(dataset: SequenceDataset, split: Split, *, seed: int = 0, washout: int = 0,
                    objective: str = "accuracy") -> dict[str, dict[str, Any]]:
    """``{"majority", "logistic_regression", "logistic_regression_plain", "reference"}`` metrics on ``split``'s val
    and test clients (real-valued: :func:`real_baselines`), memoised per dataset, split, seed and objective;
    ``reference`` names the stronger logistic regression on ``objective`` (on validation, else test)."""
    if dataset.task.real:
        return real_baselines(dataset, split, washout=washout)
    key = (split.train, split.val, split.test, seed, objective)
    cached = _memo.setdefault(dataset, {})
    if key in cached:
        return cached[key]
    x_train, y_train, mean, std = _training_rows(dataset, split, seed)
    n_classes = dataset.n_classes
    majority = int(np.bincount(y_train, minlength=n_classes).argmax())
    fitted_classes = np.unique(y_train)
    models = {name: LogisticRegression(max_iter=2000, class_weight=weight, random_state=seed)
              for name, weight in LOGISTIC.items()}
    if fitted_classes.size > 1:
        for model in models.values():
            model.fit((x_train - mean) / std, y_train)

    def scores(model: LogisticRegression, x: np.ndarray) -> np.ndarray:
        out = np.full((x.shape[0], n_classes), -np.inf if fitted_classes.size > 1 else 0.0)
        if fitted_classes.size > 1:
            out[:, model.classes_] = model.predict_log_proba((x - mean) / std)
        else:
            out[:, fitted_classes[0]] = 1.0
        out[~np.isfinite(out)] = -1e9
        return out if n_classes > 2 else 1.0 / (1.0 + np.exp(-(out[:, 1] - out[:, 0])))

    inputs = "per-step inputs" if dataset.clients[split.train[0]].per_step else "per-sequence mean/std/min/max/last"
    result: dict[str, dict[str, Any]] = {
        "majority": {"class": majority},
        **{name: {"inputs": inputs, "class_weight": weight or "none"} for name, weight in LOGISTIC.items()},
    }
    for group in GROUPS:
        ids = getattr(split, group)
        if not ids:
            for name in ("majority", *LOGISTIC):
                result[name][group] = None
            continue
        x, y = _rows(dataset, ids)
        constant = np.eye(n_classes)[np.full(y.size, majority)] if n_classes > 2 else np.full(y.size, float(majority))
        result["majority"][group] = classification_metrics(y, constant, n_classes)
        for name, model in models.items():
            result[name][group] = classification_metrics(y, scores(model, x), n_classes)
    on = next((g for g in GROUPS if result["majority"][g] is not None), None)
    stronger = max(LOGISTIC, key=lambda name: -1.0 if on is None else result[name][on][objective])
    result["reference"] = {"objective": objective, "logistic_regression": stronger, "chosen_on": on}
    cached[key] = result
    return result


def ridge_on_features(dataset: SequenceDataset, split: Split, l2s: Sequence[float], *,
                      seed: int = 0) -> dict[str, list[dict[str, Any]] | None]:
    """Per group, metrics of ridge (IncFed eq. 3) on the standardised logistic inputs, one per λ of ``l2s``."""
    x_train, y_train, mean, std = _training_rows(dataset, split, seed)
    stats = RidgeStats.from_states((x_train - mean) / std, one_hot(y_train, dataset.n_classes), bias=True)
    readouts = stats.solve_path(l2s)
    out: dict[str, list[dict[str, Any]] | None] = {}
    for group in GROUPS:
        ids = getattr(split, group)
        if not ids:
            out[group] = None
            continue
        x, y = _rows(dataset, ids)
        out[group] = [classification_metrics(y, predict(w, (x - mean) / std, bias=True), dataset.n_classes)
                      for w in readouts]
    return out


def _lagged(x: np.ndarray, width: int, skip: int) -> np.ndarray:
    """Rows of the ``width`` latest inputs of every step t ≥ ``skip``: (n·(T − skip), width·F)."""
    windows = np.lib.stride_tricks.sliding_window_view(np.asarray(x, np.float64), width, axis=1)
    return windows[:, skip - width + 1:].transpose(0, 1, 3, 2).reshape(-1, width * x.shape[2])


def real_baselines(dataset: SequenceDataset, split: Split, *, washout: int = 0,
                   width: int | None = None) -> dict[str, dict[str, Any]]:
    """Reservoir-free real-valued baselines on val/test: ``training_mean``, ``persistence`` (ŷ(t) = y(t − H)),
    ``lagged_ridge``: a linear autoregression on the latest ``width`` steps' inputs (IncFed eq. 3), its lag count from
    :data:`LAG_GRID` and λ from :data:`L2_GRID` chosen on the validation clients (every lag count scored on the steps
    the widest keeps); per-step scored from ``max(washout, horizon, width − 1)`` (persistence needs a step H back
    inside the sequence: without one it is ``None``, the others score from ``max(washout, width − 1)``, at most the
    shortest sequence's last step)."""
    task = dataset.task
    per_step = dataset.clients[split.train[0]].per_step
    lagged = dataset.shortest > max(washout, task.horizon)
    reach = task.horizon if lagged else 0
    forecast = task.kind == "forecast" and lagged
    limit = max(1, min(MAX_WINDOW, dataset.shortest - reach))
    default = min(max(2, washout + 1) if width is None else width, limit)
    widths = ([w for w in LAG_GRID if w <= limit] or [limit]) if width is None and split.val else [default]
    widths = widths if per_step else [0]

    def start(lags: int) -> int:
        return min(max(washout, reach, lags - 1), dataset.shortest - 1)

    def rows(ids: Sequence[str], lags: int, skip: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        pooled = dataset.pooled(ids)
        if not per_step:
            return sequence_features(pooled.x, False, pooled.lengths), pooled.y, None
        steady = pooled.y[:, skip:].reshape(-1)
        persistence = pooled.y[:, skip - task.horizon:pooled.y.shape[1] - task.horizon].reshape(-1) \
            if forecast else None
        return _lagged(pooled.x, lags, skip), steady, persistence

    def fitted(lags: int, skip: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
        x_train, y_train, _ = rows(split.train, lags, skip)
        mean, std = _scale(x_train)
        readouts = RidgeStats.from_states((x_train - mean) / std, y_train[:, None], bias=True).solve_path(L2_GRID)
        return readouts, mean, std, y_train

    def errors(lags: int, skip: int) -> list[float]:
        readouts, mean, std, _ = fitted(lags, skip)
        x, y, _ = rows(split.val, lags, skip)
        return [float(np.mean((predict(w, (x - mean) / std, bias=True)[:, 0] - y) ** 2)) for w in readouts]

    common = start(max(widths))
    table = [min(errors(lags, common)) for lags in widths] if len(widths) > 1 else None
    width = widths[int(np.argmin(table))] if table else widths[0]
    skip = start(width)
    readouts, mean, std, y_train = fitted(width, skip)
    groups = {group: rows(getattr(split, group), width, skip) if getattr(split, group) else None for group in GROUPS}
    chosen = len(L2_GRID) - 1
    if groups["val"] is not None:
        x, y, _ = groups["val"]
        mse = [float(np.mean((predict(w, (x - mean) / std, bias=True)[:, 0] - y) ** 2)) for w in readouts]
        chosen = max(i for i, e in enumerate(mse) if e == min(mse))
    result: dict[str, dict[str, Any]] = {
        "training_mean": {"value": float(y_train.mean())},
        "persistence": ({"horizon": task.horizon} if forecast else
                        {"horizon": task.horizon, "unavailable": f"the shortest sequence ({dataset.shortest} steps) "
                         f"is not longer than the horizon and washout"} if task.kind == "forecast" else {}),
        "lagged_ridge": {"inputs": f"the latest {width} steps' inputs" if per_step
                         else "per-sequence mean/std/min/max/last", "lags": width, "l2": L2_GRID[chosen],
                         "steps_from": skip,
                         "lag_selection": None if table is None else {"values": widths, "val_mse": table,
                                                                      "scored_from": common}},
    }
    for group, held in groups.items():
        if held is None:
            for name in result:
                result[name][group] = None
            continue
        x, y, persistence = held
        result["training_mean"][group] = regression_metrics(y, np.full(y.size, y_train.mean()))
        result["persistence"][group] = None if persistence is None else regression_metrics(y, persistence)
        result["lagged_ridge"][group] = regression_metrics(y, predict(readouts[chosen], (x - mean) / std, bias=True))
    return result
