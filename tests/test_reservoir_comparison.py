"""``tff-esn compare --reservoirs``: algorithms across reservoirs on one deal of the clients per seed."""

import csv
import json

import pytest

from tff_esn.registry import algorithms, defaults
from tff_esn.cli import main
from tff_esn.cli.compare.heterogeneity import run_for
from tff_esn.data.partition import partition_dataset
from tff_esn.data.sources import load_source
from tff_esn.data.splits import get_split
from tff_esn.cli.compare.reservoirs import ReservoirComparison, caption, figure, reservoir_settings

from closed_form_data import random_dataset, write_npz


def test_reservoir_names_give_their_settings():
    assert reservoir_settings("random", 100) == ("random", {})
    assert reservoir_settings("cycle-jumps", 100) == ("cycle-jumps (ℓ = 4)", {"topology": "cycle-jumps"})
    assert reservoir_settings("leak-log-uniform", 100) == ("random, leak log-uniform in [0.1, a]",
                                                           {"leak_distribution": "log-uniform"})
    assert reservoir_settings("deep-3", 100) == ("deep, 3 layers", {"layers": 3, "layer_units": (34, 33, 33)})
    assert reservoir_settings("deep-2-last", 9)[1] == {"layers": 2, "layer_units": (5, 4), "readout_layers": "last"}
    for bad in ("deep-1", "leak-constant", "torus", "deep-2-first"):
        with pytest.raises(ValueError, match="reservoirs: unknown"):
            reservoir_settings(bad, 10)
    with pytest.raises(ValueError, match="random"):
        ReservoirComparison((("a", "synthetic-hhar"),), ("ring", "esnfed"))


def test_compare_reservoirs_runs_every_reservoir_and_algorithm(tmp_path, capsys):
    path = write_npz(tmp_path / "data.npz", random_dataset(n_clients=5, seed=9, sizes=[8] * 5),
                     ["train"] * 3 + ["val", "test"])
    argv = ["compare", "--data", f"npz:{path}", "--reservoirs", "random,ring,deep-2-last,esnfed", "--algorithms",
            "incfed,centralized", "--seeds", "0,1", "--clients", "4", "--out", str(tmp_path / "out"), "--no-progress"]
    assert main(argv) == 0
    with open(tmp_path / "out" / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * (3 * 2 + 4)
    pipeline = defaults.default_pipeline(f"npz:{path}")
    dataset = load_source(f"npz:{path}", pipeline)
    split = get_split(defaults.default_split(f"npz:{path}", pipeline), dataset)
    for seed in (0, 1):
        data, dealt, _ = partition_dataset(dataset, split, "iid", 4, seed=seed)
        for reservoir, label in (("random", "random"), ("ring", "ring"),
                                 ("deep-2-last", "deep, 2 layers, last-layer readout")):
            settings = reservoir_settings(reservoir, run_for("incfed", data, pipeline).config.reservoir.units)[1]
            central = algorithms.run_algorithm(run_for("centralized", data, pipeline, seed=seed, **settings),
                                               data, dealt)
            for name in ("incfed", "centralized"):  # IncFed is the centralized readout, exactly
                row, = [r for r in rows if (r["reservoir"], r["algorithm"], r["seed"]) == (label, name, str(seed))]
                assert float(row["accuracy"]) == central["test"]["accuracy"], (label, name, seed)
            if reservoir == "random":  # esnfed pools the mean or last state IncFed chose, has none for every step
                pooled = central["selection"]["state_mode"] in ("mean", "last")
                esnfed = [r for r in rows if r["reservoir"].startswith("esnfed") and r["seed"] == str(seed)]
                assert len(esnfed) == 4 and all((r["accuracy"] != "") == pooled for r in esnfed)
    esnfed = [r for r in rows if r["reservoir"].startswith("esnfed")]
    assert {r["reservoir"] for r in esnfed} == {"esnfed random", "esnfed small_world", "esnfed scale_free",
                                                "esnfed ring"} and all(r["algorithm"] == "incfed" for r in esnfed)
    assert any(r["accuracy"] for r in esnfed)
    table = (tmp_path / "out" / "table.md").read_text()
    assert table.startswith("Test balanced accuracy (%), mean ± std over seeds, per reservoir: data npz-data")
    assert "| reservoir | npz-data incfed | npz-data centralized |" in table and "| deep, 2 layers, last-layer" in table
    assert "| majority class (constant, reference) |" in table and "\\toprule" in (tmp_path / "out/table.tex").read_text()
    assert all((tmp_path / "out" / f"reservoirs.{k}").stat().st_size > 0 for k in ("pdf", "svg", "png", "caption.md"))
    assert "algorithms incfed, centralized; each" in (tmp_path / "out/reservoirs.caption.md").read_text()  # no rounds
    assert json.loads((tmp_path / "out" / "comparison.json").read_text())["clients"] == 4
    assert main(argv) == 0  # resumes: every seed is in results.csv
    with open(tmp_path / "out" / "results.csv") as f:
        assert list(csv.DictReader(f)) == rows
    capsys.readouterr()
    assert main([*argv[:-3], "--clients", "3", "--out", str(tmp_path / "out")]) == 2
    assert "other settings" in capsys.readouterr().err
    assert main([*argv[:4], "torus", *argv[5:]]) == 2
    assert "unknown 'torus'" in capsys.readouterr().err


def test_the_figure_titles_a_panel_by_its_source_and_the_caption_states_rounds_of_gradient_training():
    rows = [{"data": "osc", "reservoir": "random", "algorithm": name, "seed": 0, "accuracy": 0.5,
             "balanced_accuracy": 0.5, "objective": "balanced_accuracy", "majority": 0.25, "logistic_regression": 0.4}
            for name in ("incfed", "fedavg")]
    comparison = ReservoirComparison((("osc", "npz:/d/osc.npz"), ("x", "npz:/d/osc.npz")), ("random",),
                                     algorithms=("incfed", "fedavg"), rounds=7)
    titles = [ax.get_title() for ax in figure(comparison, rows + [{**r, "data": "x"} for r in rows]).axes]
    assert titles == ["osc (npz)", "x: osc (npz)"]
    assert "algorithms incfed, fedavg (gradient-trained: 7 rounds);" in caption(comparison, rows)


def test_without_esnfed_its_rows_are_left_out_and_the_table_and_a_warning_say_so(tmp_path, monkeypatch):
    import importlib.util

    from tff_esn.cli.compare import reservoirs
    from tff_esn.common.run_warnings import RunWarning

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "esnfed" else found(name, *a))
    path = write_npz(tmp_path / "data.npz", random_dataset(n_clients=5, seed=9, sizes=[8] * 5),
                     ["train"] * 3 + ["val", "test"])
    comparison = ReservoirComparison((("d", f"npz:{path}"),), ("random", "esnfed"), ("incfed",), seeds=(0,), clients=4)
    with pytest.warns(RunWarning, match="esnfed is not installed.*tff_esn\\[compare\\]"):
        written = reservoirs.run_reservoir_comparison(comparison, tmp_path / "out", progress=False)
    with open(written["csv"]) as f:
        assert [r["reservoir"] for r in csv.DictReader(f)] == ["random"]
    assert reservoirs.ESNFED_MISSING in written["table"].read_text()
    assert reservoirs.ESNFED_MISSING in (tmp_path / "out" / "reservoirs.caption.md").read_text()
