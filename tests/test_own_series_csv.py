"""Own series from a CSV file (csv:FILE): its columns, its streams and splits, its one-line errors."""

import json

import numpy as np
import pytest

from tff_esn.common.tasks import Task
from tff_esn.data.errors import DataError
from tff_esn.data.seed_sources.generators import mackey_glass
from tff_esn.data.series_files import load_series_npz
from tff_esn.data.sources import load_source, source_task

CLIENTS = [f"k{i}" for i in range(6)]
SPLIT = ["train"] * 4 + ["val", "test"]


def _csv(path, header, rows):
    path.write_text(",".join(header) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


def _series(steps=3000):
    return mackey_glass(steps, np.random.default_rng(0)).values[:, 0] * 10 + 50


def test_a_csv_of_series_reads_as_the_same_npz_and_forecasts_with_default_flags(tmp_path):
    s, temp = _series().reshape(6, 500), np.sin(np.arange(3000) / 7.0).reshape(6, 500)
    rows = [(c, g, f"{v!r}", f"{t!r}", f"{2 * v!r}") for c, g, vs, ts in zip(CLIENTS, SPLIT, s, temp)
            for v, t in zip(vs, ts)]
    path = _csv(tmp_path / "s.csv", ["client", "split", "level", "exog_temp", "double"], rows)
    np.savez(tmp_path / "s.npz", series=np.stack([s, 2 * s], axis=2), exog=temp[..., None], client=CLIENTS,
             split=SPLIT)
    assert source_task(f"csv:{path}") == "forecast"
    data = load_source(f"csv:{path}", "incfed-wesad", task=Task("forecast", 2, "double"))
    same = load_series_npz(tmp_path / "s.npz", task=Task("forecast", 2, "s1"))
    assert data.feature_names == ("level", "double", "exog_temp") and data.task == Task("forecast", 2, "double")
    assert dict(data.groups) == dict(same.groups) and data.label_names == ("double(t+2)",)
    for cid in CLIENTS:
        np.testing.assert_array_equal(data.clients[cid].x, same.clients[cid].x)
        np.testing.assert_array_equal(data.clients[cid].y, same.clients[cid].y)
    from tff_esn.cli import main

    assert main(["run", "incfed", "--data", f"csv:{path}", "--units", "40", "--out", str(tmp_path / "o")]) == 0
    record = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert record["standardization"]["applied"] and record["config"]["washout"]["value"] == "auto"
    assert record["test"]["nrmse"] < record["baselines"]["persistence"]["test"]["nrmse"]


def test_rows_of_one_stream_are_one_series_and_a_client_without_streams_holds_one(tmp_path):
    rows = [("a", "s1", 1.0), ("a", "s2", 5.0), ("a", "s1", 2.0), ("a", "s2", 7.0), ("a", "s1", 4.0),
            ("a", "s2", 8.0), ("b", "", 3.0), ("b", "", 1.0), ("b", "", 0.0)]
    data = load_source(f"csv:{_csv(tmp_path / 'st.csv', ['client', 'stream', 'v'], rows)}", "incfed-wesad")
    np.testing.assert_array_equal(data.clients["a"].x[:, :, 0], [[1.0, 2.0], [5.0, 7.0]])
    np.testing.assert_array_equal(data.clients["a"].y, [[2.0, 4.0], [7.0, 8.0]])
    np.testing.assert_array_equal(data.clients["b"].y, [[1.0, 0.0]])


@pytest.mark.parametrize("header, rows, message", [
    (["v"], [(1.0,), (2.0,)], r"header: needs a client column \(who holds each step\)"),
    (["client", "split"], [("a", "train")], "header: no channel column"),
    (["client", "v", "v"], [("a", 1, 2)], "column names must be non-empty and distinct"),
    (["client", "v"], [("a", 1.0), ("a", 2.0, 3.0)], "line 3: 3 fields, the header has 2"),
    (["client", "v"], [("a", 1.0), ("a", "1,5".replace(",", ";"))], r"line 3, column 'v': '1;5' is not a number"),
    (["client", "v"], [("a", 1.0), ("a", ""), ("a", 3.0)], r"series\[0\]: NaN or inf at step 1"),
    (["client", "split", "v"], [("a", "train", 1.0), ("a", "test", 2.0)],
     r"split: client 'a' has rows in \['test', 'train'\]; give each client one split"),
    (["client", "v"], [], "needs a header row and at least one row of steps"),
])
def test_bad_csv_files_are_refused_in_one_line(tmp_path, header, rows, message):
    path = _csv(tmp_path / "bad.csv", header, rows)
    with pytest.raises(DataError, match=message):
        load_source(f"csv:{path}", "incfed-wesad")
    with pytest.raises(DataError, match="no such file"):
        load_source(f"csv:{tmp_path / 'missing.csv'}", "incfed-wesad")


def test_series_range_on_the_command_line_is_recorded_as_the_scaling(tmp_path, capsys):
    from tff_esn.cli import main
    from tff_esn.runs.standardize import STATED_RULE

    rows = [(c, g, f"{v!r}") for c, g, vs in zip(CLIENTS, SPLIT, _series().reshape(6, 500)) for v in vs]
    path = _csv(tmp_path / "s.csv", ["client", "split", "level"], rows)
    out = tmp_path / "o"
    assert main(["run", "centralized", "--data", f"csv:{path}", "--units", "30", "--series-range", "40,60",
                 "--out", str(out)]) == 0
    record = json.loads((out / "metrics.json").read_text())
    assert record["standardization"]["rule"] == STATED_RULE and record["standardization"]["ranges"] == [[40.0, 60.0]]
    assert record["standardization"]["inputs"] == {"mean": [50.0], "std": [10.0]}
    with pytest.raises(SystemExit):
        main(["run", "centralized", "--data", f"csv:{path}", "--series-range", "40,sixty", "--out", str(out)])
    assert "expected numbers LO,HI[,LO,HI…], got '40,sixty'" in capsys.readouterr().err
