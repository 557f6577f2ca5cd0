"""The baselines' logistic regression (tff_esn.runs.logistic) against scikit-learn's LogisticRegression, and the
closed-form command line without scikit-learn or TensorFlow."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from tff_esn.runs.logistic import fit_logistic

from closed_form_data import random_dataset, write_npz

ROOT = Path(__file__).resolve().parents[1]


def _problem(k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """300 rows of 12 features whose class shifts their mean; class 0 more frequent (the balanced weights matter)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, 300)
    y[rng.random(300) < 0.3] = 0
    y[:k] = np.arange(k)
    return rng.normal(size=(300, 12)) + 0.4 * y[:, None] * rng.normal(size=12), y


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("balanced", [False, True])
def test_the_fit_is_scikit_learns_logistic_regression(k, balanced):
    x, y = _problem(k, seed=k + 10 * balanced)
    weight = "balanced" if balanced else None
    exact = LogisticRegression(class_weight=weight, tol=1e-12, max_iter=100_000).fit(x, y)
    tight = fit_logistic(x, y, balanced=balanced, gtol=1e-10, max_iter=100_000)
    assert tight.classes.tolist() == exact.classes_.tolist()
    np.testing.assert_allclose(np.exp(tight.log_proba(x)), exact.predict_proba(x), atol=1e-4)  # the same optimum
    np.testing.assert_allclose(tight.weights, exact.coef_, atol=1e-3)
    # the baseline's stopping rule (scikit-learn's default tol): probabilities within 0.01 of the default estimator's
    default = LogisticRegression(class_weight=weight, max_iter=2000).fit(x, y)
    ours = fit_logistic(x, y, balanced=balanced)
    assert np.abs(np.exp(ours.log_proba(x)) - default.predict_proba(x)).max() < 1e-2
    assert np.mean(ours.log_proba(x).argmax(1) == default.predict(x)) > 0.98


def test_labels_keep_their_values_and_bad_input_is_named():
    x, y = _problem(3, seed=1)
    fitted = fit_logistic(x, np.array([2, 5, 7])[y])
    assert fitted.classes.tolist() == [2, 5, 7] and fitted.log_proba(x[:4]).shape == (4, 3)
    with pytest.raises(ValueError, match="at least 2 classes"):
        fit_logistic(x, np.zeros(300, int))
    with pytest.raises(ValueError, match="C > 0"):
        fit_logistic(x, y, c=0.0)


@pytest.mark.slow
def test_the_incfed_command_imports_neither_scikit_learn_nor_tensorflow(tmp_path):
    data = random_dataset(n_clients=5, steps=8, seed=2)
    path = write_npz(tmp_path / "d.npz", data, ["train", "train", "train", "val", "test"])
    code = ("import json, runpy, sys\n"
            f"sys.argv = ['tff_esn', 'run', 'incfed', '--data', 'npz:{path}', '--out', '{tmp_path / 'run'}']\n"
            "try:\n    runpy.run_module('tff_esn', run_name='__main__')\nexcept SystemExit as stop:\n"
            "    code = stop.code\n"
            "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules})]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    code, modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert code in (0, None), out.stderr[-2000:]
    assert (tmp_path / "run" / "metrics.json").exists()
    assert {"sklearn", "tensorflow", "tensorflow_federated"}.isdisjoint(modules)
    assert "numpy" in modules  # the check sees the run's imports
