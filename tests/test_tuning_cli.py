"""``tune()`` and ``tff-esn tune`` end to end: outputs, resume, and best_hparams.json into ``tff-esn run``."""

import json

import numpy as np
import pytest

from closed_form_data import fake_data_modules
from tff_esn.cli import main
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tuning.search import tune


def _fake_load_source(source, pipeline, *, cache_dir=None, **options):
    """Tiny seeded data: thesis-like (4 features, per-step binary labels) or 3-class sequences."""
    rng = np.random.default_rng(len(pipeline) + int(options.get("hrv_window_s", 0)))
    thesis = pipeline == "thesis"
    names = ("pEDA", "tEDA", "HR", "HRV") if thesis else tuple(f"ch{i}" for i in range(5))
    clients = {}
    for c in range(6):
        if thesis:
            y = (rng.random((6, 24)) < 0.15).astype(np.int64)
            x = rng.normal(size=(6, 24, 4)) + 1.5 * y[..., None]
        else:
            y = rng.integers(0, 3, 10)
            x = rng.normal(size=(10, 16, 5)) + 0.8 * y[:, None, None] * (np.arange(5) % 2)
        clients[f"S{c}"] = ClientSequences(x.astype(np.float32), y)
    classes = 2 if thesis else 3
    return SequenceDataset(clients, classes, names, tuple(map(str, range(classes))), source)


def _fake_get_split(name, dataset, *, train_fraction=1.0, seed=0):
    return Split(name, ("S0", "S1", "S2", "S3"), ("S4",), ("S5",))


@pytest.fixture
def fake_data(monkeypatch):
    """Stands in for tff_esn.data.sources / splits with tiny data."""
    fake_data_modules(monkeypatch, _fake_load_source, _fake_get_split)


def test_closed_form_search_writes_outputs_and_round_trips_into_run(fake_data, tmp_path, capsys):
    out = tmp_path / "tune"
    assert main(["tune", "incfed-wesad", "--trials", "3", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "| rank | trial | val_accuracy |" in printed and "best_hparams.json" in printed
    best = json.loads((out / "best_hparams.json").read_text())
    assert {"units", "spectral_radius", "input_connectivity", "recurrent_connectivity", "l2", "seed",
            "state_mode", "washout", "readout_bias"} <= set(best)
    assert (best["pipeline"], best["split"]) == ("incfed-wesad", "incfed-wesad")
    assert all(not isinstance(v, (dict, list)) for v in best.values())
    trial = json.loads((out / "best_trial.json").read_text())
    assert (out / "trials.csv").read_text().count("\n") == 4
    assert (out / "kerastuner" / "oracle.json").exists()

    run = tmp_path / "run"
    assert main(["run", "incfed", "--backend", "numpy", "--hparams", str(out / "best_hparams.json"),
                 "--out", str(run)]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    for key in ("units", "spectral_radius", "leaky", "l2", "input_connectivity", "recurrent_connectivity"):
        assert metrics["config"][key]["value"] == best[key]
    assert metrics["val"]["accuracy"] == pytest.approx(trial["score"])  # same readout, same validation clients


def test_tune_resumes_and_extends_the_budget_and_refuses_other_settings(fake_data, tmp_path):
    first = tune("pfedrr", trials=2, out=tmp_path, progress=False)
    assert len(first.trials) == 2
    more = tune("pfedrr", trials=4, out=tmp_path, progress=False)
    assert len(more.trials) == 4
    kept = {r["trial"]: r for r in more.trials}
    for row in first.trials:
        assert kept[row["trial"]] == row  # finished trials are not run again
    with pytest.raises(ValueError, match="other settings.*seed: 0 → 1"):
        tune("pfedrr", trials=4, out=tmp_path, seed=1, progress=False)


def test_thesis_search_end_to_end(fake_data, tmp_path):
    result = tune("thesis", trials=2, out=tmp_path, progress=False)
    assert result.objective == "val_f1" and len(result.trials) == 2
    best = json.loads((tmp_path / "best_hparams.json").read_text())
    assert set(best) == {"units", "leaky", "client_lr", "batch_size", "spectral_radius", "epochs", "seed",
                         "pipeline", "split"}
    assert (best["pipeline"], best["split"]) == ("thesis", "thesis-primal")
    values = json.loads((tmp_path / "best_trial.json").read_text())["values"]
    assert values["window"] in (320, 1600, 3200) and values["features"]


def test_tune_rejects_bad_arguments(fake_data, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["tune", "nope", "--out", str(tmp_path)])
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    assert main(["tune", "incfed-wesad", "--trials", "0", "--out", str(tmp_path)]) == 2
    assert "--trials: expected an integer ≥ 1, got 0." in capsys.readouterr().err
    with pytest.raises(KeyError, match="unknown search space"):
        tune("nope", out=tmp_path)


def test_fedip_search_round_trips_into_run_fedip(fake_data, tmp_path):
    result = tune("fedip-hhar", data="synthetic-hhar", trials=1, out=tmp_path / "tune", progress=False)
    best = result.best_hparams
    assert best["rounds"] == 3 and best["ip_mu"] == 0.0 and best["ip_eta"] == 0.01 and best["ip_epochs"] in (3, 5, 10)
    assert main(["run", "fedip", "--backend", "numpy", "--data", "synthetic-hhar",
                 "--hparams", str(tmp_path / "tune" / "best_hparams.json"), "--out", str(tmp_path / "run")]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["val"]["accuracy"] == pytest.approx(result.best_score)


def test_searches_on_the_real_synthetic_default(tmp_path):
    """Both kinds of search on the synthetic default: the best score is the best trial's validation score."""
    cache = str(tmp_path / "cache")
    closed = tune("incfed-wesad", trials=2, out=tmp_path / "cf", cache_dir=cache, progress=False)
    assert main(["run", "incfed", "--backend", "numpy", "--cache-dir", cache,
                 "--hparams", str(tmp_path / "cf" / "best_hparams.json"), "--out", str(tmp_path / "run")]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["val"]["accuracy"] == pytest.approx(closed.best_score)
    thesis = tune("thesis", trials=1, out=tmp_path / "thesis", cache_dir=cache, progress=False)
    assert thesis.objective == "val_f1" and len(thesis.trials) == 1
    assert thesis.best_score == pytest.approx(thesis.trials[0]["score"])
