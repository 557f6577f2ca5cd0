"""FedAvg and FedCurv continue from a saved model (``--init-from DIR``): the first round starts from its readout on
its states, another model is refused in one line before any work, and the run records where it started."""

import numpy as np
import pytest

from tff_esn import resolve_run, run_algorithm
from tff_esn.cli import main
from tff_esn.esn.model import Model, ModelFormatError
from tff_esn.federated import training

from closed_form_data import default_split, random_dataset
from test_model import fast_settings


def _settings(algorithm, out, **changes):
    dataset = random_dataset(n_clients=6, steps=12, n_classes=3)
    settings = {**fast_settings(algorithm, dataset, out), "readout_inputs": "standardized", **changes}
    return dataset, settings


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A FedAvg run's saved model (standardised readout inputs: its statistics go along)."""
    folder = tmp_path_factory.mktemp("saved")
    dataset, settings = _settings("fedavg", folder / "run")
    record = run_algorithm(resolve_run("fedavg", dataset, units=16, **settings), dataset, default_split(dataset))
    record.model.save(folder / "run" / "model")
    return folder / "run"


def _started(monkeypatch):
    """Captures the federation and the state the rounds start from."""
    seen = {}
    train = training._train

    def spy(fed, config, state, start_round, **kwargs):
        seen.setdefault("start", (fed, state, start_round))
        return train(fed, config, state, start_round, **kwargs)

    monkeypatch.setattr(training, "_train", spy)
    return seen


@pytest.mark.parametrize("algorithm, backend", [("fedavg", "sim"), ("fedcurv", "sim"),
                                                pytest.param("fedavg", "tff", marks=pytest.mark.slow)])
def test_round_zero_predicts_what_the_saved_model_predicts(saved, algorithm, backend, monkeypatch, tmp_path):
    model = Model.load(saved / "model")
    dataset, settings = _settings(algorithm, tmp_path / "run", backend=backend, init_from=str(saved))
    seen = _started(monkeypatch)
    record = run_algorithm(resolve_run(algorithm, dataset, units=16, **settings), dataset, default_split(dataset))
    fed, state, start_round = seen["start"]
    kernel, bias = (np.asarray(w) for w in fed.process.get_model_weights(state).trainable)
    readout = model.members[0].readout
    assert start_round == 0
    np.testing.assert_array_equal(kernel, readout.weights)
    np.testing.assert_array_equal(bias, readout.bias)
    np.testing.assert_array_equal(fed.data.standardization.mean, readout.standardization.mean)
    test = dataset.pooled(default_split(dataset).test)
    np.testing.assert_array_equal(fed.data.groups["test"].scores(kernel, bias),
                                  model.decision_function(test.x, test.lengths))
    assert np.max(np.abs(record.model.members[0].readout.weights - readout.weights)) > 1e-4  # it trained on
    started = record["extra"]["init_from"]
    assert started["path"] == str(saved / "model") and started["provenance"]["algorithm"] == "fedavg"
    assert started["provenance"]["config"]["units"]["value"] == 16


@pytest.mark.parametrize("changes, data, message", [
    ({"seed": 5}, {}, "reservoir weights (16 vs 16 units; it was drawn with units 16, seed 0)"),
    ({"units": 12}, {}, "reservoir weights (16 vs 12 units"),
    ({"state_mode": "last"}, {}, "states (state_mode 'mean' washout 0 vs 'last' washout 0)"),
    ({"readout_inputs": "raw"}, {}, "readout inputs (standardized vs raw)"),
    ({}, {"n_classes": 2}, "task and classes (classify ['k0', 'k1', 'k2'] vs classify ['k0', 'k1'])"),
    ({}, {"features": 2}, "features (['f0', 'f1', 'f2'] vs ['f0', 'f1'])"),
])
def test_another_model_is_refused_in_one_line_before_any_work(saved, changes, data, message, tmp_path):
    dataset = random_dataset(n_clients=6, steps=12, **{"n_classes": 3, **data})
    _, settings = _settings("fedavg", tmp_path / "run", init_from=str(saved / "model"))
    settings = {"units": 16, **settings, **changes}
    with pytest.raises(ValueError) as err:
        run_algorithm(resolve_run("fedavg", dataset, **settings), dataset, default_split(dataset))
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(f"init_from (--init-from): {saved / 'model'} is another model")
    assert not (tmp_path / "run").exists()


def test_a_folder_without_a_model_is_refused_in_one_line(tmp_path):
    dataset, settings = _settings("fedavg", tmp_path / "run", init_from=str(tmp_path))
    with pytest.raises(ModelFormatError, match="not a model folder") as err:
        run_algorithm(resolve_run("fedavg", dataset, units=16, **settings), dataset, default_split(dataset))
    assert "\n" not in str(err.value)


def test_init_from_is_a_flag_of_fedavg_and_fedcurv(capsys):
    for name in ("fedavg", "fedcurv"):
        with pytest.raises(SystemExit):
            main(["run", name, "--help"])
        assert "--init-from DIR" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["run", "thesis-central", "--help"])
    assert "--init-from" not in capsys.readouterr().out

