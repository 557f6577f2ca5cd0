"""Model selection of the closed-form family: exact fold readouts, the search and the flags that skip it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from closed_form_data import random_dataset
from sklearn.linear_model import Ridge

from tff_esn.registry import algorithms
from tff_esn.closed_form import selection
from tff_esn.closed_form.run import Run
from tff_esn.data.sequences import Split
from tff_esn.registry.algorithms import resolve_run
from tff_esn.esn.ridge import RidgeStats, one_hot, with_bias
from tff_esn.esn.states_numpy import states_and_statistics


def _config(name="centralized", **settings):
    return algorithms.config_from_flags(algorithms.get_algorithm(name).config,
                                        {"units": 15, "seed": 2, "bias_scaling": 1.0, **settings})


def _no_val(data, n_test=1):
    ids = data.client_ids
    return Split("own", tuple(ids[:-n_test]), (), tuple(ids[-n_test:]))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("state_mode", ["mean", "all"])
def test_every_fold_readout_is_sklearn_ridge_on_the_pooled_training_data_without_the_fold(seed, state_mode):
    """Property over random splits (local hold-out and client folds): the readout each fold is
    scored with equals scikit-learn's Ridge fitted on the states of every training sequence outside
    the fold (a readout-bias column, no intercept), at every λ of the grid."""
    rng = np.random.default_rng(seed)
    n_clients = int(rng.choice([4, 6, 13]))
    data = random_dataset(n_clients=n_clients, seed=seed, sizes=rng.integers(2, 14, size=n_clients))
    grid = (1e-3, 1e-1, 1e1)
    run = Run(data, _no_val(data), _config(l2="auto", l2_grid=grid, state_mode=state_mode), "check")
    seen = []

    def sweep(g):
        total = RidgeStats.sum(run.stats())
        seen.append((set(run.train_ids), [total.solve(l2) for l2 in g]))
        return [run.scorer(w) for w in seen[-1][1]]

    run.choose_l2(sweep)
    carving = run.carving
    assert carving.rule == ("client folds" if n_clients >= 11 else "local hold-out")
    assert len(seen) == len(carving.folds)
    for k, (owners, readouts) in enumerate(seen):
        training = carving.fold(k).train
        assert owners == {carving.owner[u] for u in training}
        states, targets = [], []
        for unit in training:
            part = carving.dataset.clients[unit]
            x = run.harvester.stats(run.weights, unit)  # the cached statistics are the unit's own
            assert x.n == (len(part) * part.x.shape[1] if state_mode == "all" else len(part))
            feats = run.harvester.features(run.weights, unit)
            if state_mode == "all":
                w = run.weights
                s, _ = states_and_statistics(part.x, w.kernel, w.recurrent, w.bias, w.gain, w.leaky, keep="all")
                states.append(s.reshape(-1, w.units))
                targets.append(one_hot(np.repeat(part.y, part.x.shape[1]), data.n_classes))
            else:
                states.append(feats.states)
                targets.append(one_hot(feats.labels, data.n_classes))
        design, y = with_bias(np.concatenate(states)), np.concatenate(targets)
        for l2, readout in zip(grid, readouts):
            reference = Ridge(alpha=l2, fit_intercept=False, solver="cholesky").fit(design, y).coef_
            np.testing.assert_allclose(readout, reference, rtol=2e-4, atol=2e-5)


def test_the_choice_is_the_best_pooled_fold_score_and_a_constant_predictor_cannot_win():
    data = random_dataset(n_clients=5, seed=3, sizes=[12, 12, 12, 12, 12])
    grid = (1e-4, 1e0, 1e6)
    record = algorithms.run_algorithm(algorithms.resolve_run("centralized", data, config=_config(l2="auto", l2_grid=grid, state_mode="mean",
                                              objective="balanced_accuracy")), data, _no_val(data))
    chosen = record["l2_selection"]
    assert chosen["rule"] == "cross-validation" and chosen["objective"] == "balanced_accuracy"
    assert chosen["l2"] == grid[selection.chosen_l2(chosen["scores"])]
    labels = np.array([0, 0, 0, 0, 1, 2])
    constant, perfect = np.eye(3)[np.zeros(6, int)], np.eye(3)[labels]  # readout outputs, one row per sequence
    assert selection.objective_score("balanced_accuracy", labels, constant, 3) == pytest.approx(1 / 3)
    assert selection.objective_score("accuracy", labels, constant, 3) == pytest.approx(4 / 6)
    assert selection.objective_score("f1_macro", labels, perfect, 3) == 1.0
    targets = np.array([0.5, 1.5, -1.0])
    assert selection.objective_score(selection.NEG_MSE, targets, targets[:, None] + 0.5, 1) == pytest.approx(-0.25)


def test_state_mode_and_reservoir_search_record_every_candidate_and_use_the_best():
    data = random_dataset(n_clients=5, seed=5, sizes=[10, 10, 10, 10, 10])
    config = _config(l2="auto", state_mode="auto", reservoir_search=("leaky", "input_scaling"),
                     objective="balanced_accuracy")
    record = algorithms.run_algorithm(algorithms.resolve_run("centralized", data, config=config), data, _no_val(data))
    chosen = record["selection"]
    table = chosen["candidates"]
    assert [c["state_mode"] for c in table[:3]] == ["mean", "last", "all"]
    assert len(table) == 3 + 2 and chosen["budget_harvests"] == 1 + 2  # the three modes share one harvest
    assert chosen["score"] == max(c["score"] for c in table)
    fixed = {"state_mode": chosen["state_mode"], "leaky": chosen["leaky"], "input_scaling": chosen["input_scaling"]}
    again = algorithms.run_algorithm(algorithms.resolve_run("centralized", data, config=_config(l2=record["l2_selection"]["l2"], **fixed)),
                                     data, _no_val(data))
    assert again["test"] == record["test"] and "selection" not in again and "validation" not in again


def test_flags_fix_their_setting_and_skip_that_part_of_the_search():
    run = resolve_run("centralized", "npz:own.npz", state_mode="last", leaky=0.5)
    config, settings = run.config, run.record
    assert config.state_mode == "last" and config.l2 == "auto"
    assert config.reservoir_search == ("spectral_radius", "input_scaling", "units")
    assert settings["state_mode"]["origin"] == "flag" and settings["reservoir_search"]["origin"] == "own-data default"
    default = resolve_run("centralized", "npz:own.npz").config
    assert default.state_mode == "auto" and default.reservoir_search == selection.SEARCHABLE
    assert default.objective == "balanced_accuracy"
    seed = resolve_run("centralized", "synthetic-wesad").config
    assert seed.state_mode == "all" and seed.reservoir_search == () and seed.objective == "accuracy"
    data = random_dataset(n_clients=4, seed=1, sizes=[9, 9, 9, 9])
    config = dataclasses.replace(config, reservoir=dataclasses.replace(config.reservoir, units=12))
    record = algorithms.run_algorithm(algorithms.resolve_run("centralized", data, config=config), data, _no_val(data))
    assert {c["state_mode"] for c in record["selection"]["candidates"]} == {"last"}
    assert "leaky" not in record["selection"]["candidates"][0]
    fixed = dataclasses.replace(config, l2=0.1)
    run = Run(data, _no_val(data), fixed, "fixed")
    assert run.choose_l2(lambda grid: pytest.fail("a given λ is not searched")) == 0.1


def test_private_statistics_choose_nothing():
    data = random_dataset(n_clients=5, seed=2, sizes=[8] * 5)
    config = _config("pfedrr", l2="auto", state_mode="auto", reservoir_search=("leaky",), secure_aggregation=True)
    record = algorithms.run_algorithm(algorithms.resolve_run("pfedrr", data, config=config), data, _no_val(data))
    assert record["selection"]["rule"] == "default" and "privacy" in record["selection"]["reason"]
    assert record["selection"]["state_mode"] == "mean" and record["l2_selection"]["rule"] == "default"


@pytest.mark.parametrize("name", ["incfed", "fedavg-ridge", "partial-incfed", "pfedrr", "fedip", "ensemble",
                                  "alignment"])
def test_every_closed_form_algorithm_cross_validates_on_own_data(name):
    data = random_dataset(n_clients=4, seed=4, sizes=[9, 9, 9, 9])
    extra = {"backend": "numpy"} if name in ("incfed", "fedip") else {}
    config = _config(name, l2="auto", state_mode="auto", objective="balanced_accuracy",
                     **({"rounds": 1} if name == "fedip" else {}), **extra)
    record = algorithms.run_algorithm(algorithms.resolve_run(name, data, config=config), data, _no_val(data))
    assert record["l2_selection"]["rule"] == "cross-validation"
    assert record["validation"]["rule"] == "local hold-out"
    assert record["extra"]["train_clients"] == 3
    assert record["train"]["n"] == sum(len(data.clients[c]) for c in data.client_ids[:3])


@pytest.mark.slow
def test_incfed_backends_make_the_same_choice():
    data = random_dataset(n_clients=4, seed=6, sizes=[9, 9, 9, 9])
    records = [algorithms.run_algorithm(algorithms.resolve_run("incfed", data, config=_config("incfed", l2="auto", state_mode="auto", backend=backend,
                                                reservoir_search=("leaky",))), data, _no_val(data))
               for backend in ("numpy", "tff")]
    assert records[0]["selection"] == records[1]["selection"]
    assert records[0]["l2_selection"] == records[1]["l2_selection"]
    assert records[0]["test"]["accuracy"] == records[1]["test"]["accuracy"]


@pytest.mark.parametrize("seed", range(6))
def test_the_downdated_fold_scores_equal_a_solve_per_fold(seed):
    """Property: the state search's scores from one eigendecomposition (Woodbury downdate per fold)
    equal the scores of a ridge solve on each fold's remaining statistics."""
    rng = np.random.default_rng(seed)
    n_clients = int(rng.choice([3, 5, 12]))
    data = random_dataset(n_clients=n_clients, seed=seed, sizes=rng.integers(3, 12, size=n_clients))
    grid = (1e-2, 1e0, 1e2)
    for mode in ("mean", "last"):
        run = Run(data, _no_val(data), _config(l2="auto", l2_grid=grid, state_mode=mode, units=30,
                                                objective="balanced_accuracy"), "check")
        downdated = run._downdated_scores(grid)
        assert downdated is not None
        direct = run.cross_validate(lambda g: run.exact_sweep(run.stats(scored=False))(g), grid)
        assert downdated == pytest.approx(direct, abs=1e-12)


def test_alignment_alpha_auto_is_the_best_validated_weight():
    data = random_dataset(n_clients=4, seed=7, sizes=[10, 10, 10, 10])
    record = algorithms.run_algorithm(algorithms.resolve_run("alignment", data, config=_config("alignment", l2="auto", alpha="auto", state_mode="mean",
                                              objective="balanced_accuracy")), data, _no_val(data))
    chosen = record["extra"]["alpha_selection"]
    assert chosen["values"][0] == 0.9 and set(chosen["values"]) == set(selection.ALPHA_GRID)
    best = max(chosen["scores"])
    assert record["extra"]["alpha"] == chosen["values"][chosen["scores"].index(best)]
    given = algorithms.run_algorithm(algorithms.resolve_run("alignment", data, config=_config("alignment", l2=record["l2_selection"]["l2"],
                                             alpha=record["extra"]["alpha"], state_mode="mean")), data, _no_val(data))
    assert given["test"] == record["test"]
    assert resolve_run("alignment", "ts:x/y").config.alpha == "auto"
    assert resolve_run("alignment", "synthetic-wesad").config.alpha == 0.9


UEA_TS = "/work/uea/ex/aeon/datasets/data"
UEA_SETS = ("JapaneseVowels", "BasicMotions", "GunPoint", "PickupGestureWiimoteZ")


@pytest.mark.slow
@pytest.mark.parametrize("name", UEA_SETS)
def test_default_closed_form_runs_reach_the_baselines_on_ucr_uea_sets(name):
    """Default flags, 5 IID training clients, the files' test split, no validation group: centralized and
    incfed (numpy) reach max(logistic regression, esnfed 1.7.1 with its README defaults) − 0.02."""
    import os

    pytest.importorskip("esnfed")
    from bench.own_data import esnfed_cell, load, run

    if not os.path.exists(f"{UEA_TS}/{name}/{name}_TRAIN.ts"):
        pytest.skip(f"{name} is not available")
    data, split = load(name, UEA_TS)
    esnfed_accuracy, _ = esnfed_cell(data, split)
    for algorithm, flags in (("centralized", {}), ("incfed", {"backend": "numpy"})):
        record = run(algorithm, data, split, **flags)
        logistic = record["baselines"]["logistic_regression"]["test"]["accuracy"]
        assert record["validation"]["rule"] == "local hold-out"
        assert record["test"]["accuracy"] >= max(logistic, esnfed_accuracy) - 0.02, (algorithm, record["selection"])


def test_runs_in_a_shared_scope_share_the_carving_and_its_harvest():
    from tff_esn.closed_form.run import shared_harvests

    data = random_dataset(n_clients=4, seed=8, sizes=[8] * 4)
    config = _config(l2="auto", state_mode="mean")
    with shared_harvests():
        first, second = Run(data, _no_val(data), config, "a"), Run(data, _no_val(data), config, "b")
        assert first.carving is second.carving and first.harvester is second.harvester
    assert Run(data, _no_val(data), config, "c").carving is not first.carving
