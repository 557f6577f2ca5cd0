"""The thesis models on own data: standardised readout inputs (federated feature statistics) and the
client learning rate / FedCurv penalty chosen on validation clients only."""

import dataclasses

import numpy as np
import pytest
import tensorflow_federated as tff

from closed_form_data import random_dataset
from tff_esn import ReservoirConfig
from tff_esn.data.sequences import Split
from tff_esn.esn.ridge import RidgeStats
from tff_esn.federated import learning_process, sample_clients
from tff_esn.federated.clients import CachedStates
from tff_esn.federated.configs import (CLIENT_LR_GRIDS, PENALTY_GRID, FedAvgConfig, FedCurvConfig, ThesisModelConfig,
                                       chosen_index)
from tff_esn.federated.model import build_thesis_model, thesis_loss
from tff_esn.federated.simulation import SimulatedProcess
from tff_esn.esn.standardization import MIN_VARIANCE, federated_standardization
from tff_esn.federated.training import run_federated, select_settings


@pytest.mark.parametrize("seed", range(8))
def test_federated_statistics_are_numpys_on_the_pooled_states_for_any_client_split(seed):
    rng = np.random.default_rng(seed)
    units = int(rng.integers(1, 12))
    pooled = rng.normal(rng.normal(size=units), rng.uniform(0.01, 3, size=units), size=(int(rng.integers(5, 60)), units))
    pooled[:, 0] = 0.25  # a constant unit keeps σ = 1
    cuts = np.sort(rng.choice(np.arange(1, len(pooled)), size=min(int(rng.integers(1, 6)), len(pooled) - 1),
                              replace=False))
    parts = [p.astype(np.float32) for p in np.split(pooled, cuts)]
    if rng.random() < 0.5:  # per-step states (n, T, U) count every row
        parts = [p[:, None, :] for p in parts]
    got = federated_standardization(parts)
    rows = np.concatenate([p.reshape(-1, units) for p in parts]).astype(np.float64)
    np.testing.assert_allclose(got.mean, rows.mean(0), rtol=1e-6, atol=1e-6)
    std = rows.std(0)
    want = np.where(std ** 2 > MIN_VARIANCE, std, 1.0)
    np.testing.assert_allclose(got.scale, want, rtol=1e-5)
    assert got.scale[0] == 1.0
    applied = got.apply(rows)
    assert applied.dtype == np.float32
    np.testing.assert_allclose(applied[:, 1:].mean(0), 0, atol=1e-4)


def test_the_secure_sum_gives_the_plain_sums_statistics():
    rng = np.random.default_rng(3)
    parts = [np.tanh(rng.normal(size=(n, 4))).astype(np.float32) for n in (5, 9, 3)]
    plain = federated_standardization(parts)
    quantised = federated_standardization(parts, lambda stats: RidgeStats.sum(
        [RidgeStats(s.A, np.round(s.B * 2 ** 20) / 2 ** 20, s.n, s.clients, s.bias) for s in stats]))
    np.testing.assert_allclose(quantised.mean, plain.mean, atol=1e-5)
    np.testing.assert_allclose(quantised.scale, plain.scale, rtol=1e-4)


def _standardized_source(seed: int):
    model = ThesisModelConfig(reservoir=ReservoirConfig(units=6, spectral_radius=0.9, seed=seed), batch_size=4,
                              learning_rate=0.05, state_mode="last", class_weight=(1.0, 3.0),
                              readout_inputs="standardized")
    data = random_dataset(n_clients=4, steps=7, features=2, n_classes=2, seed=seed)
    source = CachedStates(data.clients, model, seed=seed, shuffle=True, standardize=federated_standardization)
    return model, source


@pytest.mark.slow  # traces a round graph per run
def test_standardised_clients_run_the_same_rounds_in_sim_and_tff_bit_for_bit():
    model, source = _standardized_source(1)
    assert source.standardization is not None
    states = np.concatenate([source.arrays(c, 0)[0] for c in source.ids])
    np.testing.assert_allclose(states.mean(0), 0, atol=1e-5)
    first = source.dataset(source.ids[0], 0)

    def model_fn():
        return tff.learning.models.from_keras_model(build_thesis_model(6, model, readout_only=True),
                                                    loss=thesis_loss(model), input_spec=first.element_spec)

    kwargs = dict(client_learning_rate=0.05, server_learning_rate=1.0)
    for process, data in ((learning_process(model_fn, **kwargs), source.datasets),
                          (learning_process(model_fn, runtime="sim", **kwargs), source.in_memory)):
        state = process.initialize()
        weights = []
        for r in range(3):
            state = process.next(state, data(sample_clients(source.ids, 3, 1, r), r)).state
            weights.append([np.asarray(w) for w in process.get_model_weights(state).trainable])
        if process.__class__ is SimulatedProcess:
            for a, b in zip(reference, weights):
                for x, y in zip(a, b):
                    np.testing.assert_array_equal(y, x)
        reference = weights


def _dataset_and_split(seed=0):
    data = random_dataset(n_clients=7, steps=8, features=2, n_classes=2, seed=seed)
    return data, Split("t", ("c0", "c1", "c2", "c3", "c4"), ("c5",), ("c6",))


def _config(cls=FedAvgConfig, **changes):
    model = ThesisModelConfig(reservoir=ReservoirConfig(units=8, seed=0), state_mode="mean", class_weight="balanced",
                              learning_rate="auto", optimizer="sgd", readout_inputs="standardized", epochs=2)
    return cls(model=model, rounds=3, clients_per_round=3, noise_std=0.0, progress=False, backend="sim", **changes)


def test_selection_scores_candidates_on_validation_and_ties_go_to_the_lower_loss_then_the_smaller_value():
    assert chosen_index([(0.5, 0.3), (0.7, 0.9), (0.7, 0.4), (0.7, 0.4)]) == 2
    assert chosen_index([(float("nan"), 0.1), (0.2, float("nan"))]) == 1
    seen = []

    def fake_run(candidate):
        seen.append((candidate.model.learning_rate, candidate.penalty))
        f1 = {0.01: 0.4, 0.1: 0.9, 1.0: 0.6}[candidate.model.learning_rate] + (candidate.penalty == 1e-2) * 0.05
        return {"val": {"f1_macro": f1}, "extra": {"kept_round": 1, "rounds": [{"val_log_loss": 0.5}]}}

    _, split = _dataset_and_split()
    config, record, result = select_settings(_config(FedCurvConfig, penalty="auto"), split, None, fake_run)
    assert config.model.learning_rate == 0.1 and config.penalty == 1e-2
    assert seen == [(lr, 0.0) for lr in CLIENT_LR_GRIDS["sgd"]] + [(0.1, p) for p in PENALTY_GRID[1:]]
    assert record["client_lr"]["rule"] == record["penalty"]["rule"] == "validation"
    assert result["val"]["f1_macro"] == pytest.approx(0.95)


def test_a_diverged_candidate_is_left_out_of_the_choice_with_a_warning_and_all_diverged_is_one_line():
    from tff_esn.common.metrics import NonFiniteScores
    from tff_esn.common.run_warnings import recording

    def diverging(candidate):
        if candidate.model.learning_rate >= 0.1:
            raise NonFiniteScores(f"fedavg: round 2: the readout diverged at client lr {candidate.model.learning_rate:g}")
        return {"val": {"f1_macro": 0.4}, "extra": {"kept_round": 1, "rounds": [{"val_log_loss": 0.5}]}}

    _, split = _dataset_and_split()
    with recording() as said:
        config, record, result = select_settings(_config(), split, None, diverging)
    assert config.model.learning_rate == 0.01 and result["val"]["f1_macro"] == 0.4
    assert said == [f"fedavg: round 2: the readout diverged at client lr {lr:g}: candidate lr={lr:g} is left out of "
                    "the choice" for lr in (0.1, 1.0)]
    assert np.isnan(record["client_lr"]["val_f1_macro"][1:]).all()
    with pytest.raises(NonFiniteScores, match="every candidate's readout diverged .* give --client-lr below"):
        select_settings(_config(), split, None, lambda c: diverging(dataclasses.replace(
            c, model=dataclasses.replace(c.model, learning_rate=1.0))))


def test_without_validation_clients_auto_takes_the_stated_defaults_and_says_why():
    _, split = _dataset_and_split()
    config, record, result = select_settings(_config(FedCurvConfig, penalty="auto"), dataclasses.replace(split, val=()),
                                             None, lambda c: pytest.fail("nothing to choose on"))
    assert result is None and config.model.learning_rate == 0.1 and config.penalty == 1e-4
    assert record["client_lr"]["rule"] == "default" and "validation" in record["client_lr"]["reason"]


@pytest.mark.slow  # traces a round graph per run
def test_the_choice_never_reads_the_test_clients():
    data, split = _dataset_and_split()
    config = _config(FedCurvConfig, penalty="auto")
    first = run_federated(data, split, config)
    flipped = dataclasses.replace(data.clients["c6"], y=1 - data.clients["c6"].y)
    second = run_federated(dataclasses.replace(data, clients={**data.clients, "c6": flipped}), split, config)
    assert first["extra"]["selection"] == second["extra"]["selection"]
    assert first["extra"]["kept_round"] == second["extra"]["kept_round"]
    np.testing.assert_array_equal(first["extra"]["weights"]["kernel"], second["extra"]["weights"]["kernel"])
    assert first["test"]["accuracy"] == pytest.approx(1 - second["test"]["accuracy"])
    assert first["extra"]["standardization"]["features"] == 8


@pytest.mark.slow  # traces a round graph per run
def test_reruns_are_bit_identical_and_fedcurv_at_penalty_0_is_fedavg():
    data, split = _dataset_and_split(1)
    fixed = dict(keep_best=False)
    avg = _config(**fixed)
    avg = dataclasses.replace(avg, model=avg.model.replace(learning_rate=0.1))
    a, b = run_federated(data, split, avg), run_federated(data, split, avg)
    np.testing.assert_array_equal(a["extra"]["weights"]["kernel"], b["extra"]["weights"]["kernel"])
    curv = run_federated(data, split, FedCurvConfig(**{f.name: getattr(avg, f.name) for f in dataclasses.fields(avg)},
                                                    penalty=0.0))
    np.testing.assert_array_equal(curv["extra"]["weights"]["kernel"], a["extra"]["weights"]["kernel"])
    np.testing.assert_array_equal(curv["extra"]["weights"]["bias"], a["extra"]["weights"]["bias"])


@pytest.mark.slow  # traces a round graph per run
def test_fedcurvs_penalty_acts_where_clients_differ():
    """Label-skewed clients (each holds mostly one class): a penalty of 1 moves the weights off FedAvg's."""
    data = random_dataset(n_clients=6, steps=8, features=2, n_classes=2, seed=4)
    skewed = {}
    for i, (cid, c) in enumerate(data.clients.items()):
        keep = c.y == (i % 2) if i < 4 else np.ones(len(c.y), bool)
        keep[0] = True
        skewed[cid] = dataclasses.replace(c, x=c.x[keep], y=c.y[keep])
    data = dataclasses.replace(data, clients=skewed)
    split = Split("skew", ("c0", "c1", "c2", "c3"), ("c4",), ("c5",))
    config = _config(FedCurvConfig, keep_best=False, penalty=0.0)
    config = dataclasses.replace(config, model=config.model.replace(learning_rate=0.1))
    free = run_federated(data, split, config)
    held = run_federated(data, split, dataclasses.replace(config, penalty=1.0))
    assert np.max(np.abs(free["extra"]["weights"]["kernel"] - held["extra"]["weights"]["kernel"])) > 1e-3


def test_standardised_inputs_need_cached_states():
    with pytest.raises(ValueError, match="--states cached"):
        dataclasses.replace(_config(), states="faithful")
