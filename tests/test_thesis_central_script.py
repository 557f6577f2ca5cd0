"""scripts/thesis_central.py: the stress-class F1 derived from accuracy and balanced accuracy."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from scripts.thesis_central import stress_f1


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(0.05, 0.4), st.floats(0.0, 1.0))
def test_stress_f1_equals_sklearn(seed, share, skill):
    rng = np.random.default_rng(seed)
    y = (rng.random(400) < share).astype(int)
    y[:2] = (0, 1)
    pred = np.where(rng.random(400) < skill, y, rng.integers(0, 2, 400))
    metrics = {"accuracy": accuracy_score(y, pred), "balanced_accuracy": balanced_accuracy_score(y, pred)}
    np.testing.assert_allclose(stress_f1(metrics, y.mean()), f1_score(y, pred, zero_division=0.0), atol=1e-9)
