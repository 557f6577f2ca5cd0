"""The gradient-trained family says what happened: a kept round at either end of the budget, FedCurv without effect,
a diverged candidate and a result below the closed form on the same states, each a warning and a flag."""

import dataclasses

import numpy as np
import pytest

from tff_esn import ReservoirConfig
from tff_esn.cli.summary import summary_line
from tff_esn.common.run_warnings import recording
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.federated.configs import FedAvgConfig, FedCurvConfig, ThesisModelConfig
from tff_esn.federated.training import run_federated
from tff_esn.federated.training_check import (BELOW_CLOSED_FORM, DIVERGED, FIRST, LAST, NO_PENALTY,
                                              closed_form_reference, diverged_round)

SPLIT = Split("check", ("c0", "c1", "c2", "c3", "c4"), ("c5",), ("c6",))


def _separable(seed: int = 0, flip_val: bool = False, spread: float = 0.3) -> SequenceDataset:
    """Two classes the input mean's sign tells apart (overlapping as ``spread`` grows); ``flip_val``: the validation
    client's labels swapped, so every round of training scores worse on it than the one before."""
    rng = np.random.default_rng(seed)
    clients = {}
    for i in range(7):
        y = np.tile([0, 1], 5)
        x = rng.normal(size=(10, 6, 2)) * spread + (2.0 * y - 1.0)[:, None, None]
        clients[f"c{i}"] = ClientSequences(x.astype(np.float32), 1 - y if flip_val and i == 5 else y)
    return SequenceDataset(clients, 2, ("f0", "f1"), ("k0", "k1"), "separable")


def _config(cls=FedAvgConfig, *, lr=0.1, rounds=4, keep_best=True, **changes):
    model = ThesisModelConfig(reservoir=ReservoirConfig(units=8, seed=0), state_mode="mean", class_weight="balanced",
                              learning_rate=lr, optimizer="sgd", readout_inputs="standardized", epochs=2)
    return cls(model=model, rounds=rounds, clients_per_round=5, noise_std=0.0, progress=False, backend="sim",
               keep_best=keep_best, **changes)


def _run(data, config):
    with recording() as said:
        result = run_federated(data, SPLIT, config)
    return result, said


@pytest.mark.slow  # traces a round graph
def test_a_kept_first_round_is_flagged_and_said():
    result, said = _run(_separable(flip_val=True), _config())
    assert result["extra"]["kept_round"] == 1
    assert FIRST in result["training_check"] and LAST not in result["training_check"]
    assert any("the kept round is the first of 4" in m for m in said)


@pytest.mark.slow  # traces a round graph per penalty
def test_fedcurv_whose_penalties_all_tie_is_said_to_be_fedavg():
    result, said = _run(_separable(flip_val=True), _config(FedCurvConfig, penalty="auto"))
    scores = result["extra"]["selection"]["penalty"]["val_f1_macro"]
    assert len(scores) == 4 and len(set(scores)) == 1
    assert NO_PENALTY in result["training_check"]
    assert any("FedCurv reduced to FedAvg on this data: every penalty" in m for m in said)


@pytest.mark.slow  # traces a round graph
def test_a_kept_last_round_of_the_budget_is_flagged_not_converged():
    result, said = _run(_separable(), _config(lr=0.01, rounds=3))
    assert result["extra"]["kept_round"] == result["extra"]["rounds_run"] == 3
    assert LAST in result["training_check"] and FIRST not in result["training_check"]
    assert any("budget's last (3): training had not converged" in m for m in said)


@pytest.mark.slow  # traces a round graph
def test_fedcurv_at_penalty_0_and_a_result_below_the_closed_form_are_flagged():
    result, said = _run(_separable(), _config(FedCurvConfig, lr=1e-4, rounds=1, penalty=0.0, keep_best=False))
    reference = result["extra"]["closed_form_reference"]
    assert reference["test"]["accuracy"] == 1.0 and reference["test"]["majority_accuracy"] == 0.5
    assert result["test"]["accuracy"] < 0.9
    assert result["training_check"] == [NO_PENALTY, BELOW_CLOSED_FORM]
    assert any("its penalty is 0" in m for m in said) and any("below the closed form's" in m for m in said)
    record = {"algorithm": "fedcurv", "data": "separable", "test": result["test"],
              "communication": result["communication"], "seconds": 1.0, "training_check": result["training_check"]}
    assert summary_line(record, "m.json").endswith(f"| ⚠ {NO_PENALTY}; {BELOW_CLOSED_FORM} → m.json")


@pytest.mark.slow  # traces a round graph
def test_a_learnt_run_is_not_flagged():
    config = dataclasses.replace(_config(lr=1.0, rounds=40, patience=4), clients_per_round=1)
    result, said = _run(_separable(spread=3.0), config)
    assert 1 < result["extra"]["kept_round"] < result["extra"]["rounds_run"] < 40
    assert result["test"]["accuracy"] > 0.6
    assert result["training_check"] == [] and said == []


def test_a_round_with_a_non_finite_loss_or_a_dropped_update_diverged():
    rows = [{"round": 1, "train_loss": 0.5, "clients": 3, "accepted_clients": 3},
            {"round": 2, "train_loss": float("nan"), "clients": 3, "accepted_clients": 3},
            {"round": 3, "train_loss": 0.4, "clients": 3, "accepted_clients": 2}]
    assert diverged_round(rows, filtered=False) == 2
    assert diverged_round(rows[2:], filtered=False) == 3
    assert diverged_round(rows[2:], filtered=True) is None  # a client filter rejects finite updates too
    assert diverged_round([{"round": 1, "clients": 3}], filtered=False) is None  # DP rows carry no loss


def test_a_diverged_candidate_is_said_with_its_setting():
    from tff_esn.federated.training_check import training_flags

    selection = {"candidates": [{"client_lr": 1.0, "diverged": 2, "kept_round": 1},
                                {"client_lr": 0.1, "diverged": None, "kept_round": 3},
                                {"client_lr": 10.0, "diverged": None, "kept_round": 0}]}  # left out of the choice
    with recording() as said:
        flags = training_flags("fedavg", {}, kept=None, budget=5, selection=selection)
    assert flags == [DIVERGED]
    assert said == ["fedavg: the candidate client_lr 1 diverged (non-finite training loss, updates or outputs) in "
                    "round 2; a smaller learning rate trains it",
                    "fedavg: the candidate client_lr 10 diverged (non-finite training loss, updates or outputs); a "
                    "smaller learning rate trains it"]


def test_the_closed_form_reference_is_the_ridge_readout_with_lambda_chosen_on_validation():
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(1)
    states = rng.normal(size=(60, 5))
    labels = rng.integers(0, 3, size=60)
    states[np.arange(60), labels] += 1.5
    groups = {"val": (states[:20] + rng.normal(size=(20, 5)), labels[:20]), "test": (states[20:40], labels[20:40])}
    reference = closed_form_reference([(states[:25], labels[:25]), (states[25:], labels[25:])], groups, 3)
    ridge = Ridge(alpha=reference["l2"], fit_intercept=False).fit(np.hstack([states, np.ones((60, 1))]), np.eye(3)[labels])
    predicted = ridge.predict(np.hstack([groups["test"][0], np.ones((20, 1))])).argmax(1)
    assert reference["test"]["accuracy"] == pytest.approx(np.mean(predicted == groups["test"][1]))
    assert reference["majority_class"] == np.bincount(labels).argmax()
    assert reference["test"]["majority_accuracy"] == pytest.approx(np.mean(groups["test"][1] == reference["majority_class"]))


@pytest.mark.slow  # fits Keras readouts
def test_thesis_central_says_its_first_kept_epoch_and_records_its_candidates():
    from tff_esn.federated.centralized import train_centralized

    model = _config(lr="auto").model
    with recording() as said:
        _, report = train_centralized(_separable(flip_val=True), SPLIT, model.replace(epochs=8), patience=3)
    assert [c["kept_epoch"] for c in report["selection"]["candidates"]] == [1, 1, 1]
    assert report["training_check"][0] == FIRST
    assert any("thesis-central: the kept epoch is the first of 8" in m for m in said)
    reference = report["closed_form_reference"]  # λ chosen on the flipped validation client too: the largest
    assert reference["l2"] == 1e3 and reference["test"]["majority_accuracy"] == 0.5
