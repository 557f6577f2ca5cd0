"""``tff-esn tune`` on a researcher's own data: own-data states, a carved validation, balanced accuracy,
never a constant predictor, never below the own-data default."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from tff_esn.cli import main
from closed_form_data import random_dataset, write_npz, write_ts
from tuning.closed_form import ClosedFormTuner
from tuning.search import OWN_DATA_OBJECTIVE, SearchError, tune

TS = Path("/work/uea/ex/aeon/datasets/data/GunPoint/GunPoint")


@pytest.fixture()
def npz(tmp_path):
    """An npz file with train and test groups only (no validation group)."""
    data = random_dataset(n_clients=6, steps=12, features=3, n_classes=3, seed=2, sizes=[10] * 6)
    return f"npz:{write_npz(tmp_path / 'own.npz', data, ['train'] * 5 + ['test'])}"


def test_own_data_search_starts_from_the_own_data_defaults_and_recommends_at_least_the_default(npz, tmp_path):
    result = tune("incfed-wesad", data=npz, trials=3, out=tmp_path / "search", progress=False)
    assert result.objective == OWN_DATA_OBJECTIVE
    assert result.default_score is not None and result.best_score >= result.default_score
    hparams = json.loads((tmp_path / "search" / "best_hparams.json").read_text())
    assert hparams["state_mode"] == "mean" and hparams["bias_scaling"] == 1.0
    assert "pipeline" not in hparams and "split" not in hparams  # the file's own groups, as `tff-esn run` reads them
    assert all(r["classes_predicted"] >= 1 for r in result.trials)


def test_a_trial_that_predicts_one_class_is_never_recommended(npz, tmp_path, monkeypatch):
    score = ClosedFormTuner.score

    def constant(self, hparams):
        metrics = score(self, hparams)
        return {**metrics, "val_balanced_accuracy": 1.0, "val_classes_predicted": 1.0}

    monkeypatch.setattr(ClosedFormTuner, "score", constant)
    out = tmp_path / "search"
    with pytest.raises(SearchError, match="predicts one class"):
        tune("incfed-wesad", data=npz, trials=2, out=out, progress=False)
    assert len((out / "trials.csv").read_text().splitlines()) == 3 and (out / "search.json").is_file()
    assert not (out / "best_hparams.json").exists()


def _one_line(capsys, argv, match):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and match in err, err


def test_a_validation_group_of_one_class_is_refused_in_one_line_before_the_search(tmp_path, capsys, monkeypatch):
    data = random_dataset(n_clients=6, steps=12, features=3, n_classes=3, seed=2, sizes=[10] * 6)
    val = data.clients["c4"]
    clients = {**data.clients, "c4": dataclasses.replace(val, y=np.full_like(val.y, 2))}
    path = write_npz(tmp_path / "val1.npz", dataclasses.replace(data, clients=clients), ["train"] * 4 + ["val", "test"])
    monkeypatch.setattr(ClosedFormTuner, "search", lambda *a, **k: pytest.fail("searched"))
    out = tmp_path / "search"
    _one_line(capsys, ["tune", "incfed-wesad", "--data", f"npz:{path}", "--trials", "2", "--out", str(out),
                       "--no-progress"], "the validation clients (10 sequence(s)) hold one class ('2')")
    assert not (out / "best_hparams.json").exists()


def test_a_search_on_a_ts_source_writes_best_hparams_run_reads(tmp_path, capsys):
    source = write_ts(tmp_path, n_train=18, n_test=6, steps=10)
    out = tmp_path / "search"
    assert main(["tune", "incfed-wesad", "--data", source, "--trials", "2", "--out", str(out), "--no-progress"]) == 0
    hparams = json.loads((out / "best_hparams.json").read_text())
    assert hparams["state_mode"] == "mean" and "split" not in hparams
    assert main(["run", "incfed", "--backend", "numpy", "--data", source, "--hparams", str(out / "best_hparams.json"),
                 "--out", str(tmp_path / "run")]) == 0
    record = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert record["config"]["units"] == {"value": hparams["units"], "origin": "file"}


def test_the_thesis_space_refuses_own_data_naming_the_closed_form_spaces(npz, tmp_path):
    with pytest.raises(ValueError, match="closed-form"):
        tune("thesis", data=npz, trials=1, out=tmp_path / "search", progress=False)


@pytest.mark.slow
@pytest.mark.skipif(not TS.with_name("GunPoint_TRAIN.ts").exists(), reason="UCR/UEA files not unpacked")
def test_a_ts_source_finishes_without_a_constant_recommendation(tmp_path):
    result = tune("incfed-wesad", data=f"ts:{TS}", trials=4, out=tmp_path / "search", progress=False)
    assert result.best_score >= result.default_score > 0.5  # two classes: a constant predictor scores 0.5
    best = json.loads((tmp_path / "search" / "best_trial.json").read_text())
    assert best["objective"] == OWN_DATA_OBJECTIVE


def test_a_search_that_recommends_the_own_data_default_writes_a_best_hparams_file_run_reads(npz, tmp_path, monkeypatch):
    from tff_esn.closed_form.configs import IncFedConfig
    from tff_esn.common.settings import config_from_flags
    from tuning.hparams import read_hparams

    score = ClosedFormTuner.score

    def default_best(self, hparams):  # the own-data default reservoir (ρ 0.9, α 1) scores highest
        metrics = score(self, hparams)
        best = hparams["spectral_radius"] == 0.9 and hparams["leaky"] == 1.0
        return {**metrics, "val_balanced_accuracy": 1.0 if best else 0.5}

    monkeypatch.setattr(ClosedFormTuner, "score", default_best)
    result = tune("incfed-wesad", data=npz, trials=2, out=tmp_path / "search", progress=False)
    assert result.recommends_default and result.best_score == 1.0
    hparams = read_hparams(tmp_path / "search" / "best_hparams.json")
    trial_keys = {k for k in result.trials[0] if k not in ("trial", "status", "score", "seconds", "classes_predicted")}
    assert set(hparams) == trial_keys | {"state_mode", "washout", "readout_bias", "raw_inputs"}
    assert (hparams["spectral_radius"], hparams["leaky"], hparams["bias_scaling"], hparams["units"]) == (0.9, 1.0, 1.0, 100)
    config = config_from_flags(IncFedConfig, hparams)
    assert config.reservoir.spectral_radius == 0.9 and config.l2 == hparams["l2"]
