"""Search spaces against the seed tables, the exhaustive oracle, and the flat hparams JSON."""

import json
import math

import keras_tuner as kt
import pytest
from keras_tuner.engine.base_tuner import BaseTuner

from tuning.hparams import read_hparams, reservoir_config, run_hparams, write_hparams
from tuning.oracle import ExhaustiveRandomSearchOracle
from tuning.spaces import SPACES, get_space, space_size


def _params(name):
    return {p.name: p for p in get_space(name).build().space}


def _choice(p):
    return list(p.values)


def _range(p):
    return (p.min_value, p.max_value, p.sampling)


def test_thesis_space_is_table_6_1():
    p = _params("thesis")
    assert _choice(p["units"]) == [50, 100, 200]
    assert _choice(p["leaky"]) == [0.5, 0.8, 1.0]
    assert _choice(p["learning_rate"]) == [0.001, 0.01, 0.1]
    assert _choice(p["window"]) == [5 * 64, 25 * 64, 50 * 64]
    assert _choice(p["batch_size"]) == [20, 50, 100]
    assert _choice(p["features"]) == ["pEDA,tEDA,HR,HRV", "tEDA,pEDA", "HR,HRV", "pEDA"]
    assert p["spectral_radius"].value == 0.99 and p["epochs"].value == 1  # Table 6.2
    assert space_size(get_space("thesis").build()) == 3 ** 5 * 4
    assert get_space("thesis").objective == "val_f1" and get_space("thesis").trials is None


@pytest.mark.parametrize("name, units", [("incfed-wesad", [100, 250]), ("incfed-hhar", [100, 500])])
def test_incfed_spaces_are_tables_1_and_2(name, units):
    p = _params(name)
    assert _choice(p["units"]) == units
    assert _range(p["spectral_radius"]) == (0.1, 0.99, "linear")
    assert _range(p["leaky"]) == (0.1, 1.0, "linear")
    assert _range(p["input_scaling"]) == (0.1, 1.0, "linear")
    for count in ("input_connections", "recurrent_connections"):
        assert (p[count].min_value, p[count].max_value, p[count].step) == (1, 60, 1)
    assert _range(p["l2"]) == (1e-4, 1.0, "log")


@pytest.mark.parametrize("name, units, leaky_max", [
    ("fedip-wesad", [200, 300, 400], 0.8), ("fedip-hhar", [100, 200, 300, 400, 500], 0.5)])
def test_fedip_spaces_are_table_1(name, units, leaky_max):
    p = _params(name)
    assert _choice(p["units"]) == units
    assert _range(p["spectral_radius"]) == (0.3, 0.99, "linear")
    assert _range(p["input_scaling"]) == (0.5, 1.0, "linear")
    assert _range(p["leaky"]) == (0.1, leaky_max, "linear")
    assert _range(p["l2"]) == (1e-4, 1.0, "log")
    assert p["ip_mu"].value == 0.0 and p["ip_eta"].value == 0.01
    assert _range(p["ip_sigma"]) == (0.005, 0.15, "linear")
    assert _choice(p["ip_epochs"]) == [3, 5, 10]
    assert get_space(name).trials == 30


def test_pfedrr_space():
    p = _params("pfedrr")
    assert p["units"].value == 1000
    assert _range(p["spectral_radius"]) == (0.3, 0.99, "linear")
    assert _range(p["input_scaling"]) == (0.5, 1.0, "linear")
    assert _range(p["leaky"]) == (0.1, 0.9, "linear")


def test_unknown_space_is_named():
    with pytest.raises(KeyError, match="unknown search space 'nope'.*thesis"):
        get_space("nope")
    assert set(SPACES) == {"thesis", "incfed-wesad", "incfed-hhar", "fedip-wesad", "fedip-hhar", "pfedrr"}


class _Scorer(BaseTuner):
    """Scores a configuration by a fixed function of its values (no model)."""

    def run_trial(self, trial, *args, **kwargs):
        v = trial.hyperparameters.values
        return {"score": v["a"] * 10 + v["b"]}


def _small_space():
    hp = kt.HyperParameters()
    hp.Choice("a", [1, 2])
    hp.Choice("b", [0, 1, 2])
    return hp


def _oracle(max_trials, seed=3, hp=None):
    return ExhaustiveRandomSearchOracle(objective=kt.Objective("score", "max"), max_trials=max_trials, seed=seed,
                                        hyperparameters=hp or _small_space(), tune_new_entries=False,
                                        allow_new_entries=False)


def _order(tuner):
    return [tuple(sorted(t.hyperparameters.values.items())) for t in tuner.oracle.trials.values()]


def test_exhaustive_oracle_tries_every_configuration_once_then_stops(tmp_path):
    tuner = _Scorer(_oracle(None), directory=str(tmp_path), project_name="p")
    tuner.search(verbose=0)
    tried = _order(tuner)
    assert len(tried) == 6 and len(set(tried)) == 6
    assert tuner.oracle.get_best_trials(1)[0].score == 22
    again = _Scorer(_oracle(None), directory=str(tmp_path / "again"), project_name="p")
    again.search(verbose=0)
    assert _order(again) == tried  # same seed → same order
    other = _Scorer(_oracle(None, seed=4), directory=str(tmp_path / "other"), project_name="p")
    other.search(verbose=0)
    assert sorted(_order(other)) == sorted(tried) and _order(other) != tried


def test_exhaustive_oracle_seed_0_is_a_seed(tmp_path):
    """KerasTuner replaces a falsy seed by a random one; 0 (the CLI's default) must fix the order too."""
    orders = []
    for run in range(2):
        oracle = _oracle(None, seed=0)
        assert oracle.seed == 0 and oracle._seed_state == 0
        tuner = _Scorer(oracle, directory=str(tmp_path / str(run)), project_name="p")
        tuner.search(verbose=0)
        orders.append(_order(tuner))
    assert orders[0] == orders[1] and len(set(orders[0])) == 6


def test_exhaustive_oracle_respects_budget_and_rejects_unbounded_continuous_search(tmp_path):
    tuner = _Scorer(_oracle(4), directory=str(tmp_path), project_name="p")
    tuner.search(verbose=0)
    assert len(tuner.oracle.trials) == 4
    hp = kt.HyperParameters()
    hp.Float("x", 0.0, 1.0)
    assert space_size(hp) == math.inf
    with pytest.raises(ValueError, match="needs a finite space"):
        _oracle(None, hp=hp)


def test_run_hparams_converts_connection_counts_to_fractions():
    values = {"units": 100, "spectral_radius": 0.9, "leaky": 1.0, "input_scaling": 0.1,
              "input_connections": 50, "recurrent_connections": 5, "l2": 1e-3}
    flat = run_hparams(values, n_inputs=8, seed=7)
    assert flat["input_connectivity"] == 1.0 and flat["recurrent_connectivity"] == 0.05  # IncFed Table III
    assert "input_connections" not in flat and flat["seed"] == 7 and flat["l2"] == 1e-3
    cfg = reservoir_config(flat)
    assert (cfg.units, cfg.input_connectivity, cfg.recurrent_connectivity, cfg.seed) == (100, 1.0, 0.05, 7)


def test_hparams_file_round_trips_and_rejects_nested_values(tmp_path):
    flat = {"units": 50, "spectral_radius": 0.5, "l2": 0.01, "state_mode": "all", "readout_bias": True}
    path = write_hparams(tmp_path / "best.json", flat)
    assert read_hparams(path) == flat == json.loads(path.read_text())
    with pytest.raises(ValueError, match="nested"):
        write_hparams(tmp_path / "bad.json", {"units": 50, "features": ["a"]})
    with pytest.raises(ValueError, match="ReservoirConfig.units"):
        write_hparams(tmp_path / "bad.json", {"units": 0})
    assert not (tmp_path / "bad.json").exists()
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="flat JSON object"):
        read_hparams(tmp_path / "list.json")
