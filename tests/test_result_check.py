"""One result check for every algorithm: a model that predicts one class or does not beat the majority class."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from closed_form_data import default_split, random_dataset, toy_model

from tff_esn.registry import algorithms
from tff_esn.cli.compare.heterogeneity import FLAG_MARK
from tff_esn.common.metrics import split_report
from tff_esn.common.result_check import NOT_ABOVE_MAJORITY, ONE_CLASS, check_result
from tff_esn.common.run_warnings import recording
from tff_esn.runs.tables import Cell


@dataclasses.dataclass(frozen=True)
class ConstantConfig:
    """A toy algorithm's config: the class it always predicts (``None``: the true labels)."""

    predict: int | None = 0
    seed: int = 0


def run_constant(dataset, split, config):
    out = {}
    for group in ("train", "val", "test"):
        ids = getattr(split, group)
        if not ids:
            out[group] = None
            continue
        y = np.concatenate([dataset.clients[c].y for c in ids])
        guess = y if config.predict is None else np.full_like(y, config.predict)
        out[group] = split_report(y, np.eye(dataset.n_classes)[guess], dataset.n_classes)
    return {**out, "communication": {"up_floats_per_client": 0, "down_floats_per_client": 0, "rounds": 0},
            "model": toy_model(dataset)}


@pytest.fixture
def constant(monkeypatch):
    monkeypatch.setattr(algorithms, "_REGISTRY", dict(algorithms.available_algorithms()))  # providers loaded first
    return algorithms.register_algorithm("constant-test", ConstantConfig, run_constant, tff=False)


def test_any_registered_algorithm_that_predicts_one_class_is_flagged_and_warned(constant):
    data = random_dataset(n_clients=6, seed=1)
    record = algorithms.run_algorithm(algorithms.resolve_run("constant-test", data, config=ConstantConfig(predict=1)),
                                      data, default_split(data))
    assert all(ONE_CLASS in record["result_check"][g] for g in ("val", "test"))
    assert any("constant-test: test: every prediction is class 1" in w for w in record["warnings"])
    perfect = algorithms.run_algorithm(algorithms.resolve_run("constant-test", data, config=ConstantConfig(predict=None)),
                                       data, default_split(data))
    assert perfect["result_check"] == {"val": [], "test": []}
    assert not [w for w in perfect["warnings"] if "constant-test" in w]


@pytest.mark.parametrize("accuracy, flagged", [(0.5, True), (0.6, True), (0.61, False)])
def test_not_beating_the_majority_class_is_flagged(accuracy, flagged):
    section = {"accuracy": accuracy, "balanced_accuracy": 0.5, "label_counts": [6, 4], "prediction_counts": [5, 5]}
    baselines = {"majority": {"class": 0, "test": {"accuracy": 0.6}, "val": None}}
    with recording() as said:
        flags = check_result("x", {"test": section, "val": None}, baselines)
    assert flags == {"test": [NOT_ABOVE_MAJORITY] if flagged else []}
    assert bool(said) == flagged
    assert Cell((accuracy,), 1, FLAG_MARK if flags["test"] else "").text().endswith(FLAG_MARK) == flagged


def test_a_single_class_test_group_is_not_a_collapse():
    section = {"accuracy": 1.0, "label_counts": [0, 7], "prediction_counts": [0, 7]}
    with recording() as said:
        assert check_result("x", {"test": section}, {"majority": {"test": {"accuracy": 0.9}}}) == {"test": []}
    assert said == []


@pytest.mark.parametrize("nrmse, flagged", [(1.2, True), (1.0, True), (0.4, False)])
def test_a_real_valued_run_no_better_than_the_training_mean_is_flagged(nrmse, flagged):
    from tff_esn.common.result_check import NOT_ABOVE_MEAN
    from tff_esn.common.tasks import Task

    baselines = {"training_mean": {"val": {"nrmse": 1.0}, "test": {"nrmse": 1.0}}}
    with recording() as said:
        flags = check_result("x", {"val": {"nrmse": 0.3}, "test": {"nrmse": nrmse}}, baselines, Task("regress"))
    assert flags == {"val": [], "test": [NOT_ABOVE_MEAN] if flagged else []}
    assert len(said) == int(flagged) and (not said or "x: test: NRMSE" in str(said[0]))


@pytest.mark.parametrize("nrmse, flags", [(0.2, []), (0.5, ["not above persistence"]),
                                          (1.1, ["not above training mean", "not above persistence"])])
def test_a_forecast_no_better_than_persistence_is_flagged(nrmse, flags):
    from tff_esn.common.tasks import Task

    baselines = {"training_mean": {"test": {"nrmse": 1.0}}, "persistence": {"horizon": 2, "test": {"nrmse": 0.4}}}
    with recording() as said:
        found = check_result("x", {"test": {"nrmse": nrmse}}, baselines, Task("forecast", 2))
    assert found == {"test": flags} and len(said) == len(flags)
    assert all("x: test: NRMSE" in str(w) for w in said)
    said_persistence = any("persistence's 0.4: repeating the target's value" in str(w) for w in said)
    assert said_persistence == ("not above persistence" in flags)


@pytest.mark.parametrize("r2, flagged", [(-50.8, True), (0.0, True), (0.3, False)])
def test_a_real_valued_result_without_training_baselines_is_flagged_against_the_groups_own_mean(r2, flagged):
    from tff_esn.common.result_check import NOT_ABOVE_GROUP_MEAN
    from tff_esn.common.tasks import Task

    with recording() as said:
        found = check_result("x", {"test": {"nrmse": 7.2, "r2": r2}, "val": {"nrmse": 0.5, "r2": 0.75}}, {},
                             Task("forecast", 1))
    assert found == {"test": [NOT_ABOVE_GROUP_MEAN] if flagged else [], "val": []}
    assert len(said) == int(flagged) and all("x: test: R² " in str(w) for w in said)
    baselines = {"training_mean": {"test": {"nrmse": 9.0}}}
    assert check_result("x", {"test": {"nrmse": 7.2, "r2": r2}}, baselines, Task("regress")) == {"test": []}


def test_a_dp_forecast_below_the_test_mean_is_flagged_in_its_record():
    from tff_esn.common.result_check import NOT_ABOVE_GROUP_MEAN
    from tff_esn.common.tasks import Task
    from tff_esn.data.seed_sources.generators import series_dataset
    from tff_esn.closed_form.configs import IncFedConfig
    from tff_esn.esn.hyperparameters import ReservoirConfig
    from tff_esn.privacy.config import PrivacyConfig

    from tff_esn.data.splits import get_split

    data = series_dataset("narma10", Task("forecast", 1), clients=4, steps=120)
    config = IncFedConfig(reservoir=ReservoirConfig(units=20, bias_scaling=1.0), washout=10, state_mode="all", l2=1e-6,
                          backend="tff", privacy=PrivacyConfig(dp_epsilon=0.05))
    record = algorithms.run_algorithm(algorithms.resolve_run("incfed", data, config=config), data,
                                      get_split("npz", data))
    assert record["test"]["r2"] <= 0 and NOT_ABOVE_GROUP_MEAN in record["result_check"]["test"]
    assert any("incfed: test: R² " in w for w in record["warnings"])
