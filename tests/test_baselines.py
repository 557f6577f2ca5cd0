"""Majority-class and logistic-regression baselines against scikit-learn on the same split."""

import numpy as np
import pytest
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score

from closed_form_data import THESIS_SPLIT, default_split, random_dataset, random_thesis_dataset
from tff_esn.runs.baselines import baseline_scores, ridge_on_features, sequence_features
from tff_esn.data.sequences import ClientSequences


def test_summary_features_per_sequence_and_rows_per_step():
    x = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    summary = sequence_features(x, per_step=False)
    assert summary.shape == (2, 10)
    np.testing.assert_allclose(summary[0], [2, 3, np.std([0, 2, 4]), np.std([1, 3, 5]), 0, 1, 4, 5, 4, 5])
    assert sequence_features(x, per_step=True).shape == (6, 2)
    with pytest.raises(ValueError, match=r"\(n, T, F\)"):  # the dataset form refuses what is not sequences
        ClientSequences(x[0], np.zeros(3, np.int64))


@pytest.mark.parametrize("features", [1, 3])
def test_summary_features_of_equal_lengths_keep_their_bits_and_ragged_ones_use_each_sequences_own_steps(
        features, monkeypatch):
    from tff_esn.esn import states_numpy

    monkeypatch.setattr(states_numpy, "HARVEST_VALUES", 7 * 13 * features)  # several blocks of 7 sequences
    rng = np.random.default_rng(features)
    x = rng.normal(size=(40, 13, features)).astype(np.float32)
    b = x.astype(np.float64)
    formula = np.concatenate([b.mean(1), b.std(1), b.min(1), b.max(1), b[:, -1]], axis=1)
    assert sequence_features(x, False).tobytes() == formula.tobytes()
    assert sequence_features(x, False, np.full(40, 13)).tobytes() == formula.tobytes()
    lengths = rng.integers(1, 14, size=40)
    padded = np.where(np.arange(13)[None, :, None] < lengths[:, None, None], x, np.float32(0))
    direct = np.stack([np.concatenate([s.mean(0), s.std(0), s.min(0), s.max(0), s[-1]])
                       for s in (b[i, :n] for i, n in enumerate(lengths))])
    np.testing.assert_allclose(sequence_features(padded, False, lengths), direct, rtol=1e-13, atol=1e-15)


def test_a_ragged_test_group_copying_training_sequences_is_classified_from_their_own_steps():
    from tff_esn.data.sequences import Split, dataset_from_arrays

    rng = np.random.default_rng(0)
    short = [1.0 + 0.01 * rng.normal(size=(5, 1)) for _ in range(6)]  # class 0: 5 steps near 1.0
    long = [1.2 + 0.01 * rng.normal(size=(50, 1)) for _ in range(6)]  # class 1: 50 steps near 1.2
    data = dataset_from_arrays(short + long + short + long, [0] * 6 + [1] * 6 + [0] * 6 + [1] * 6,
                               ["a"] * 12 + ["t0"] * 6 + ["t1"] * 6, source="copies")
    got = baseline_scores(data, Split("copies", train=("a",), val=("t1",), test=("t0",)))
    # padded to 50 steps in training, to 5 in t0: the zeros made t0's copies look like class 1
    assert got["logistic_regression"]["val"]["accuracy"] == got["logistic_regression"]["test"]["accuracy"] == 1.0


@pytest.mark.parametrize("seed", range(3))
def test_baselines_equal_sklearn_on_pooled_rows(seed):
    data = random_dataset(n_clients=7, steps=12, features=3, n_classes=3, seed=seed, sizes=[30] * 7)
    split = default_split(data)
    got = baseline_scores(data, split, seed=seed)
    train, test = data.pooled(split.train), data.pooled(split.test)
    x_train, x_test = sequence_features(train.x, False), sequence_features(test.x, False)
    dummy = DummyClassifier(strategy="most_frequent").fit(x_train, train.y)
    assert got["majority"]["class"] == int(dummy.predict(x_test[:1])[0])
    assert got["majority"]["test"]["accuracy"] == pytest.approx(dummy.score(x_test, test.y))
    assert got["majority"]["test"]["balanced_accuracy"] == pytest.approx(1 / len(np.unique(test.y)))
    mean, std = x_train.mean(0), x_train.std(0)
    reference = LogisticRegression(max_iter=2000, class_weight="balanced").fit((x_train - mean) / std, train.y)
    pred = reference.predict((x_test - mean) / std)
    assert got["logistic_regression"]["test"]["accuracy"] == pytest.approx(np.mean(pred == test.y))
    assert got["logistic_regression"]["test"]["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(test.y, pred))
    # the classes shift the inputs' mean: a linear model learns, the majority class does not
    assert got["logistic_regression"]["test"]["balanced_accuracy"] > got["majority"]["test"]["balanced_accuracy"] + 0.2
    assert baseline_scores(data, split, seed=seed) is got  # memoised per dataset, split and seed


def test_per_step_binary_baselines():
    data = random_thesis_dataset()
    got = baseline_scores(data, THESIS_SPLIT)
    test = data.pooled(THESIS_SPLIT.test)
    assert got["logistic_regression"]["inputs"] == "per-step inputs"
    assert got["majority"]["test"]["n"] == test.y.size
    assert got["majority"]["class"] == 0 and got["majority"]["test"]["auc"] == pytest.approx(0.5)
    assert got["majority"]["test"]["accuracy"] == pytest.approx(np.mean(test.y == 0))
    assert got["logistic_regression"]["test"]["auc"] > 0.9  # the label is a noisy threshold of channel 0
    assert got["logistic_regression"]["test"]["balanced_accuracy"] > 0.75


def test_ridge_on_features_is_sklearn_ridge_on_the_logistic_regressions_standardized_rows():
    from sklearn.linear_model import Ridge

    data = random_dataset(n_clients=7, steps=12, features=3, n_classes=3, seed=1, sizes=[30] * 7)
    split = default_split(data)
    got = ridge_on_features(data, split, (1e-2, 1e6))
    train, test = data.pooled(split.train), data.pooled(split.test)
    x_train, x_test = sequence_features(train.x, False), sequence_features(test.x, False)
    mean, std = x_train.mean(0), x_train.std(0)
    targets = np.eye(3)[train.y]
    for l2, metrics in zip((1e-2, 1e6), got["test"]):
        rows = np.hstack([(x_train - mean) / std, np.ones((len(x_train), 1))])
        coef = Ridge(alpha=l2, fit_intercept=False).fit(rows, targets).coef_
        pred = np.argmax(np.hstack([(x_test - mean) / std, np.ones((len(x_test), 1))]) @ coef.T, axis=1)
        assert metrics["accuracy"] == pytest.approx(np.mean(pred == test.y))
    assert len(got["val"]) == 2 and got["val"][0]["n"] == data.pooled(split.val).y.size
    assert got["test"][0]["accuracy"] > 0.6  # the classes shift the inputs' mean (chance 1/3)


def test_summary_rows_are_computed_once_per_dataset_and_clients_and_stay_equal():
    from tff_esn.runs.baselines import _rows

    data = random_dataset(n_clients=5, steps=10, features=2, n_classes=2, seed=3, sizes=[20] * 5)
    split = default_split(data)
    x, y = _rows(data, split.test)
    fresh = data.pooled(split.test)
    np.testing.assert_array_equal(x, sequence_features(fresh.x, False))
    np.testing.assert_array_equal(y, fresh.y)
    assert _rows(data, list(split.test))[0] is x  # every seed and split of the dataset reuses them
    with pytest.raises(ValueError, match="read-only"):
        x[0, 0] = 0.0
    assert baseline_scores(data, split, seed=1)["logistic_regression"]["test"] == \
        baseline_scores(data, split, seed=2)["logistic_regression"]["test"]  # the held rows are not altered
    thesis = random_thesis_dataset()
    assert _rows(thesis, THESIS_SPLIT.test)[0] is not _rows(thesis, THESIS_SPLIT.test)[0]  # per-step rows: not held
