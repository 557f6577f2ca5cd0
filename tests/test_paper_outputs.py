"""What a run and a comparison hand to a paper and a terminal: figures, tables, captions, ``tff-esn plot``, progress
bars on a terminal only, a quiet stderr, the records and baselines a reader checks."""

import csv
import json
import os
import pty
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from tff_esn.cli import main
from tff_esn.cli.compare.heterogeneity import Comparison, draw_figure, measure, run_comparison
from tff_esn.cli.summary import summary_line
from tff_esn.common.result_check import NOT_ABOVE_MAJORITY, check_result
from tff_esn.common.run_warnings import recording, said_once, warn
from tff_esn.common.tasks import Task
from tff_esn.data.partition import partition_dataset
from tff_esn.data.sequences import Split
from tff_esn.data.sources import load_source
from tff_esn.registry.algorithms import resolve_run
from tff_esn.runs.baselines import baseline_scores, sequence_features
from tff_esn.runs.figures import dataset_title, save_figure
from tff_esn.runs.tables import Cell, Table

ROOT = Path(__file__).resolve().parent.parent


def _npz(folder: Path, classes: int = 3, seed: int = 0) -> str:
    """Own data: 60 sequences of 12 steps, 6 clients, the class shifting the mean (learnable, not trivially)."""
    rng = np.random.default_rng(seed)
    y = np.arange(60) % classes
    x = rng.normal(size=(60, 12, 2)) + 0.7 * y[:, None, None]
    np.savez(folder / "own.npz", X=x, y=y, client=np.array([f"c{i // 10}" for i in range(60)]))
    return f"npz:{folder / 'own.npz'}"


def _series(folder: Path) -> str:
    rng = np.random.default_rng(1)
    t = np.arange(60 * 20).reshape(60, 20)
    x = np.sin(0.3 * t)[..., None] + 0.05 * rng.normal(size=(60, 20, 1))
    np.savez(folder / "series.npz", X=x, y=np.arange(60) % 2, client=np.array([f"c{i // 10}" for i in range(60)]))
    return f"npz:{folder / 'series.npz'}"


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _points(container) -> tuple[tuple[float, ...], tuple[float, ...]]:
    x, y = container.lines[0].get_data()
    return tuple(np.round(np.asarray(x, float), 9)), tuple(np.round(np.asarray(y, float), 9))


# ------------------------------------------------------------------ figures and tables
def test_compare_on_own_data_writes_every_format_caption_latex_and_every_algorithm_visible(tmp_path):
    source = _npz(tmp_path)
    comparison = Comparison(source, None, "npz", partitions=("iid", "dirichlet:0.3"), clients=3, seeds=(0, 1),
                            algorithms=("centralized", "incfed", "fedavg-ridge", "ensemble"))
    paths = run_comparison(comparison, tmp_path / "out", progress=False)
    folder = tmp_path / "out"
    for suffix in ("pdf", "svg", "png", "caption.md"):
        assert (folder / f"balanced_accuracy.{suffix}").stat().st_size > 0
    assert (folder / "balanced_accuracy.pdf").read_bytes()[:5] == b"%PDF-"
    assert b"<svg" in (folder / "balanced_accuracy.svg").read_bytes()[:2000]
    width, height = _png_size(folder / "balanced_accuracy.png")
    assert width > 1500 and height > 800  # 300 dpi on a 7.5 × 4.2 inch figure
    caption = (folder / "balanced_accuracy.caption.md").read_text()
    assert "seeds [0, 1]" in caption and "3 training clients" in caption and "majority class" in caption
    latex = paths["latex"].read_text()
    assert "\\toprule" in latex and "\\midrule" in latex and "\\bottomrule" in latex and "\\caption{" in latex
    assert "\\textbf{" in latex and "balanced accuracy" in latex
    table = paths["table"].read_text()
    assert table.startswith("test balanced accuracy, mean ± std over seeds, per partition: own (npz)")
    assert "| majority class (constant, reference) | 0.333 ± 0.000 |" in table
    with open(paths["csv"]) as f:
        rows = list(csv.DictReader(f))
    assert {"accuracy", "balanced_accuracy", "f1_macro", "auc", "nrmse", "rmse", "mae", "r2"} <= set(rows[0])
    assert all(r["balanced_accuracy"] and r["auc"] and r["majority"] for r in rows)
    assert json.loads((folder / "comparison.json").read_text())["pipeline"] is None

    fig = draw_figure(comparison, load_source(source, None), [{**r, "seed": int(r["seed"]), **{
        k: float(r[k]) if r[k] else None for k in ("balanced_accuracy", "majority", "logistic_regression")}}
        for r in rows])
    series = [c for c in fig.axes[0].containers if hasattr(c, "lines")]
    assert len(series) == 3  # incfed, fedavg-ridge, ensemble; centralized is the pooled reference line
    for i, a in enumerate(series):
        for b in series[i + 1:]:
            assert _points(a) != _points(b) or a.lines[0].get_marker() != b.lines[0].get_marker()
    assert len({c.lines[0].get_marker() for c in series}) == len(series)
    assert all(not c.lines[0].get_linestyle() or c.lines[0].get_linestyle() == "None" for c in series)  # no joins
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "majority class" in labels and fig.axes[0].get_title().startswith("own (npz): 3 classes")


def test_compare_command_writes_the_figure_files_and_prints_the_latex_path(tmp_path, capsys):
    source = _npz(tmp_path)
    assert main(["compare", "--data", source, "--algorithms", "centralized,incfed", "--partitions", "iid",
                 "--clients", "3", "--seeds", "0", "--no-progress", "--out", str(tmp_path / "o")]) == 0
    assert all((tmp_path / "o/npz-own" / f"balanced_accuracy.{s}").exists() for s in ("pdf", "svg", "png"))
    assert (tmp_path / "o/npz-own/table.tex").exists()


def test_a_table_marks_the_best_mean_per_column_lowest_for_errors():
    rows = (("a", (Cell((0.5, 0.7), 2), Cell((0.2,), 2)), ()), ("b", (Cell((0.9, 0.9), 2), Cell((0.1, 0.2), 2)), ()))
    high = Table("cap", "algorithm", ("x", "y"), rows)
    assert "| a | 0.600 ± 0.100 | **0.200 ± 0.000 (1/2)** |" in high.markdown()
    assert "| b | **0.900 ± 0.000** | 0.150 ± 0.050 |" in high.markdown()
    low = Table("NRMSE_50%", "algorithm", ("x", "y"), rows, lower_is_better=True).latex()
    assert "\\caption{NRMSE\\_50\\%}" in low and "\\textbf{0.600 $\\pm$ 0.100}" in low


def test_save_figure_writes_pdf_svg_png_at_300_dpi_and_a_caption(tmp_path):
    from tff_esn.runs.figures import pyplot

    fig, ax = pyplot().subplots(figsize=(2, 1))
    ax.plot([0, 1], [0, 1])
    paths = save_figure(fig, tmp_path / "f.png", "what it shows")
    assert sorted(p.name for p in paths.values()) == ["f.caption.md", "f.pdf", "f.png", "f.svg"]
    assert _png_size(paths["png"])[0] >= 2 * 300 * 0.8  # bbox tight trims a little
    assert paths["caption"].read_text() == "what it shows\n"


@pytest.mark.parametrize("source, title", [("npz:/data/digits.npz", "digits (npz)"),
                                           ("ts:/d/BasicMotions", "BasicMotions (UEA/UCR)"),
                                           ("synthetic-hhar", "synthetic HHAR"), ("wesad:/x", "WESAD")])
def test_titles_name_the_dataset_not_the_source_string(source, title):
    assert dataset_title(source) == title


# ------------------------------------------------------------------ tff-esn plot
def test_plot_draws_the_reservoir_spectrum_states_forecast_and_confusion_of_run_folders(tmp_path, capsys):
    classes, series = _npz(tmp_path), _series(tmp_path)
    assert main(["run", "incfed", "--data", classes, "--topology", "small-world", "--out", str(tmp_path / "c")]) == 0
    assert main(["run", "incfed", "--data", series, "--task", "forecast", "--out", str(tmp_path / "f")]) == 0
    capsys.readouterr()
    assert main(["plot", "reservoir", "spectrum", "states", "confusion", "--run", str(tmp_path / "c")]) == 0
    assert main(["plot", "forecast", "--run", str(tmp_path / "f"), "--out", str(tmp_path / "figs")]) == 0
    for kind in ("reservoir", "spectrum", "states", "confusion"):
        assert all((tmp_path / "c/figures" / f"{kind}.{s}").stat().st_size > 0 for s in ("pdf", "svg", "png"))
        assert (tmp_path / "c/figures" / f"{kind}.caption.md").read_text().strip()
    assert _png_size(tmp_path / "figs/forecast.png")[0] > 1000
    assert "small-world reservoir of 100 units" in (tmp_path / "c/figures/spectrum.caption.md").read_text()
    record = json.loads((tmp_path / "c/metrics.json").read_text())
    assert np.sum(record["test"]["confusion"]) == record["test"]["n"]
    assert np.trace(record["test"]["confusion"]) == round(record["test"]["accuracy"] * record["test"]["n"])
    assert main(["plot", "forecast", "--run", str(tmp_path / "c")]) == 2
    assert "holds a classification model" in capsys.readouterr().err
    assert main(["plot", "learning-curve", "--run", str(tmp_path / "c")]) == 2
    assert "no rounds.csv" in capsys.readouterr().err


def test_plot_forecast_draws_the_saved_models_predictions(tmp_path, monkeypatch):
    from tff_esn.cli import plot
    from tff_esn.esn.model import Model
    from tff_esn.runs import plots

    source = _series(tmp_path)
    assert main(["run", "incfed", "--data", source, "--task", "forecast", "--washout", "0",
                 "--out", str(tmp_path / "f")]) == 0
    record = json.loads((tmp_path / "f/metrics.json").read_text())
    drawn = {}
    monkeypatch.setattr(plots, "plot_forecast", lambda truth, prediction, title, reference: drawn.update(
        truth=truth, prediction=prediction) or "figure")
    plot.draw("forecast", plot.subject_of(run=str(tmp_path / "f")), 6)
    model = Model.load(tmp_path / "f/model")
    dataset, groups = plot._dataset(plot.Subject(tmp_path / "f/model", tmp_path / "f", record), model)
    test = dataset.pooled(groups["test"])
    expected = model.predict(test.x, test.lengths)
    np.testing.assert_array_equal(drawn["prediction"], expected[0] if expected.ndim == 2 else expected)
    assert drawn["truth"].shape == drawn["prediction"].shape



def test_plot_from_a_model_folder_draws_the_reservoir_alone_and_the_states_with_data(tmp_path, capsys):
    from tff_esn.esn.model import Model

    source = _npz(tmp_path)
    assert main(["run", "incfed", "--data", source, "--topology", "ring", "--state-mode", "mean", "--raw-inputs",
                 "off", "--washout", "2", "--out", str(tmp_path / "c")]) == 0
    model_dir = tmp_path / "kept/model"
    Model.load(tmp_path / "c/model").save(model_dir)  # a model folder away from its run
    capsys.readouterr()
    assert main(["plot", "all", "--model", str(model_dir)]) == 0
    said = capsys.readouterr().out
    for kind in ("reservoir", "spectrum"):
        assert all((tmp_path / "kept/figures" / f"{kind}.{s}").stat().st_size > 0 for s in ("pdf", "svg", "png"))
        assert 1000 < _png_size(tmp_path / "kept/figures" / f"{kind}.png")[0] < 5000
    assert "ring reservoir of 100 units" in (tmp_path / "kept/figures/spectrum.caption.md").read_text()
    assert f"states: skipped (needs data; give --data SOURCE with --model {model_dir})" in said
    assert "learning-curve: skipped (needs a run folder's rounds.csv; give --run DIR" in said
    assert "confusion: skipped (needs a run folder's metrics.json; give --run DIR" in said
    assert not (tmp_path / "kept/figures/states.png").exists()
    for kind, missing in (("states", "needs data; give --data SOURCE"), ("confusion", "needs a run folder's")):
        assert main(["plot", kind, "--model", str(model_dir)]) == 2
        err = capsys.readouterr().err.strip()
        assert missing in err and len(err.splitlines()) == 1
    assert main(["plot", "states", "--model", str(model_dir), "--data", source, "--units", "4",
                 "--out", str(tmp_path / "s")]) == 0
    assert "first all sequence of own (npz)" in (tmp_path / "s/states.caption.md").read_text()
    assert main(["plot", "forecast", "--model", str(model_dir), "--data", source]) == 2
    assert "holds a classification model" in capsys.readouterr().err


def test_plot_states_of_a_model_are_the_states_its_readout_averages(tmp_path, monkeypatch):
    from tff_esn.cli import plot
    from tff_esn.esn.model import Model
    from tff_esn.runs import plots

    source = _npz(tmp_path)
    assert main(["run", "incfed", "--data", source, "--state-mode", "mean", "--raw-inputs", "off", "--washout", "2",
                 "--out", str(tmp_path / "c")]) == 0
    drawn = {}
    monkeypatch.setattr(plots, "plot_states", lambda states, title, units: drawn.update(states=states) or "figure")
    plot.draw("states", plot.subject_of(model=str(tmp_path / "c/model"), data=source), 6)
    model = Model.load(tmp_path / "c/model")
    x = np.load(tmp_path / "own.npz")["X"][:1]  # every client pooled: the file's first sequence
    assert drawn["states"].shape == (12, 100)
    np.testing.assert_allclose(drawn["states"][2:].mean(axis=0), model.states(x)[0], rtol=1e-5, atol=1e-6)


def test_plot_forecast_of_a_model_on_data_is_its_prediction_with_its_training_mean(tmp_path, monkeypatch):
    from tff_esn.cli import plot
    from tff_esn.esn.model import Model
    from tff_esn.runs import plots

    source = _series(tmp_path)
    assert main(["run", "incfed", "--data", source, "--task", "forecast", "--washout", "0", "--standardize", "on",
                 "--out", str(tmp_path / "f")]) == 0
    drawn = {}
    monkeypatch.setattr(plots, "plot_forecast", lambda truth, prediction, title, reference: drawn.update(
        truth=truth, prediction=prediction, reference=reference) or "figure")
    _, caption = plot.draw("forecast", plot.subject_of(model=str(tmp_path / "f/model"), data=source), 6)
    model = Model.load(tmp_path / "f/model")
    x = np.load(tmp_path / "series.npz")["X"][:, :-1]  # every client pooled; horizon 1: the last step is a target
    np.testing.assert_array_equal(drawn["prediction"], model.predict(x)[0])
    assert drawn["truth"].shape == drawn["prediction"].shape
    assert drawn["reference"] == pytest.approx(float(model.outputs.mean[0]))
    assert "training mean of the model's target standardisation" in caption

def test_plot_functions_take_arrays():
    from tff_esn.runs import plots

    rng = np.random.default_rng(0)
    w = np.where(rng.random((20, 20)) < 0.2, rng.normal(size=(20, 20)), 0.0)
    fig = plots.plot_spectrum(w, 0.9, "t")
    circle = [line for line in fig.axes[0].lines if line.get_linestyle() == "--"][0]
    radius = np.hypot(*circle.get_data()).max()
    assert radius == pytest.approx(np.abs(np.linalg.eigvals(w)).max())
    fig = plots.plot_reservoir(w, "t")
    assert fig.axes[0].images[0].get_array().sum() == np.count_nonzero(w)
    fig = plots.plot_learning_curve([{"round": "1", "val_accuracy": "0.5"}, {"round": "2", "val_accuracy": "0.75"}],
                                    "t", reference=("majority", 0.4))
    assert list(fig.axes[0].lines[0].get_ydata()) == [0.5, 0.75]
    fig = plots.plot_confusion(np.array([[3, 1], [0, 4]]), ["a", "b"], "t")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["a (75%)", "b (100%)"]


# ------------------------------------------------------------------ terminal
def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TFF_ESN_PROGRESS")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _fedavg_argv(source: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "tff_esn", "run", "fedavg", "--data", source, "--rounds", "3", "--client-lr", "0.1",
            "--out", str(out)]


def test_a_fedavg_run_in_a_terminal_shows_a_progress_bar_that_advances_and_plot_draws_its_learning_curve(tmp_path):
    source = _npz(tmp_path, classes=2)
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin/stdout/stderr are the pseudo-terminal
        os.chdir(ROOT)
        os.execve(sys.executable, _fedavg_argv(source, tmp_path / "run"), _env(COLUMNS="120"))
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    counts = [int(m) for m in re.findall(r"fedavg rounds \(sim\):\s+\d+%\|[^|]*\|\s*(\d)/3", text)]
    assert counts and counts[0] == 0 and len(set(counts)) >= 2 and counts == sorted(counts), text  # it advances
    assert "Unable to register" not in text
    assert main(["plot", "learning-curve", "--run", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run/figures/learning-curve.png").stat().st_size > 0


def test_on_a_pipe_a_default_run_writes_no_tensorflow_start_up_line_no_bar_and_no_warning_twice(tmp_path):
    source = _npz(tmp_path, classes=2)
    proc = subprocess.run(_fedavg_argv(source, tmp_path / "run"), capture_output=True, text=True, timeout=600,
                          env=_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert not [line for line in lines if re.search(r"Unable to register|cuda|oneDNN|tensorflow/", line)], lines
    assert "rounds (" not in proc.stderr and "%|" not in proc.stderr  # no progress bar on a pipe
    assert len(lines) == len(set(lines))
    assert proc.stdout.startswith("fedavg on npz:")


def test_tensorflow_logs_come_back_when_asked(tmp_path):
    code = "import tff_esn.common.lazy as l, os; l.quiet_tensorflow(); print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'))"
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=ROOT)
    loud = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(TFF_ESN_TF_LOGS="1"),
                          cwd=ROOT)
    assert quiet.stdout.strip() == "3" and loud.stdout.strip() == "None"


def test_progress_is_drawn_on_a_terminal_or_when_asked(monkeypatch):
    from tff_esn.common import progress

    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not progress.shown(True)
    monkeypatch.setenv(progress.PROGRESS_ENV, "1")
    assert progress.shown(True) and not progress.shown(False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setenv(progress.PROGRESS_ENV, "0")
    assert not progress.shown(True)


def test_a_command_shows_each_warning_once_with_its_count(capsys):
    with said_once():
        for _ in range(51):
            with recording() as said:
                warn("leakage: 3 test sequences copy training ones")
            assert said == ["leakage: 3 test sequences copy training ones"]
    err = capsys.readouterr().err.splitlines()
    assert err == ["warning: leakage: 3 test sequences copy training ones",
                   "warning (said 51 times in all): leakage: 3 test sequences copy training ones"]


# ------------------------------------------------------------------ records
def test_split_rule_names_the_partitioner(tmp_path, capsys):
    source = _npz(tmp_path)
    assert main(["run", "centralized", "--data", source, "--partition", "dirichlet:0.5", "--clients", "3",
                 "--out", str(tmp_path / "r")]) == 0
    rule = json.loads((tmp_path / "r/metrics.json").read_text())["split_rule"]
    assert "given by the caller" not in rule
    assert rule.endswith("then the train sequences dealt to 3 clients per group by dirichlet:0.5 (seed 0)")
    dataset = load_source(source, None)
    _, split, _ = partition_dataset(dataset, Split("s", ("c0", "c1", "c2"), test=("c3",), rule="mine"), "iid", 2)
    assert split.rule == "mine; then the train sequences dealt to 2 clients per group by iid (seed 0)"


def test_a_forecast_run_records_the_objective_it_selects_on(tmp_path):
    dataset = load_source(_series(tmp_path), None, task=Task("forecast", 1))
    run = resolve_run("incfed", dataset)
    assert run.record["objective"] == {"value": "neg_mse", "origin": "task forecast"}
    assert resolve_run("incfed", load_source(_npz(tmp_path), None)).record["objective"]["value"] == "balanced_accuracy"


def test_the_docs_say_compare_runs_fedavg_on_k_classes():
    text = (ROOT / "docs/data.md").read_text()
    assert "where labels are binary" not in text
    assert "FedAvg/FedCurv on any number of classes" in text


# ------------------------------------------------------------------ baselines
def test_the_stronger_logistic_regression_on_the_objective_is_the_reference_and_matches_sklearn(tmp_path):
    rng = np.random.default_rng(3)
    y = np.r_[np.zeros(80, int), np.ones(15, int), np.full(15, 2)]  # imbalanced: the two fits differ
    x = rng.normal(size=(110, 10, 2)) + 0.6 * y[:, None, None]
    order = rng.permutation(110)
    np.savez(tmp_path / "imb.npz", X=x[order], y=y[order], client=np.array([f"c{i % 5}" for i in range(110)]))
    dataset = load_source(f"npz:{tmp_path / 'imb.npz'}", None)
    split = Split("s", ("c0", "c1", "c2"), ("c3",), ("c4",))
    got = baseline_scores(dataset, split, objective="balanced_accuracy")
    train, test = dataset.pooled(split.train), dataset.pooled(split.test)
    xt, xs = sequence_features(train.x, False), sequence_features(test.x, False)
    mean, std = xt.mean(0), xt.std(0)
    plain = LogisticRegression(max_iter=2000).fit((xt - mean) / std, train.y).predict((xs - mean) / std)
    assert got["logistic_regression_plain"]["test"]["accuracy"] == pytest.approx(np.mean(plain == test.y))
    assert got["logistic_regression_plain"]["class_weight"] == "none"
    chosen = got["reference"]["logistic_regression"]
    other = ({"logistic_regression", "logistic_regression_plain"} - {chosen}).pop()
    assert got[chosen]["val"]["balanced_accuracy"] >= got[other]["val"]["balanced_accuracy"]
    assert got["reference"] == {"objective": "balanced_accuracy", "logistic_regression": chosen, "chosen_on": "val"}


def test_the_summary_line_shows_the_baselines_the_check_reads_on_its_objective(tmp_path):
    record = {"algorithm": "incfed", "data": "npz:x", "seconds": 1.0,
              "communication": {"up_floats_per_client": 1, "down_floats_per_client": 1, "rounds": 1},
              "test": {"accuracy": 0.6, "balanced_accuracy": 0.55, "f1_macro": 0.5, "random_baseline_accuracy": 0.3},
              "baselines": {"majority": {"test": {"accuracy": 0.525, "balanced_accuracy": 1 / 3}},
                            "logistic_regression": {"class_weight": "balanced",
                                                    "test": {"accuracy": 0.328, "balanced_accuracy": 0.41}},
                            "logistic_regression_plain": {"class_weight": "none",
                                                          "test": {"accuracy": 0.61, "balanced_accuracy": 0.45}},
                            "reference": {"objective": "balanced_accuracy",
                                          "logistic_regression": "logistic_regression_plain"}}}
    line = summary_line(record, Path("m.json"))
    assert "test balanced_accuracy: majority 0.3333, logistic regression (plain) 0.4500" in line
    assert "0.328" not in line


def test_learnt_nothing_is_judged_on_the_selection_objective():
    section = {"accuracy": 0.50, "balanced_accuracy": 0.62, "prediction_counts": [5, 3, 2],
               "label_counts": [6, 2, 2]}
    baselines = {"majority": {"test": {"accuracy": 0.60, "balanced_accuracy": 1 / 3}}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert check_result("a", {"test": section}, baselines, objective="balanced_accuracy") == {"test": []}
        assert check_result("a", {"test": section}, baselines) == {"test": [NOT_ABOVE_MAJORITY]}
        collapsed = {**section, "balanced_accuracy": 1 / 3}
        assert NOT_ABOVE_MAJORITY in check_result("a", {"test": collapsed}, baselines,
                                                  objective="balanced_accuracy")["test"]


def test_own_data_runs_check_and_print_balanced_accuracy(tmp_path, capsys):
    assert main(["run", "centralized", "--data", _npz(tmp_path), "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "test balanced_accuracy: majority 0.3333, logistic regression (" in out
    record = json.loads((tmp_path / "r/metrics.json").read_text())
    assert record["baselines"]["reference"]["objective"] == "balanced_accuracy"
    assert measure(load_source(_npz(tmp_path), None)).metric == "balanced_accuracy"
