"""The scikit-learn estimators (:mod:`tff_esn.registry.estimators`): the applicable estimator checks, ``clone``,
``GridSearchCV`` with ``GroupKFold`` over clients, any hashable labels, and one-line errors where inputs mislead.

scikit-learn's ``check_estimator`` suite feeds 2-D tabular ``X``; these estimators take sequences and refuse a 2-D
array (its rows could be steps or sequences), so the checks that fit on tables do not apply. The applicable ones
(constructor and parameter checks, the unfitted error) run below; fit idempotence and parameters left unchanged by
fit are checked on sequences.
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.utils import estimator_checks

from tff_esn import ESNClassifier, ESNForecaster, ESNRegressor

APPLICABLE = ("check_parameters_default_constructible", "check_get_params_invariance", "check_set_params",
              "check_no_attributes_set_in_init", "check_estimators_unfitted")
"""scikit-learn's checks that do not fit on 2-D tabular data."""


def _sequences(n=48, clients=6, seed=0, ragged=True):
    """``n`` sequences of 2 channels whose class shifts their mean, labels ``cat``/``dog``/``eel``, ``clients`` ids."""
    rng = np.random.default_rng(seed)
    labels = np.array(["cat", "dog", "eel"])[np.arange(n) % 3]
    rng.shuffle(labels)
    shift = {"cat": 0.0, "dog": 0.8, "eel": 1.6}
    lengths = rng.integers(6, 12, n) if ragged else np.full(n, 9)
    x = [(rng.normal(size=(t, 2)) + shift[label]).astype(np.float32) for t, label in zip(lengths, labels)]
    return x, labels, np.repeat([f"u{i}" for i in range(clients)], n // clients)


@pytest.mark.parametrize("estimator", [ESNClassifier(), ESNRegressor(), ESNForecaster()],
                         ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("check", APPLICABLE)
def test_the_applicable_scikit_learn_checks_pass(estimator, check):
    getattr(estimator_checks, check)(type(estimator).__name__, estimator)


def test_fit_predicts_with_the_runs_model_and_keeps_the_labels_as_given():
    x, labels, clients = _sequences()
    est = ESNClassifier(units=12, state_mode="mean", l2=1e-2, seed=2, settings={"reservoir_search": ()})
    params = est.get_params()
    est.fit(x, labels, clients=clients)
    assert est.get_params() == params and list(est.classes_) == ["cat", "dog", "eel"] and est.n_features_in_ == 2
    assert est.record_["extra"]["train_clients"] == 6 and est.model_.provenance["algorithm"] == "incfed"
    predicted = est.predict(x)
    assert predicted.dtype == labels.dtype and set(predicted) <= {"cat", "dog", "eel"}
    assert est.score(x, labels) == accuracy_score(labels, predicted) > 0.7
    np.testing.assert_array_equal(est.classes_[np.argmax(est.decision_function(x), axis=1)], predicted)
    assert not hasattr(est, "predict_proba")  # a ridge readout has no probabilities
    # the readout is scikit-learn's ridge on the model's states (the bias column penalised like the others)
    states = np.column_stack([est.model_.states(x), np.ones(len(x))])
    reference = Ridge(alpha=1e-2, fit_intercept=False, solver="cholesky").fit(
        states, np.eye(3)[np.searchsorted(est.classes_, labels)])
    np.testing.assert_allclose(est.model_.members[0].readout.weights, reference.coef_, rtol=1e-3, atol=1e-4)
    again = clone(est).fit(x, labels, clients=clients)  # fit is idempotent and clone carries the parameters
    np.testing.assert_array_equal(again.decision_function(x), est.decision_function(x))


def test_two_classes_of_any_hashable_labels_and_a_binary_decision_function():
    x, labels, clients = _sequences(ragged=False)
    keep = labels != "eel"
    codes = np.where(labels[keep] == "cat", 7, 3)
    est = ESNClassifier(units=10, l2=1e-2, state_mode="mean").fit(np.stack([x[i] for i in np.flatnonzero(keep)]),
                                                                   codes, clients=clients[keep])
    xs = [x[i] for i in np.flatnonzero(keep)]
    assert list(est.classes_) == [3, 7]
    scores = est.decision_function(xs)
    assert scores.shape == (len(xs),)
    np.testing.assert_array_equal(np.where(scores > 0, 7, 3), est.predict(xs))


def test_grid_search_over_client_folds_scores_each_fold_federated_over_its_clients():
    x, labels, clients = _sequences()
    base = ESNClassifier(units=10, state_mode="mean", l2=1e-2)
    search = GridSearchCV(base, {"leaky": [0.3, 1.0]}, cv=GroupKFold(3)).fit(x, labels, groups=clients,
                                                                             clients=clients)
    for i, leaky in enumerate(search.cv_results_["param_leaky"]):
        manual = []
        for train, test in GroupKFold(3).split(x, labels, clients):
            assert not set(clients[train]) & set(clients[test])
            fitted = clone(base).set_params(leaky=leaky).fit([x[j] for j in train], labels[train],
                                                             clients=clients[train])
            assert fitted.record_["extra"]["train_clients"] == 4
            manual.append(fitted.score([x[j] for j in test], labels[test]))
        assert search.cv_results_["mean_test_score"][i] == pytest.approx(np.mean(manual))
    assert search.best_estimator_.record_["extra"]["train_clients"] == 6


def test_the_regressor_scores_r2():
    x, _, clients = _sequences()
    y = np.array([s[:, 0].mean() + 0.5 * s[:, 1].mean() for s in x])
    est = ESNRegressor(units=12, seed=1).fit(x, y, clients=clients)
    assert est.score(x, y) == pytest.approx(r2_score(y, est.predict(x))) and est.score(x, y) > 0.8
    assert est.model_.task.kind == "regress"


def _waves(n=12, steps=80, clients=4, seed=0):
    """``n`` two-channel series: a sine of random phase and its cosine (each channel forecasts the other)."""
    phase = np.random.default_rng(seed).uniform(0, 2 * np.pi, n)[:, None]
    t = 0.3 * np.arange(steps)[None]
    return np.stack([np.sin(t + phase), np.cos(t + phase)], axis=-1).astype(np.float32), np.repeat(
        np.arange(clients), n // clients)


def test_the_forecaster_forecasts_its_series_own_later_steps_and_runs_free():
    x, clients = _waves()
    est = ESNForecaster(units=30, horizon=2, target=1, washout=10, state_mode="all", l2=1e-6).fit(x, clients=clients)
    assert est.model_.task.kind == "forecast" and est.model_.task.horizon == 2 and est.model_.task.target == "x1"
    predicted = est.predict(x[:, :-2])
    assert predicted.shape == (12, 68)  # 78 input steps after a washout of 10
    np.testing.assert_allclose(est.score(x), r2_score(x[:, 12:, 1].reshape(-1), predicted.reshape(-1)))
    assert est.score(x) > 0.99
    one = ESNForecaster(units=30, washout=10, state_mode="all", l2=1e-6).fit(x[:, :, :1], clients=clients)
    free = one.generate(x[0, :40, :1], 20)
    np.testing.assert_array_equal(free, one.model_.generate(x[0, :40, :1], 20))
    assert np.sqrt(np.mean((free - x[0, 40:60, 0]) ** 2)) < 0.1
    for raw in (False, True):  # a free run's first forecast is the one-step forecast after the warm-up
        beside = ESNForecaster(units=20, washout=5, state_mode="all", l2=1e-6, settings={"raw_inputs": raw}).fit(
            x[:, :, :1], clients=clients)
        assert beside.model_.spec.raw_inputs is raw
        np.testing.assert_allclose(beside.generate(x[0, :40, :1], 1)[0], beside.predict(x[:1, :40, :1])[0, -1],
                                   rtol=1e-12)
    with pytest.raises(ValueError, match="its series' own later steps"):
        ESNForecaster().fit(x, np.zeros(12))
    with pytest.raises(ValueError, match="channel index in"):
        ESNForecaster(target=2).fit(x)


@pytest.mark.parametrize("make,fit,message", [
    (ESNClassifier, lambda e, x, y, c: e.fit(np.zeros((10, 4)), y[:10]), r"a 2-D array \(10, 4\) is not sequences"),
    (ESNClassifier, lambda e, x, y, c: e.fit(x, np.linspace(0, 1, len(x))), r"continuous values are not class labels"),
    (ESNClassifier, lambda e, x, y, c: e.fit(x, np.full(len(x), "cat")), r"one class only"),
    (ESNClassifier, lambda e, x, y, c: e.fit(x, y, clients=c[:5]), r"one client id per sequence"),
    (ESNClassifier, lambda e, x, y, c: e.fit(x, y[:-1]), r"one label per sequence"),
    (ESNRegressor, lambda e, x, y, c: e.fit(x, np.full(len(x), np.nan)), r"finite real target"),
    (lambda: ESNClassifier(units=0), lambda e, x, y, c: e.fit(x, y), r"units \(--units\): expected an integer ≥ 1"),
    (lambda: ESNClassifier(settings={"units": 5}, units=4), lambda e, x, y, c: e.fit(x, y), r"set them once"),
])
def test_misleading_inputs_are_refused_in_one_line(make, fit, message):
    x, labels, clients = _sequences(n=12, clients=3)
    with pytest.raises(ValueError, match=message) as err:
        fit(make(), x, labels, clients)
    assert "\n" not in str(err.value)


def test_predicting_before_fit_or_on_other_features_errs():
    x, labels, clients = _sequences(n=24, clients=3)
    with pytest.raises(NotFittedError):
        ESNClassifier().predict(x)
    est = ESNClassifier(units=8, l2=1e-2, state_mode="last").fit(x, labels, clients=clients)
    with pytest.raises(ValueError, match="3 features per step, the model was trained on 2"):
        est.predict([np.zeros((5, 3))])


def test_the_models_page_example_runs():
    from pathlib import Path

    from test_docs_tutorials import page_code

    page = Path(__file__).resolve().parent.parent / "docs" / "models.md"
    text = page.read_text()
    start = text[:text.index("## scikit-learn estimators")].count("\n")  # the section's blocks, at their lines
    code = "\n".join(line if i >= start else "" for i, line in enumerate(page_code(text).splitlines()))
    namespace: dict = {}
    exec(compile(code, str(page), "exec"), namespace)
    assert namespace["search"].best_params_["leaky"] in (0.3, 1.0) and namespace["best"].score(
        namespace["X"], namespace["labels"]) > 0.6
