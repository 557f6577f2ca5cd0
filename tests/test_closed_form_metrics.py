"""Metrics against scikit-learn, the random baseline, and atomic writes."""

import json

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, f1_score, roc_auc_score

from tff_esn.common import metrics
from tff_esn.common.io import write_csv_atomic, write_json_atomic


def _scores(n=300, c=4, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    return y, rng.normal(size=(n, c)) + np.eye(c)[y]


def test_classification_metrics_equal_sklearn():
    y, s = _scores()
    got = metrics.classification_metrics(y, s, 4)
    pred = s.argmax(1)
    assert got["accuracy"] == pytest.approx(np.mean(pred == y))
    assert got["f1_macro"] == pytest.approx(f1_score(y, pred, average="macro"))
    assert got["f1_micro"] == pytest.approx(f1_score(y, pred, average="micro"))
    softmax = np.exp(s) / np.exp(s).sum(1, keepdims=True)
    assert got["auc"] == pytest.approx(roc_auc_score(y, softmax, multi_class="ovr"))
    assert got["n"] == 300
    assert got["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, pred))


@pytest.mark.parametrize("seed", range(20))
def test_f1_and_binary_auc_equal_sklearn_on_random_cases(seed):
    rng = np.random.default_rng(seed)
    c, n = int(rng.integers(2, 6)), int(rng.integers(1, 200))
    y = rng.integers(0, c - int(rng.integers(0, 2)), n)  # some cases lack the last class
    pred = rng.integers(0, c, n) if seed % 3 else y.copy()
    macro, micro = metrics.f1_scores(y, pred, c)
    labels = np.arange(c)
    assert macro == pytest.approx(f1_score(y, pred, labels=labels, average="macro", zero_division=0), abs=1e-12)
    assert micro == pytest.approx(f1_score(y, pred, labels=labels, average="micro", zero_division=0), abs=1e-12)
    assert metrics.balanced_accuracy(y, pred, c) == pytest.approx(balanced_accuracy_score(y, pred), abs=1e-12)
    yb = rng.integers(0, 2, max(n, 2))
    yb[:2] = [0, 1]
    scores = np.round(rng.normal(size=yb.size), int(rng.integers(0, 3)))  # rounding makes ties
    assert metrics.auc(yb, scores, 2) == pytest.approx(roc_auc_score(yb, scores), abs=1e-12)
    k = max(c, 3)
    ym = np.concatenate([np.arange(k), rng.integers(0, k, n)])
    sm = np.round(rng.normal(size=(ym.size, k)), int(rng.integers(0, 3)))
    softmax = np.exp(sm - sm.max(1, keepdims=True))
    softmax /= softmax.sum(1, keepdims=True)
    assert metrics.auc(ym, sm, k) == pytest.approx(roc_auc_score(ym, softmax, multi_class="ovr"), abs=1e-12)


def test_binary_probabilities_and_two_column_scores():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 100)
    p = np.clip(0.3 * y + rng.uniform(0, 0.7, 100), 0, 1)
    got = metrics.classification_metrics(y, p[:, None], 2)
    assert got["accuracy"] == pytest.approx(np.mean((p > 0.5) == y))
    assert got["auc"] == pytest.approx(roc_auc_score(y, p))
    two = np.stack([1 - p, p], 1)
    assert metrics.classification_metrics(y, two, 2)["auc"] == pytest.approx(roc_auc_score(y, p))


def test_auc_is_none_when_a_class_is_missing_and_errors_name_the_input():
    y, s = _scores(c=3)
    y = np.where(y == 2, 0, y)
    assert metrics.auc(y, s, 3) is None
    with pytest.raises(ValueError, match="scores"):
        metrics.classification_metrics(y, s[:, :2], 3)
    with pytest.raises(ValueError, match="y_true"):
        metrics.classification_metrics(y.astype(float), s, 3)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        metrics.classification_metrics(np.array([0, 5]), np.zeros((2, 2)), 2)
    with pytest.raises(ValueError, match="NaN"):
        metrics.classification_metrics(np.array([0, 1]), np.array([[np.nan, 0], [0, 1]]), 2)


def test_random_baseline_is_seeded_and_near_chance():
    y = np.random.default_rng(0).integers(0, 4, 20000)
    a = metrics.random_baseline(y, 4, seed=5)
    assert a == metrics.random_baseline(y, 4, seed=5)
    assert a != metrics.random_baseline(y, 4, seed=6)
    assert a["accuracy"] == pytest.approx(0.25, abs=0.01)
    report = metrics.split_report(y, np.eye(4)[y], 4, seed=5)
    assert report["accuracy"] == 1.0 and report["random_baseline_accuracy"] == a["accuracy"]


def test_json_writes_are_atomic_and_convert_numpy(tmp_path):
    path = tmp_path / "run" / "metrics.json"
    write_json_atomic(path, {"a": np.float32(1.5), "b": np.arange(3), "c": float("nan"), "d": (1, 2)})
    assert json.loads(path.read_text()) == {"a": 1.5, "b": [0, 1, 2], "c": None, "d": [1, 2]}
    with pytest.raises(TypeError, match="object"):
        write_json_atomic(path, {"bad": object()})
    assert json.loads(path.read_text())["a"] == 1.5  # the previous file is intact
    assert [p.name for p in path.parent.iterdir()] == ["metrics.json"]  # no temporary left


def test_csv_writes(tmp_path):
    path = write_csv_atomic(tmp_path / "t.csv", [{"x": 1, "y": np.float64(0.5)}, {"x": 2, "y": 1.0}])
    assert path.read_text() == "x,y\n1,0.5\n2,1.0\n"
    with pytest.raises(ValueError, match="fieldnames"):
        write_csv_atomic(tmp_path / "e.csv", [])
