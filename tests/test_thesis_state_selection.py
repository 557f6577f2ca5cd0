"""The thesis models on own data take the state mode and reservoir the closed-form selection chooses."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tff_esn.registry import algorithms
from tff_esn.closed_form.configs import ReadoutConfig
from tff_esn.closed_form.run import Run
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.registry.algorithms import resolve_run
from tff_esn.federated.commands import choose_states
from tff_esn.federated.configs import for_data
from tff_esn.privacy.config import PrivacyConfig

SPLIT = Split("own", ("c0", "c1", "c2"), (), ("c3",))


def _last_step_data(seed: int = 0, steps: int = 30) -> SequenceDataset:
    """Two classes told apart by the last step's input only: the last state separates them, the mean blurs it."""
    rng = np.random.default_rng(seed)
    clients = {}
    for i in range(4):
        y = rng.integers(0, 2, size=12)
        x = rng.normal(size=(12, steps, 2))
        x[:, -1, 0] += 3.0 * (2 * y - 1)
        clients[f"c{i}"] = ClientSequences(x.astype(np.float32), y)
    return SequenceDataset(clients, 2, ("f0", "f1"), ("a", "b"), "random")


@pytest.mark.parametrize("algorithm", ["fedavg", "fedcurv", "thesis-central"])
def test_the_gradient_models_take_the_exact_cross_validated_choice_among_their_state_modes(algorithm):
    data = _last_step_data()
    config = resolve_run(algorithm, data, units=20).config
    assert config.model.state_mode == "auto" and config.model.reservoir_search
    chosen, record = choose_states(data, SPLIT, config)
    model = chosen.model
    assert record["rule"] == "cross-validation" and record["state_mode"] == model.state_mode == "last"
    assert model.reservoir_search == () and {c["state_mode"] for c in record["candidates"]} == {"mean", "last"}
    assert {n: getattr(model.reservoir, n) for n in ("leaky", "spectral_radius", "input_scaling")} == \
        {n: record[n] for n in ("leaky", "spectral_radius", "input_scaling")}
    reference = Run(data, SPLIT, ReadoutConfig(reservoir=config.model.reservoir, l2="auto", state_mode="auto",
                                               objective="balanced_accuracy",
                                               reservoir_search=config.model.reservoir_search), "ref",
                    modes=("mean", "last"))
    assert reference.selection == record
    for_data(model, data, SPLIT.train)  # a resolved model the run accepts


def test_the_choice_never_reads_the_test_clients():
    data = _last_step_data(1)
    flipped = dataclasses.replace(data.clients["c3"], y=1 - data.clients["c3"].y)
    other = dataclasses.replace(data, clients={**data.clients, "c3": flipped})
    config = resolve_run("fedavg", data, units=20).config
    assert choose_states(data, SPLIT, config)[1] == choose_states(other, SPLIT, config)[1]


def test_flags_fix_their_part_and_skip_it():
    data = _last_step_data()
    config = resolve_run("fedavg", "npz:own.npz", leaky=0.5, units=20).config
    assert config.model.reservoir_search == ("spectral_radius", "input_scaling")
    chosen, record = choose_states(data, SPLIT, config)
    assert chosen.model.reservoir.leaky == 0.5 and "leaky" not in record
    assert all("leaky" not in c for c in record["candidates"])
    fixed = resolve_run("fedavg", "npz:own.npz", state_mode="mean", reservoir_search=()).config
    assert choose_states(data, SPLIT, fixed) == (fixed, None)


def test_privacy_settings_choose_nothing_and_say_why():
    data = _last_step_data()
    config = resolve_run("fedavg", data, units=20).config
    config = dataclasses.replace(config, privacy=PrivacyConfig(secure_aggregation=True))
    chosen, record = choose_states(data, SPLIT, config)
    assert record["rule"] == "default" and "privacy" in record["reason"]
    assert chosen.model.state_mode == "mean" and chosen.model.reservoir == config.model.reservoir


def test_an_unresolved_auto_state_mode_is_refused_with_the_fix_named():
    data = _last_step_data()
    with pytest.raises(ValueError, match="choose_states"):
        for_data(resolve_run("thesis-central", data).config.model, data, SPLIT.train)


def test_thesis_central_penalises_its_readout_on_own_data_and_not_on_the_thesis_data():
    assert resolve_run("thesis-central", "npz:own.npz").config.l2 == 1e-3
    assert resolve_run("thesis-central", "wesad").config.l2 == 0.0


@pytest.mark.slow  # three Keras fits
def test_a_thesis_central_run_records_and_uses_the_choice():
    data = _last_step_data(2)
    config = resolve_run("thesis-central", data, units=20, epochs=40, patience=10).config
    record = algorithms.run_algorithm(algorithms.resolve_run("thesis-central", data, config=config), data, SPLIT)
    assert record["selection"]["state_mode"] == "last"
    assert record["extra"]["selection"]["client_lr"]["rule"] == "validation"
    assert record["extra"]["l2"] == 1e-3 and record["extra"]["refit"]["epochs"] <= 40
    assert record["test"]["accuracy"] >= 0.9
