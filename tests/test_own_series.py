"""Own series as forecasting data: the series npz, its task, its bad input, streams of segments."""

import json

import numpy as np
import pytest

from tff_esn.common.tasks import Task
from tff_esn.data.errors import DataError
from tff_esn.data.seed_sources.generators import mackey_glass
from tff_esn.data.series_files import load_series_npz, series_dataset_from_arrays
from tff_esn.data.sources import load_source, source_task

CLIENTS = [f"k{i}" for i in range(6)]
SPLIT = ["train"] * 4 + ["val", "test"]


def _series(steps=3000, seed=0):
    """Mackey–Glass in its own units (mean ≈ 50, std ≈ 2.3): a series no one standardised."""
    return mackey_glass(steps, np.random.default_rng(seed)).values[:, 0] * 10 + 50


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def test_an_npz_of_series_forecasts_with_default_flags(tmp_path):
    from tff_esn.cli import main

    path = _npz(tmp_path / "s.npz", series=_series().reshape(6, 500), client=CLIENTS, split=SPLIT)
    assert source_task(f"npz:{path}") == "forecast"
    assert main(["run", "incfed", "--data", f"npz:{path}", "--units", "60", "--out", str(tmp_path / "o")]) == 0
    record = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert record["config"]["state_mode"]["value"] == "all" and record["test"]["n"] == 499 - record["config"][
        "washout"]["value"]
    assert record["test"]["nrmse"] < record["baselines"]["persistence"]["test"]["nrmse"]
    data = load_source(f"npz:{path}", "incfed-wesad", task=Task("forecast", 3))
    np.testing.assert_allclose(data.clients["k1"].y[0], _series()[503:1000])
    assert data.task == Task("forecast", 3, "s0") and data.label_names == ("s0(t+3)",)


def test_a_dummy_float_y_without_a_task_is_refused_naming_the_choice(tmp_path):
    s = _series().reshape(6, 500, 1)
    path = _npz(tmp_path / "d.npz", X=s, y=np.random.default_rng(1).normal(size=6), client=CLIENTS, split=SPLIT)
    with pytest.raises(DataError, match="y holds real numbers; say what they are: --task regress .* --task forecast"):
        load_source(f"npz:{path}", "incfed-wesad")
    assert load_source(f"npz:{path}", "incfed-wesad", task=Task("regress")).task == Task("regress")
    assert load_source(f"npz:{path}", "incfed-wesad", task=Task("forecast", 1)).task.kind == "forecast"


@pytest.mark.parametrize("kind, message", [
    ("nan", r"series\[2\]: NaN or inf at step 7 \(1 steps\): a gap"),
    ("constant", r"series\[0\]: channel 0 is constant \(3.0\)"),
    ("horizon", "--horizon 500: the series have 500 steps"),
    ("unequal", "500–600 steps; forecasting needs series of one length"),
    ("classify", "--task classify: the file holds series, no classes"),
    ("exog", r"exog: needs one \(T_i, E\) array per series with its steps, got 499 steps for series\[0\]'s 500"),
])
def test_bad_series_are_refused_in_one_line(kind, message):
    rows = list(_series().reshape(6, 500))
    task, exog = Task("forecast", 1), None
    if kind == "nan":
        rows[2] = rows[2].copy()
        rows[2][7] = np.nan
    elif kind == "constant":
        rows[0] = np.full(500, 3.0)
    elif kind == "horizon":
        task = Task("forecast", 500)
    elif kind == "unequal":
        rows[1] = np.concatenate([rows[1], rows[1][:100]])
    elif kind == "classify":
        task = Task()
    elif kind == "exog":
        exog = [r[:-1] for r in rows]
    with pytest.raises(DataError, match=message):
        series_dataset_from_arrays(np.array(rows, dtype=object), CLIENTS, SPLIT, exog=exog, task=task, source="s")


def test_a_washout_beyond_a_clients_series_is_refused_before_the_harvest(tmp_path, capsys):
    from tff_esn.cli import main

    path = _npz(tmp_path / "s.npz", series=_series(600).reshape(6, 100), client=CLIENTS, split=SPLIT)
    assert main(["run", "centralized", "--data", f"npz:{path}", "--washout", "150", "--out", str(tmp_path / "o")]) != 0
    assert "--washout 150 drops every step of the shortest sequence (99 steps)" in capsys.readouterr().err
    assert not (tmp_path / "o" / "metrics.json").exists()


def test_segments_of_one_stream_are_joined_into_the_uncut_series_and_exog_is_an_input(tmp_path):
    whole = _series(1800).reshape(3, 600)
    cuts = [np.split(row, [100, 350]) for row in whole]  # three unequal segments per client
    segments = np.array([seg for row in cuts for seg in row], dtype=object)
    client = np.repeat(["a", "b", "c"], 3)
    exog = np.array([np.sin(np.arange(len(s)))[:, None] for s in segments], dtype=object)
    cut = _npz(tmp_path / "cut.npz", series=segments, client=client, stream=np.zeros(9, int), exog=exog,
               split=np.repeat(["train", "val", "test"], 3))
    uncut = load_series_npz(_npz(tmp_path / "uncut.npz", series=whole, client=["a", "b", "c"],
                                 split=["train", "val", "test"]))
    joined = load_series_npz(cut)
    assert joined.feature_names == ("s0", "exog0") and joined.groups == uncut.groups
    for cid in "abc":
        np.testing.assert_array_equal(joined.clients[cid].x[..., :1], uncut.clients[cid].x)
        np.testing.assert_array_equal(joined.clients[cid].y, uncut.clients[cid].y)
    with pytest.raises(DataError, match="client 'a' has sequences in several groups"):
        series_dataset_from_arrays(segments, client, ["train", "val"] + ["train"] * 7, stream=np.zeros(9, int),
                                   source="s")
