"""The closed-form tuner (against sklearn Ridge), harvest reuse, resume, and the thesis hypermodel."""

import keras_tuner as kt
import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.metrics import f1_score

from global_rng import call_untouched
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.weights import StateSpec
from tff_esn.esn.layer import Reservoir
from tuning.closed_form import ClosedFormTuner
from tuning.oracle import ExhaustiveRandomSearchOracle
from tuning.search import ClosedFormSearchTuner, ThesisTuner
from tuning.spaces import THESIS_FEATURE_SUBSETS, get_space
from tuning.thesis import BinaryF1, MacroF1, ThesisHyperModel


def _dataset(n_clients=5, n=12, steps=20, features=4, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    clients = {}
    for c in range(n_clients):
        y = rng.integers(0, classes, n)
        x = rng.normal(size=(n, steps, features)) + 0.8 * y[:, None, None] * (np.arange(features) % 2)
        clients[f"s{c}"] = ClientSequences(x.astype(np.float32), y)
    return SequenceDataset(clients, classes, tuple(f"f{i}" for i in range(features)),
                           tuple(f"c{i}" for i in range(classes)), "random")


SPLIT = Split("t", ("s0", "s1", "s2"), ("s3",), ("s4",))


def _reservoir_space(l2_values):
    hp = kt.HyperParameters()
    hp.Fixed("units", 16)
    hp.Fixed("spectral_radius", 0.8)
    hp.Fixed("leaky", 0.7)
    hp.Fixed("input_scaling", 0.5)
    hp.Choice("l2", l2_values)
    return hp


def _oracle(hp, max_trials, objective="val_accuracy", seed=1):
    return ExhaustiveRandomSearchOracle(objective=kt.Objective(objective, "max"), max_trials=max_trials, seed=seed,
                                        hyperparameters=hp, tune_new_entries=False, allow_new_entries=False)


def test_closed_form_trial_equals_sklearn_ridge_and_reuses_the_harvest(tmp_path):
    ds = _dataset()
    tuner = ClosedFormTuner(_oracle(_reservoir_space([1e-3, 1e-1, 10.0]), None), ds, SPLIT,
                            spec=StateSpec("all", 2, readout_bias=False), seed=5,
                            directory=str(tmp_path), project_name="p")
    tuner.search(verbose=0)
    assert len(tuner.oracle.trials) == 3 and tuner.harvests == 1  # one reservoir, three λ

    layer = Reservoir(ReservoirConfig(units=16, spectral_radius=0.8, leaky=0.7, input_scaling=0.5, seed=5),
                      state_mode="all", washout=2)
    train = ds.pooled(SPLIT.train)
    states = layer(train.x).numpy()
    targets = np.repeat(np.eye(3)[train.y], states.shape[1], axis=0)
    val = ds.pooled(SPLIT.val)
    val_mean_states = layer(val.x).numpy().mean(axis=1)
    for trial in tuner.oracle.trials.values():
        l2 = trial.hyperparameters.values["l2"]
        ref = Ridge(alpha=l2, fit_intercept=False, solver="cholesky").fit(states.reshape(-1, 16), targets)
        expected = np.mean(np.argmax(ref.predict(val_mean_states), axis=1) == val.y)
        assert trial.score == pytest.approx(expected)


def test_interrupted_search_resumes_without_repeating_finished_trials(tmp_path):
    ds = _dataset()
    space = get_space("incfed-wesad")
    calls = []

    class Interrupted(ClosedFormTuner):
        def run_trial(self, trial, *args, **kwargs):
            calls.append(trial.trial_id)
            if len(calls) == 3:
                raise KeyboardInterrupt
            return super().run_trial(trial, *args, **kwargs)

    first = Interrupted(_oracle(space.build(), 5), ds, SPLIT, directory=str(tmp_path), project_name="p")
    with pytest.raises(KeyboardInterrupt):
        first.search(verbose=0)
    finished = {t.trial_id: (t.score, t.hyperparameters.values) for t in first.oracle.trials.values()
                if t.status == "COMPLETED"}
    assert sorted(finished) == ["0", "1"]

    resumed_calls = []

    class Counting(ClosedFormTuner):
        def run_trial(self, trial, *args, **kwargs):
            resumed_calls.append(trial.trial_id)
            return super().run_trial(trial, *args, **kwargs)

    resumed = Counting(_oracle(space.build(), 5), ds, SPLIT, directory=str(tmp_path), project_name="p")
    resumed.search(verbose=0)
    assert resumed_calls == ["2", "3", "4"]  # the interrupted trial again, then the rest of the budget
    trials = resumed.oracle.trials
    assert all(t.status == "COMPLETED" for t in trials.values()) and len(trials) == 5
    for tid, (score, values) in finished.items():
        assert (trials[tid].score, trials[tid].hyperparameters.values) == (score, values)

    uninterrupted = ClosedFormTuner(_oracle(space.build(), 5), ds, SPLIT, directory=str(tmp_path / "u"),
                                    project_name="p")
    uninterrupted.search(verbose=0)
    def by_id(ts):
        return [(tid, ts[tid].hyperparameters.values, ts[tid].score) for tid in sorted(ts)]

    assert by_id(uninterrupted.oracle.trials) == by_id(trials)  # resume ≡ uninterrupted


def test_closed_form_tuner_rejects_a_split_without_validation_clients(tmp_path):
    with pytest.raises(ValueError, match="no validation clients"):
        ClosedFormTuner(_oracle(_reservoir_space([1.0]), 1), _dataset(), Split("t", ("s0",)),
                        directory=str(tmp_path), project_name="p")


def test_binary_f1_matches_sklearn_on_per_step_outputs():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, (6, 9))
    p = rng.random((6, 9, 1)).astype(np.float32)
    metric = BinaryF1()
    metric.update_state(y[..., None].astype(np.float32), p)
    assert float(metric.result()) == pytest.approx(f1_score(y.ravel(), (p.ravel() > 0.5).astype(int)), abs=1e-6)
    assert BinaryF1.from_config(metric.get_config()).threshold == 0.5


def _thesis_data(seed=0):
    rng = np.random.default_rng(seed)
    names = ("pEDA", "tEDA", "HR", "HRV")

    def make(n):
        y = (rng.random((n, 30)) < 0.15).astype(np.int64)
        return ClientSequences((rng.normal(size=(n, 30, 4)) + 1.5 * y[..., None]).astype(np.float32), y)

    train, val = make(24), make(8)
    windows = []

    def data(window):
        windows.append(window)
        return train, val, names

    return data, windows


def _thesis_search(folder):
    """Two trials of the thesis search (hypermodel seed 3) in ``folder``: ``(tuner, trials, data, windows)``."""
    data, windows = _thesis_data()
    tuner = ThesisTuner(oracle=_oracle(get_space("thesis").build(), 2, objective="val_f1"),
                        hypermodel=ThesisHyperModel(data, seed=3), directory=str(folder), project_name="p")
    tuner.progress = False
    tuner.search(verbose=0)
    return tuner, list(tuner.oracle.trials.values()), data, windows


def test_thesis_search_is_seeded_and_scores_validation_f1(tmp_path):
    results = []
    for run in ("a", "b"):
        tuner, trials, data, windows = _thesis_search(tmp_path / run)
        assert len(trials) == 2 and all(t.status == "COMPLETED" for t in trials)
        assert set(windows) <= {320, 1600, 3200}
        results.append([(t.hyperparameters.values, t.score) for t in trials])
        for t in trials:
            assert 0.0 <= t.score <= 1.0 and t.metrics.get_last_value("seconds") > 0
    assert results[0] == results[1]

    best = tuner.get_best_models(1)[0]
    values = tuner.oracle.get_best_trials(1)[0].hyperparameters.values
    train, val, names = data(values["window"])
    cols = [names.index(f) for f in values["features"].split(",")]
    pred = best.predict(val.x[..., cols], verbose=0)
    assert tuner.oracle.get_best_trials(1)[0].score == pytest.approx(
        f1_score(val.y.ravel(), (pred.ravel() > 0.5).astype(int)), abs=1e-6)


def test_thesis_search_ignores_and_keeps_the_global_seeds(tmp_path):
    # The trials' scores and trained readouts depend on the hypermodel's seed alone
    def search(folder):
        tuner, trials, _, _ = _thesis_search(tmp_path / folder)
        return [(t.hyperparameters.values, t.metrics.get_last_value("val_f1"), t.metrics.get_last_value("loss"))
                for t in trials], tuner.get_best_models(1)[0].get_weights()

    (first, weights_a), (again, weights_b) = (call_untouched(lambda: search(str(global_seed)), global_seed)
                                              for global_seed in (7, 123))
    assert len(first) == 2 and first == again
    for a, b in zip(weights_a, weights_b):
        np.testing.assert_array_equal(a, b)


def test_progress_tuner_records_seconds_per_trial(tmp_path):
    tuner = ClosedFormSearchTuner(_oracle(_reservoir_space([1e-2, 1.0]), None), _dataset(), SPLIT,
                                  directory=str(tmp_path), project_name="p")
    tuner.progress = False
    tuner.search(verbose=0)
    assert all(t.metrics.get_last_value("seconds") > 0 for t in tuner.oracle.trials.values())


def test_macro_f1_matches_sklearn_on_per_step_softmax_outputs():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 4, (6, 9))
    p = rng.random((6, 9, 4)).astype(np.float32)
    metric = MacroF1()
    metric.update_state(np.eye(4, dtype=np.float32)[y], p)
    want = f1_score(y.ravel(), p.reshape(-1, 4).argmax(1), average="macro")
    assert float(metric.result()) == pytest.approx(want, abs=1e-6)


def test_thesis_search_on_k_classes_scores_validation_macro_f1(tmp_path):
    rng = np.random.default_rng(1)
    names = ("pEDA", "tEDA", "HR", "HRV")

    def make(n):
        y = rng.integers(0, 3, n)
        return ClientSequences((rng.normal(size=(n, 30, 4)) + 1.5 * (y - 1.0)[:, None, None]).astype(np.float32), y)

    train, val = make(24), make(12)
    model = ThesisHyperModel(lambda window: (train, val, names), seed=3, class_weight="balanced", n_classes=3)
    tuner = ThesisTuner(oracle=_oracle(get_space("thesis").build(), 1, objective="val_f1"), hypermodel=model,
                        directory=str(tmp_path), project_name="p")
    tuner.progress = False
    tuner.search(verbose=0)
    trial = tuner.oracle.get_best_trials(1)[0]
    config = model.model_config(trial.hyperparameters)
    assert config.n_outputs == 3 and config.class_weight == pytest.approx((24 / (3 * np.bincount(train.y))).tolist())
    best = tuner.get_best_models(1)[0]
    cols = [names.index(f) for f in trial.hyperparameters.values["features"].split(",")]
    pred = best.predict(val.x[..., cols], verbose=0)
    assert pred.shape == (12, 3)
    assert trial.score == pytest.approx(f1_score(val.y, pred.argmax(1), average="macro"), abs=1e-6)


def _k_class_data(seed=1, k=3):
    rng = np.random.default_rng(seed)
    names = ("pEDA", "tEDA", "HR", "HRV")

    def make(n):
        y = rng.integers(0, k, n)
        return ClientSequences((rng.normal(size=(n, 30, 4)) + 1.5 * (y - 1.0)[:, None, None]).astype(np.float32), y)

    train, val = make(24), make(12)
    return lambda window: (train, val, names)


def _one_shape_space():
    """Table 6.1's choices with the units fixed: one readout shape, so every trial reuses one model."""
    hp = kt.HyperParameters()
    hp.Fixed("units", 16)
    hp.Choice("leaky", [0.5, 0.8, 1.0])
    hp.Choice("learning_rate", [0.001, 0.01, 0.1])
    hp.Choice("window", [320, 1600, 3200])
    hp.Choice("batch_size", [5, 20, 50])
    hp.Choice("features", list(THESIS_FEATURE_SUBSETS))
    hp.Fixed("spectral_radius", 0.99)
    hp.Fixed("epochs", 1)
    return hp


def _trials_and_readouts(folder, data, cached, n_trials, **kwargs):
    model = ThesisHyperModel(data, seed=3, cached_states=cached, **kwargs)
    tuner = ThesisTuner(oracle=_oracle(_one_shape_space(), n_trials, objective="val_f1", seed=4),
                        hypermodel=model, directory=str(folder), project_name="p")
    tuner.progress = False
    tuner.search(verbose=0)
    trials = [tuner.oracle.trials[t] for t in sorted(tuner.oracle.trials, key=int)]
    return tuner, trials, [tuner.load_model(t).get_layer("readout").get_weights() for t in trials]


@pytest.mark.parametrize("kind", ["binary per-step", "3 classes per-sequence"])
def test_cached_state_trial_equals_the_end_to_end_trial(tmp_path, kind):
    # The readout trained on harvested states is the readout the whole model trains (reservoir in
    # the graph): same objective and same weights, bit for bit, trial after trial on one reused model
    data, kwargs = (_thesis_data()[0], {}) if kind.startswith("binary") else (
        _k_class_data(), {"class_weight": "balanced", "n_classes": 3})
    _, whole, whole_readouts = _trials_and_readouts(tmp_path / "whole", data, False, 3, **kwargs)
    tuner, cached, cached_readouts = _trials_and_readouts(tmp_path / "cached", data, True, 3, **kwargs)
    assert len(tuner.hypermodel._models) == 1 and tuner.hypermodel.harvests > 1  # one model, several reservoirs
    assert [t.hyperparameters.values for t in cached] == [t.hyperparameters.values for t in whole]
    assert [t.score for t in cached] == [t.score for t in whole]
    assert [t.metrics.get_last_value("loss") for t in cached] == [t.metrics.get_last_value("loss") for t in whole]
    for got, want in zip(cached_readouts, whole_readouts):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    best = tuner.get_best_models(1)[0]
    assert best.get_layer("reservoir") is not None  # the whole model, on the inputs


def _fixed_reservoir_space(learning_rates, batch_sizes):
    hp = kt.HyperParameters()
    for name, value in (("units", 16), ("leaky", 0.8), ("window", 320), ("features", "pEDA,HR"),
                        ("spectral_radius", 0.99), ("epochs", 1)):
        hp.Fixed(name, value)
    hp.Choice("learning_rate", learning_rates)
    hp.Choice("batch_size", batch_sizes)
    return hp


@pytest.mark.parametrize("cache_bytes, harvests", [(2**30, 1), (0, 1)])
def test_trials_of_one_reservoir_point_harvest_once(tmp_path, cache_bytes, harvests):
    data, _ = _thesis_data()
    model = ThesisHyperModel(data, seed=3, cache_bytes=cache_bytes)
    tuner = ThesisTuner(oracle=_oracle(_fixed_reservoir_space([0.001, 0.1], [5, 50]), None, objective="val_f1"),
                        hypermodel=model, directory=str(tmp_path), project_name="p")
    tuner.progress = False
    tuner.search(verbose=0)
    assert len(tuner.oracle.trials) == 4 and model.harvests == harvests


def test_states_cache_drops_the_least_recently_used_point_beyond_its_bound():
    data, _ = _thesis_data()
    hp = get_space("thesis").build()
    one = ThesisHyperModel(data, seed=3)
    sizes = []
    for units in (50, 100, 200):
        hp.values.update(units=units, leaky=1.0, window=320, features="pEDA")
        sizes.append(sum(int(np.prod(s.shape)) * 4 for s in one.states(hp)))
    model = ThesisHyperModel(data, seed=3, cache_bytes=sum(sizes) - 1)  # room for two of the three points
    for units in (50, 100, 50):  # both fit: the third call reuses the first harvest
        hp.values.update(units=units)
        model.states(hp)
    assert model.harvests == 2
    hp.values.update(units=200)  # a third point: the least recently used (100 units) is dropped
    model.states(hp)
    hp.values.update(units=50)
    model.states(hp)
    assert model.harvests == 3
    hp.values.update(units=100)
    model.states(hp)
    assert model.harvests == 4
    with pytest.raises(ValueError, match="cache_bytes"):
        ThesisHyperModel(data, cache_bytes=-1)
