"""``tff-esn predict``: a run's saved model on a data source reproduces the run's metrics exactly (its groups pooled
as the run pooled them, a ``--partition`` re-applied), and bad input is one line with nothing written."""

import csv
import json

import numpy as np
import pytest

from tff_esn.cli import main
from tff_esn.data.sequences import ClientSequences, SequenceDataset, load_npz
from tff_esn.esn.model import Model
from tff_esn.runs.predictions import check_dataset, predict_dataset

from closed_form_data import random_dataset, write_npz

CLOSED_FORM = ("centralized", "incfed", "fedavg-ridge", "rls", "partial-incfed", "pfedrr", "ensemble", "alignment",
               "fedip")
SETTINGS = {"incfed": ["--backend", "numpy"], "fedip": ["--backend", "numpy", "--ip-epochs", "1"]}


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.fixture(scope="module")
def npz(tmp_path_factory):
    dataset = random_dataset(n_clients=7, steps=12, n_classes=3, seed=2)
    return write_npz(tmp_path_factory.mktemp("data") / "d.npz", dataset, ["train"] * 5 + ["val", "test"])


def _run(algorithm, data, out, *extra):
    """``tff-esn run algorithm`` on the source ``data`` (a path: ``npz:`` it) into ``out``; its metrics.json."""
    source = data if isinstance(data, str) else f"npz:{data}"
    assert main(["run", algorithm, "--data", source, "--out", str(out), "--units", "16",
                 *SETTINGS.get(algorithm, []), *extra]) == 0
    return json.loads((out / "metrics.json").read_text())


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("algorithm", CLOSED_FORM)
def test_predict_reproduces_the_runs_metrics_and_test_predictions(algorithm, npz, tmp_path, capsys):
    record = _run(algorithm, npz, tmp_path / "run")
    out = tmp_path / "p.csv"
    assert main(["predict", "--run", str(tmp_path / "run"), "--data", f"npz:{npz}", "--out", str(out)]) == 0
    assert "groups: the run's client groups" in capsys.readouterr().out
    metrics = json.loads(out.with_suffix(".metrics.json").read_text())
    for group in ("val", "test"):
        assert _same(metrics[group], record[group]), group
    assert metrics["clients"] == record["clients"]
    rows = [r for r in _rows(out) if r["group"] == "test"]
    dataset = load_npz(npz)
    test = dataset.pooled(record["clients"]["test"])
    assert len(rows) == len(test)
    model = Model.load(tmp_path / "run" / "model")
    scores = model.decision_function(test.x)
    assert [r["prediction"] for r in rows] == [model.label_names[k] for k in model.predict(test.x)]
    assert [r["truth"] for r in rows] == [str(k) for k in test.y]
    np.testing.assert_array_equal([[float(r[f"score:{k}"]) for k in model.label_names] for r in rows], scores)
    assert [(r["client"], r["sequence"]) for r in rows] == [("c6", str(i)) for i in range(len(test))]


@pytest.mark.parametrize("algorithm,flags", [("fedavg", ["--rounds", "3", "--client-lr", "0.1"]),
                                            ("fedcurv", ["--rounds", "3", "--client-lr", "0.1"]),
                                            ("thesis-central", ["--epochs", "3"])])
def test_predict_reproduces_the_gradient_trained_runs_metrics_and_probabilities(algorithm, flags, npz, tmp_path,
                                                                              capsys):
    record = _run(algorithm, npz, tmp_path / "run", *flags)
    out = tmp_path / "p.csv"
    assert main(["predict", "--run", str(tmp_path / "run"), "--data", f"npz:{npz}", "--out", str(out)]) == 0
    metrics = json.loads(out.with_suffix(".metrics.json").read_text())
    for group in ("val", "test"):
        assert _same(metrics[group], record[group]), group
    model = Model.load(tmp_path / "run" / "model")
    test = load_npz(npz).pooled(record["clients"]["test"])
    rows = [r for r in _rows(out) if r["group"] == "test"]
    np.testing.assert_array_equal([[float(r[f"p:{k}"]) for k in model.label_names] for r in rows],
                                  model.predict_proba(test.x))


GRADIENT_FLAGS = ["--rounds", "2", "--client-lr", "0.1", "--no-progress"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Task → (the source, the run's flags, the dataset as the run reads it): test_model's regression of ragged
    sequences and forecast written as npz files, and the thesis' per-step classes (synthetic WESAD)."""
    from tff_esn.common.tasks import Task
    from tff_esn.data.seed_sources.generators import forecast_dataset
    from tff_esn.data.sources import load_source

    from test_model import DATASETS

    folder = tmp_path_factory.mktemp("tasks")
    groups = ["train"] * 4 + ["val", "test"]
    regress = write_npz(folder / "regress.npz", DATASETS["regress-ragged"](), groups)
    forecast = write_npz(folder / "forecast.npz", DATASETS["forecast"](), groups)
    cache = str(folder / "cache")
    return {
        "regress-ragged": (f"npz:{regress}", ["--task", "regress"], lambda: load_npz(regress)),
        "forecast": (f"npz:{forecast}", ["--task", "forecast", "--target", "f0"],
                     lambda: forecast_dataset(load_npz(forecast), Task("forecast", 1, "f0"))),
        "classify-per-step": ("synthetic-wesad", ["--pipeline", "thesis", "--cache-dir", cache],
                              lambda: load_source("synthetic-wesad", "thesis", cache_dir=cache)),
    }


def _expected_rows(model, test) -> dict:
    """(sequence, step or None) → (prediction, truth) of ``model`` on the pooled group ``test`` (one client)."""
    predicted, washout, names = model.predict(test.x, test.lengths), model.spec.washout, model.label_names
    shown = (lambda v: names[v]) if model.classifier else float
    rows = {}
    for i in range(len(test)):
        if predicted.ndim == 2:
            for j in range(int(test.steps[i]) - washout):
                rows[(i, washout + j)] = (shown(predicted[i, j]), shown(test.y[i, washout + j]))
        else:
            rows[(i, None)] = (shown(predicted[i]), shown(test.y[i] if test.y.ndim == 1 else test.y[i, -1]))
    return rows


def _heavy(algorithm, task):
    return pytest.param(algorithm, task, marks=pytest.mark.slow)


@pytest.mark.parametrize("algorithm,task", [
    ("incfed", "regress-ragged"), ("incfed", "forecast"), _heavy("incfed", "classify-per-step"),
    ("fedavg", "regress-ragged"), _heavy("fedavg", "forecast"), _heavy("fedavg", "classify-per-step"),
    _heavy("fedcurv", "regress-ragged"), ("fedcurv", "forecast"), _heavy("fedcurv", "classify-per-step")])
def test_predict_reproduces_each_tasks_metrics_and_rows(algorithm, task, sources, tmp_path, capsys):
    """Closed-form and gradient-trained runs of a regression (ragged sequences), a forecast and per-step classes:
    the val/test metrics equal the run's, and each test row (per step where the model reads every step) is the
    model's prediction beside the truth."""
    source, flags, load = sources[task]
    gradient = GRADIENT_FLAGS + (["--penalty", "1e-2"] if algorithm == "fedcurv" else [])
    cache = flags[flags.index("--cache-dir"):] if "--cache-dir" in flags else []
    record = _run(algorithm, source, tmp_path / "run", *flags, *(gradient if algorithm != "incfed" else []))
    out = tmp_path / "p.csv"
    assert main(["predict", "--run", str(tmp_path / "run"), "--data", source, "--out", str(out), *cache]) == 0
    metrics = json.loads(out.with_suffix(".metrics.json").read_text())
    for group in ("val", "test"):  # a standardised forecast's run also reports its standardised scores
        assert _same(metrics[group], {k: v for k, v in record[group].items() if k != "standardized"}), group
    model = Model.load(tmp_path / "run" / "model")
    assert model.task.kind == task.split("-")[0]
    (client,) = record["clients"]["test"]
    test = load().pooled([client])
    rows = [r for r in _rows(out) if r["group"] == "test"]
    per_step = "step" in rows[0]
    assert per_step == (task != "regress-ragged")
    shown = (lambda v: v) if model.classifier else float
    got = {(int(r["sequence"]), int(r["step"]) if per_step else None): (shown(r["prediction"]), shown(r["truth"]))
           for r in rows}
    assert len(got) == len(rows) and got == _expected_rows(model, test)


def test_a_partitioned_run_is_dealt_again_and_reproduced(npz, tmp_path, capsys):
    record = _run("incfed", npz, tmp_path / "run", "--partition", "iid", "--clients", "3")
    assert record["clients"]["train"] == ["p0", "p1", "p2"]
    out = tmp_path / "p.csv"
    assert main(["predict", "--run", str(tmp_path / "run"), "--data", f"npz:{npz}", "--out", str(out)]) == 0
    assert "groups: the run's split and partition re-applied" in capsys.readouterr().out
    metrics = json.loads(out.with_suffix(".metrics.json").read_text())
    for group in ("train", "val", "test"):
        assert _same(metrics[group], record[group]), group
    assert {r["client"] for r in _rows(out)} == {"p0", "p1", "p2", "c5", "c6"}


def test_other_data_is_predicted_pooled_with_metrics(npz, tmp_path, capsys):
    _run("centralized", npz, tmp_path / "run")
    other = random_dataset(n_clients=2, steps=9, n_classes=3, seed=5)
    path = write_npz(tmp_path / "other.npz", other, ["train", "test"])
    capsys.readouterr()
    assert main(["predict", "--run", str(tmp_path / "run"), "--data", f"npz:{path}"]) == 0
    done = capsys.readouterr()
    lines = done.out.strip().splitlines()
    assert lines[0] == "client,sequence,group,prediction,truth,score:0,score:1,score:2"
    assert len(lines) == 1 + sum(len(c) for c in other.clients.values())
    assert "all: accuracy" in done.err and "groups: pooled (the data does not hold the run's clients)" in done.err
    model = Model.load(tmp_path / "run" / "model")
    pooled = other.pooled(other.client_ids)
    expected = model.score(pooled.x, pooled.y)["accuracy"]
    assert f"all: accuracy {expected:.4f}" in done.err


def _one_line_refusal(capsys, argv, out, match):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and match in err, err
    assert not out.exists() and not out.with_suffix(".metrics.json").exists()


def test_bad_input_is_one_line_and_nothing_is_written(npz, tmp_path, capsys):
    run = tmp_path / "run"
    _run("incfed", npz, run)
    capsys.readouterr()
    out = tmp_path / "p.csv"
    argv = ["predict", "--run", str(run), "--data", f"npz:{npz}", "--out", str(out)]
    three = random_dataset(n_clients=3, steps=12, features=4, n_classes=3)
    _one_line_refusal(capsys, [*argv[:4], f"npz:{write_npz(tmp_path / 'f4.npz', three, ['train'] * 3)}", *argv[5:]],
                      out, "4 features per step, the model was trained on 3")
    four = random_dataset(n_clients=3, steps=12, n_classes=4)
    _one_line_refusal(capsys, [*argv[:4], f"npz:{write_npz(tmp_path / 'k4.npz', four, ['train'] * 3)}", *argv[5:]],
                      out, "class(es) ['3'] the model does not know")
    arrays = run / "model" / "arrays.npz"
    arrays.write_bytes(arrays.read_bytes()[:-100])
    _one_line_refusal(capsys, argv, out, "arrays.npz: its content does not match model.json's checksum")
    header = run / "model" / "model.json"
    header.write_text(header.read_text().replace('"version": 1', '"version": 99'))
    _one_line_refusal(capsys, argv, out, "format version 99; this tff_esn reads version 1 only")


def test_an_out_that_cannot_be_written_is_refused_before_the_model_is_loaded(npz, tmp_path, capsys, monkeypatch):
    run = tmp_path / "run"
    _run("centralized", npz, run)
    capsys.readouterr()
    loads = []
    monkeypatch.setattr(Model, "load", lambda *a, **k: loads.append(a))
    argv = ["predict", "--run", str(run), "--data", f"npz:{npz}", "--out"]
    _one_line_refusal(capsys, [*argv, "/sys/tff-esn-probe/p.csv"], tmp_path / "p.csv",
                      "--out /sys/tff-esn-probe/p.csv: its folder /sys/tff-esn-probe: cannot create")
    (tmp_path / "folder.csv").mkdir()
    _one_line_refusal(capsys, [*argv, str(tmp_path / "folder.csv")], tmp_path / "p.csv", "is a folder, not a file")
    (tmp_path / "q.metrics.json").mkdir()
    assert main([*argv, str(tmp_path / "q.csv")]) == 2
    assert "q.metrics.json: is a folder, not a file" in capsys.readouterr().err
    assert not (tmp_path / "q.csv").exists()
    assert loads == []


def test_class_labels_stored_as_floats_are_read_as_the_models_classes(npz, tmp_path, capsys):
    run = tmp_path / "run"
    _run("centralized", npz, run)
    with np.load(npz) as arrays:
        floats = {k: arrays[k] for k in arrays.files}
    floats["y"] = floats["y"].astype(np.float64)
    np.savez(tmp_path / "floats.npz", **floats)
    out = tmp_path / "p.csv"
    assert main(["predict", "--run", str(run), "--data", f"npz:{tmp_path / 'floats.npz'}", "--out", str(out)]) == 0
    assert main(["predict", "--run", str(run), "--data", f"npz:{npz}", "--out", str(tmp_path / "q.csv")]) == 0
    assert _rows(out) == _rows(tmp_path / "q.csv")


def test_check_dataset_maps_classes_by_name_and_refuses_short_sequences():
    from tff_esn import resolve_run, run_algorithm
    from closed_form_data import default_split

    dataset = random_dataset(n_clients=5, steps=10, n_classes=3)
    model = run_algorithm(resolve_run("centralized", dataset, units=12, state_mode="mean", washout=3), dataset,
                          default_split(dataset)).model
    c = dataset.clients["c4"]
    names = ("k2", "k0", "k1")  # the same sequences, classes coded in another order
    recoded = SequenceDataset({"c4": ClientSequences(c.x, (c.y + 1) % 3)}, 3, dataset.feature_names, names, "r")
    mapped = check_dataset(model, recoded)
    np.testing.assert_array_equal(mapped.clients["c4"].y, c.y)
    plain = predict_dataset(model, SequenceDataset({"c4": c}, 3, dataset.feature_names, dataset.label_names, "r"))
    assert _same(predict_dataset(model, recoded).metrics, plain.metrics)
    assert plain.metrics["all"] == model.score(c.x, c.y)
    short = SequenceDataset({"c4": ClientSequences(c.x[:, :3], c.y)}, 3, dataset.feature_names, dataset.label_names,
                            "short")
    with pytest.raises(ValueError, match="short: the shortest sequence has 3 steps, not more than the model's washout"):
        check_dataset(model, short)


@pytest.mark.parametrize("task", ["classify", "regress-ragged"])
def test_sequences_without_labels_are_predicted_with_no_metrics(task, npz, sources, tmp_path, capsys):
    """An ``npz:`` file of X and client without y: every sequence's prediction, an empty truth, no metrics file
    and one line saying so (a run's data: refused without y)."""
    from test_model import DATASETS

    if task == "classify":
        source, flags, new = f"npz:{npz}", [], random_dataset(n_clients=2, steps=9, n_classes=3, seed=5)
    else:
        (source, flags, _), new = sources[task], DATASETS[task]()
    _run("incfed", source, tmp_path / "run", *flags)
    path = write_npz(tmp_path / "new.npz", new, None, labels=False)
    out = tmp_path / "p.csv"
    capsys.readouterr()
    assert main(["predict", "--run", str(tmp_path / "run"), "--data", f"npz:{path}", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == [f"{sum(len(c) for c in new.clients.values())} prediction(s) → {out}; npz:{path}: no labels or "
                     "targets (no y): predictions only, no metrics"]
    assert not out.with_suffix(".metrics.json").exists()
    model = Model.load(tmp_path / "run" / "model")
    pooled = new.pooled(new.client_ids)
    predicted = model.predict(pooled.x, pooled.lengths)
    rows = _rows(out)
    assert [r["truth"] for r in rows] == [""] * len(predicted)
    if model.classifier:
        assert [r["prediction"] for r in rows] == [model.label_names[k] for k in predicted]
    else:  # the run's groups, each pooled: float32 states of other padding, equal to rounding
        np.testing.assert_allclose([float(r["prediction"]) for r in rows], predicted, rtol=1e-5, atol=1e-6)
    assert main(["predict", "--run", str(tmp_path / "run"), "--data", f"npz:{path}"]) == 0
    done = capsys.readouterr()
    assert done.err.strip() == f"npz:{path}: no labels or targets (no y): predictions only, no metrics"
    assert main(["run", "incfed", "--data", f"npz:{path}", "--out", str(tmp_path / "again"), *flags]) == 2
    assert "missing array(s) ['y']" in capsys.readouterr().err
    np.savez(tmp_path / "bare.npz", X=pooled.x)
    _one_line_refusal(capsys, ["predict", "--run", str(tmp_path / "run"), "--data", f"npz:{tmp_path / 'bare.npz'}",
                               "--out", str(tmp_path / "q.csv")], tmp_path / "q.csv",
                      "missing array(s) ['client']; expected X, client and optionally y, split")


def test_a_forecast_reads_its_targets_from_the_sequences_so_a_file_without_y_is_scored(tmp_path, capsys):
    """A forecast's targets are its inputs' later steps: a series file (never a y) and X without y train and are
    scored."""
    from test_model import DATASETS

    dataset = DATASETS["forecast"]()
    groups = ["train"] * 4 + ["val", "test"]
    ids = dataset.client_ids
    series = tmp_path / "series.npz"
    np.savez(series, series=np.concatenate([dataset.clients[c].x for c in ids]),
             client=np.repeat(ids, [len(dataset.clients[c]) for c in ids]),
             split=np.repeat(groups, [len(dataset.clients[c]) for c in ids]))
    x_only = write_npz(tmp_path / "x.npz", dataset, groups, labels=False)
    for path, flags in ((series, []), (x_only, ["--task", "forecast", "--target", "f0"])):
        record = _run("incfed", path, tmp_path / path.stem, *flags)
        out = tmp_path / f"{path.stem}.csv"
        assert main(["predict", "--run", str(tmp_path / path.stem), "--data", f"npz:{path}", "--out", str(out)]) == 0
        metrics = json.loads(out.with_suffix(".metrics.json").read_text())
        for group in ("val", "test"):
            assert _same(metrics[group], {k: v for k, v in record[group].items() if k != "standardized"}), group
        assert all(r["truth"] != "" for r in _rows(out))
