"""keep_best's off switch, and a resumed run that had already stopped early trains no further."""

import dataclasses

import numpy as np
import pytest

from tff_esn import ReservoirConfig
from tff_esn.cli import build_parser
from tff_esn.cli.run import request_of
from tff_esn.registry.launch import resolved
from tff_esn.federated import FedAvgConfig, ThesisModelConfig, run_federated

from closed_form_data import THESIS_SPLIT, random_thesis_dataset

MODEL = ThesisModelConfig(reservoir=ReservoirConfig(units=6, spectral_radius=0.9, seed=4), batch_size=4,
                          learning_rate=0.5)


def _config(argv):
    args = build_parser().parse_args(["run", "fedavg", "--data", "npz:own.npz", "--out", "o", *argv])
    return resolved(request_of(args)).config


def test_keep_best_has_both_switches_on_own_data():
    assert _config([]).keep_best is True  # the own-data default
    assert _config(["--no-keep-best"]).keep_best is False
    assert _config(["--no-keep-best", "--keep-best"]).keep_best is True
    args = build_parser().parse_args(["run", "fedavg", "--out", "o", "--keep-best"])  # the thesis default: off
    assert resolved(request_of(args)).config.keep_best is True


@pytest.mark.slow  # traces the round graph
def test_a_resumed_run_that_had_stopped_early_trains_no_further(tmp_path):
    data = random_thesis_dataset()
    config = FedAvgConfig(model=MODEL, rounds=40, clients_per_round=2, noise_std=0.0, keep_best=True, patience=2,
                          out=str(tmp_path), progress=False)
    first = run_federated(data, THESIS_SPLIT, config)
    ran = first["extra"]["rounds_run"]
    assert ran < 40 and ran - first["extra"]["kept_round"] == 2
    again = run_federated(data, THESIS_SPLIT, dataclasses.replace(config, resume=True))
    assert again["extra"]["rounds_run"] == ran and again["extra"]["kept_round"] == first["extra"]["kept_round"]
    for key in ("val", "test"):
        assert again[key] == first[key]
    np.testing.assert_array_equal(again["extra"]["weights"]["kernel"], first["extra"]["weights"]["kernel"])
    assert again["communication"] == first["communication"]


def test_without_keep_best_the_result_is_the_last_rounds_model():
    data = random_thesis_dataset()
    config = FedAvgConfig(model=MODEL, rounds=6, clients_per_round=2, noise_std=0.0, keep_best=False, progress=False)
    result = run_federated(data, THESIS_SPLIT, config)
    assert result["extra"]["kept_round"] == result["extra"]["rounds_run"] == 6
    assert result["val"]["accuracy"] == pytest.approx(result["extra"]["rounds"][-1]["val_accuracy"])
