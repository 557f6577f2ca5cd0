"""Classification metrics reported by every algorithm, the random baseline, and the regression metrics.

Scores are (n, C) class scores (argmax) or (n,) positive-class probabilities (``score > threshold``);
the random baseline is IncFed Tables V–VI's seeded uniform guess.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score

from tff_esn.common import streams


def _labels(y_true: np.ndarray, n_classes: int) -> np.ndarray:
    y = np.asarray(y_true)
    integers = y.ndim == 1 and y.size and np.issubdtype(y.dtype, np.integer)
    if not integers or n_classes < 2 or y.min() < 0 or y.max() >= n_classes:
        shown = f"[{y.min()}, {y.max()}]" if integers else f"dtype {y.dtype} shape {y.shape}"
        raise ValueError(f"y_true: expected a non-empty 1-D array of integer labels in [0, {n_classes}) (n_classes ≥ "
                         f"2), got {shown}.")
    return y


class NonFiniteScores(ValueError):
    """Class scores holding NaN or inf: the model's outputs diverged (one line)."""


def _scores(scores: np.ndarray, n: int, n_classes: int) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 2 and s.shape[1] == 1:
        s = s[:, 0]
    shaped = s.shape == (n, n_classes) or s.shape == (n,) and n_classes == 2
    if not shaped or not np.all(np.isfinite(s)):
        raise (NonFiniteScores if shaped else ValueError)(f"scores: expected ({n}, {n_classes}) finite class scores or ({n},) binary probabilities "
                         f"(n_classes = 2), got {s.shape}{' containing NaN or inf' if shaped else ''}.")
    return s


def predictions(scores: np.ndarray, *, threshold: float = 0.5) -> np.ndarray:
    """Predicted classes: argmax of (n, C) scores, or ``score > threshold`` for (n,) scores."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 2 and s.shape[1] == 1:
        s = s[:, 0]
    return (s > threshold).astype(np.int64) if s.ndim == 1 else np.argmax(s, axis=1).astype(np.int64)


def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Fraction of correct predictions."""
    return float(np.mean(np.asarray(y_true) == np.asarray(y_pred)))


def _confusion(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> np.ndarray:
    """(K, K) counts of (true class, predicted class) pairs."""
    return np.bincount(np.asarray(y_true) * n_classes + np.asarray(y_pred),
                       minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def f1_scores(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> tuple[float, float]:
    """``(macro F1, micro F1)`` from one confusion count: per class ``2 TP / (2 TP + FP + FN)`` (0 if undefined)."""
    counts = _confusion(y_true, y_pred, n_classes)
    tp = np.diag(counts).astype(np.float64)
    denominator = counts.sum(axis=0) + counts.sum(axis=1)
    per_class = np.divide(2 * tp, denominator, out=np.zeros(n_classes), where=denominator > 0)
    return float(per_class.mean()), float(2 * tp.sum() / denominator.sum())


def balanced_accuracy(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> float:
    """Mean recall over the classes present in ``y_true`` (= ``sklearn.metrics.balanced_accuracy_score``)."""
    counts = _confusion(y_true, y_pred, n_classes)
    support = counts.sum(axis=1)
    present = support > 0
    return float(np.mean(np.diag(counts)[present] / support[present]))


def _binary_auc(y: np.ndarray, s: np.ndarray) -> float:
    """ROC AUC as the Mann–Whitney statistic with average ranks for ties (= ``roc_auc_score``)."""
    positives = y == 1
    n_pos = int(positives.sum())
    n_neg = y.size - n_pos
    rank_sum = float(rankdata(s)[positives].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def auc(y_true: np.ndarray, scores: np.ndarray, n_classes: int) -> float | None:
    """ROC AUC: binary on the positive score, else macro one-vs-rest; ``None`` when a class is absent."""
    y = _labels(y_true, n_classes)
    s = _scores(scores, y.size, n_classes)
    if len(np.unique(y)) < n_classes:
        return None
    if n_classes == 2:
        return _binary_auc(y, s if s.ndim == 1 else s[:, 1] - s[:, 0])
    z = np.exp(s - s.max(axis=1, keepdims=True))
    return float(roc_auc_score(y, z / z.sum(axis=1, keepdims=True), multi_class="ovr", average="macro",
                               labels=np.arange(n_classes)))


def classification_metrics(y_true: np.ndarray, scores: np.ndarray, n_classes: int, *,
                           threshold: float = 0.5) -> dict[str, float | int | None]:
    """``{"accuracy", "balanced_accuracy", "f1_macro", "f1_micro", "auc", "n"}`` of scores against integer labels."""
    y = _labels(y_true, n_classes)
    s = _scores(scores, y.size, n_classes)
    pred = predictions(s, threshold=threshold)
    f1_macro, f1_micro = f1_scores(y, pred, n_classes)
    return {
        "accuracy": accuracy(y, pred),
        "balanced_accuracy": balanced_accuracy(y, pred, n_classes),
        "f1_macro": f1_macro,
        "f1_micro": f1_micro,
        "auc": auc(y, s, n_classes),
        "n": int(y.size),
    }


def random_baseline(y_true: np.ndarray, n_classes: int, *, seed: int = 0) -> dict[str, float]:
    """Accuracy and macro F1 of uniformly random guesses (seeded; IncFed Tables V–VI)."""
    y = _labels(y_true, n_classes)
    guess = streams.RANDOM_BASELINE.generator(seed).integers(0, n_classes, size=y.size)
    return {"accuracy": accuracy(y, guess), "f1_macro": f1_scores(y, guess, n_classes)[0]}


def split_report(y_true: np.ndarray, scores: np.ndarray, n_classes: int, *, seed: int = 0,
                 threshold: float = 0.5) -> dict[str, float | int | None]:
    """One ``metrics.json`` section: :func:`classification_metrics`, random baseline, label and prediction counts,
    and ``confusion``: counts of true class (row) against predicted class (column)."""
    report = classification_metrics(y_true, scores, n_classes, threshold=threshold)
    report["random_baseline_accuracy"] = random_baseline(y_true, n_classes, seed=seed)["accuracy"]
    y = _labels(y_true, n_classes)
    predicted = predictions(_scores(scores, y.size, n_classes), threshold=threshold)
    report["label_counts"] = np.bincount(y, minlength=n_classes).tolist()
    report["prediction_counts"] = np.bincount(predicted, minlength=n_classes).tolist()
    report["confusion"] = _confusion(y, predicted, n_classes).tolist()
    return report


def regression_metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float | int | None]:
    """``{"nrmse", "rmse", "mae", "r2", "n"}`` of real predictions (n,) or (n, 1): ``rmse = √mean((y − ŷ)²)``,
    ``nrmse = rmse / std(y)``, ``r2 = 1 − Σ(y − ŷ)² / Σ(y − ȳ)²`` (both ``None`` for a constant target)."""
    y = np.asarray(y_true, dtype=np.float64).reshape(-1)
    p = np.asarray(y_pred, dtype=np.float64)
    if p.ndim == 2 and p.shape[1] == 1:
        p = p[:, 0]
    if y.size == 0 or p.shape != y.shape or not (np.all(np.isfinite(y)) and np.all(np.isfinite(p))):
        raise ValueError(f"regression_metrics: expected ({y.size},) finite predictions for {y.size} non-empty finite "
                         f"targets, got {p.shape}{' containing NaN or inf' if p.shape == y.shape else ''}.")
    error = y - p
    rmse = float(np.sqrt(np.mean(error ** 2)))
    std = float(y.std())
    return {"nrmse": rmse / std if std > 0 else None, "rmse": rmse, "mae": float(np.mean(np.abs(error))),
            "r2": 1.0 - float(np.sum(error ** 2)) / (std ** 2 * y.size) if std > 0 else None, "n": int(y.size)}
