"""Own series as forecasting data: the series npz, its task, its bad input, streams of segments."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    assert record["config"]["state_mode"]["value"] == "all" and record["config"]["washout"]["value"] == "auto"
    assert record["test"]["n"] == 499 - record["washout_selection"]["chosen"] and record["standardization"]["applied"]
    assert record["test"]["nrmse"] < record["baselines"]["persistence"]["test"]["nrmse"]
    data = load_source(f"npz:{path}", "incfed-wesad", task=Task("forecast", 3))
    np.testing.assert_allclose(data.clients["k1"].y[0], _series()[503:1000])
    assert data.task == Task("forecast", 3, "s0") and data.label_names == ("s0(t+3)",)


def test_a_dummy_float_y_without_a_task_is_refused_naming_the_choice(tmp_path, capsys):
    s = _series().reshape(6, 500, 1)
    path = _npz(tmp_path / "d.npz", X=s, y=np.random.default_rng(1).normal(size=6), client=CLIENTS, split=SPLIT)
    from tff_esn.cli import main

    assert main(["run", "incfed", "--data", f"npz:{path}", "--out", str(tmp_path / "o")]) != 0
    assert "y holds real numbers; say what they are: --task regress" in capsys.readouterr().err
    assert not (tmp_path / "o" / "metrics.json").exists()
    with pytest.warns(UserWarning, match="y holds real numbers; say what they are: --task regress .* --task forecast"):
        assert load_source(f"npz:{path}", "incfed-wesad").task == Task("regress")
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


def _run(dataset, algo, standardize="auto", **settings):
    from tff_esn.data.splits import get_split
    from tff_esn.registry.algorithms import resolve_run, run_algorithm

    settings = {"units": 50, "washout": 20, "backend": "numpy", **settings} if algo == "incfed" else \
        {"units": 50, "washout": 20, **settings}
    split = get_split("npz", dataset)
    return run_algorithm(resolve_run(algo, dataset, **settings), dataset, split, standardize=standardize), split


@settings(max_examples=5, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=4, max_size=4), st.integers(0, 50))
def test_standardised_incfed_equals_centralized_on_the_pooled_mean_and_std(sizes, seed):
    """Any split of the training series into clients: the summed statistics are scikit-learn's on the pooled
    training steps, and IncFed's standardised readout is the centralized one."""
    from sklearn.preprocessing import StandardScaler

    rows = _series(6000, seed % 3).reshape(20, 300)[:sum(sizes) + 2]
    client = [f"c{k}" for k, n in enumerate(sizes) for _ in range(n)] + ["v", "t"]
    split = ["train"] * sum(sizes) + ["val", "test"]
    data = series_dataset_from_arrays(rows, client, split, source="npz:own.npz")
    incfed, tsplit = _run(data, "incfed")
    central, _ = _run(data, "centralized")
    train = data.pooled(tsplit.train)
    reference = StandardScaler().fit(train.x.reshape(-1, 1).astype(np.float64))
    np.testing.assert_allclose(incfed.model.inputs.mean, reference.mean_, rtol=1e-6)
    np.testing.assert_allclose(incfed.model.inputs.scale, reference.scale_, rtol=1e-5)
    np.testing.assert_allclose(incfed.model.outputs.scale, StandardScaler().fit(train.y.reshape(-1, 1)).scale_,
                               rtol=1e-9)
    for group in ("val", "test"):
        for key in ("nrmse", "rmse", "mae", "r2"):
            assert incfed[group][key] == pytest.approx(central[group][key], rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(incfed.model.members[0].readout.weights, central.model.members[0].readout.weights,
                               rtol=1e-6, atol=1e-8)


def test_standardisation_is_on_for_own_series_recorded_and_metrics_come_in_both_units():
    data = series_dataset_from_arrays(_series().reshape(6, 500), CLIENTS, SPLIT, source="npz:own.npz")
    record, split = _run(data, "incfed")
    scale = record["standardization"]["target"]["std"]
    assert record["standardization"]["applied"] and scale == pytest.approx(
        np.concatenate([r[1:] for r in _series().reshape(6, 500)[:4]]).std(), rel=1e-9)
    test = record["test"]
    assert test["rmse"] == pytest.approx(test["standardized"]["rmse"] * scale, rel=1e-12)
    assert test["mae"] == pytest.approx(test["standardized"]["mae"] * scale, rel=1e-12)
    held = data.clients["k5"]
    again = record.model.score(held.x, held.y)  # the model takes and returns the series' own units
    assert again["rmse"] == pytest.approx(test["rmse"], rel=1e-6) and again["n"] == test["n"]
    raw, _ = _run(data, "incfed", standardize="off")
    assert raw["standardization"] == {"applied": False, "mode": "off"} and raw.model.inputs is None
    assert test["nrmse"] < raw["test"]["nrmse"]  # the raw series (mean ≈ 59) saturates the reservoir


def test_standardisation_is_off_on_generated_series_and_refused_under_dp():
    from tff_esn.data.seed_sources.generators import series_dataset
    from tff_esn.runs.standardize import standardizes

    generated = series_dataset("mackey-glass", Task("forecast", 1), clients=2, steps=200)
    assert not standardizes("auto", generated)
    own = series_dataset_from_arrays(_series().reshape(6, 500), CLIENTS, SPLIT, source="npz:own.npz")
    with pytest.raises(ValueError, match="--standardize on: the series' means and variances would be released"):
        standardizes("on", own, dp=True)
    with pytest.warns(UserWarning, match="not standardised .*under DP"):
        assert not standardizes("auto", own, dp=True)


def test_a_series_cut_into_segments_of_one_stream_gives_the_uncut_series_states():
    from tff_esn.esn.hyperparameters import ReservoirConfig
    from tff_esn.esn.states_numpy import states_and_statistics
    from tff_esn.esn.weights import ReservoirWeights

    whole = _series(900)
    segments = np.array(np.split(whole, [200, 450, 700]), dtype=object)
    cut = series_dataset_from_arrays(segments, ["a"] * 4, stream=[7] * 4, source="s")
    uncut = series_dataset_from_arrays(whole[None], ["a"], source="s")
    weights = ReservoirWeights.from_config(ReservoirConfig(units=30, seed=3), 1)

    def states(data):
        return states_and_statistics(data.clients["a"].x, weights.kernel, weights.recurrent, weights.bias, weights.gain,
                                     weights.leaky, keep="all", washout=0)[0]

    assert cut.clients["a"].x.shape == (1, 899, 1)
    np.testing.assert_array_equal(states(cut), states(uncut))


def test_the_washout_of_an_own_forecast_is_chosen_on_validation_and_recorded():
    from tff_esn.registry.algorithms import get_algorithm
    from tff_esn.registry.defaults import source_defaults

    assert source_defaults(get_algorithm("incfed"), "npz:f.npz", task="forecast")["washout"] == "auto"
    assert source_defaults(get_algorithm("incfed"), "narma10", task="forecast")["washout"] == 100
    assert "washout" not in source_defaults(get_algorithm("incfed"), "npz:f.npz", task="classify")
    data = series_dataset_from_arrays(_series().reshape(6, 500), CLIENTS, SPLIT, source="npz:own.npz")
    record, _ = _run(data, "incfed", washout="auto")
    choice = record["washout_selection"]
    assert choice["values"] == [0, 10, 25, 50, 100, 200] and choice["scored_from"] == 200
    assert choice["chosen"] == choice["values"][int(np.argmax(choice["scores"]))] > 0
    assert record.model.spec.washout == choice["chosen"] and record["test"]["n"] == 499 - choice["chosen"]
    assert record["baselines"]["lagged_ridge"]["steps_from"] >= choice["chosen"]


def test_stated_ranges_standardise_a_dp_forecast_as_configuration_touching_no_client_data(tmp_path):
    from tff_esn.privacy import coverage
    from tff_esn.registry.algorithms import resolve_run, run_algorithm
    from tff_esn.data.splits import get_split
    from tff_esn.runs.standardize import STATED_RULE, scaling_for

    records = []
    for shift in (0.0, 3.0):  # other training values, the same stated scaling
        data = series_dataset_from_arrays(_series().reshape(6, 500) + shift, CLIENTS, SPLIT, source="npz:own.npz")
        split = get_split("npz", data)
        run = resolve_run("incfed", data, units=30, washout=20, l2=1e-2, dp_epsilon=8.0, backend="tff")
        records.append(run_algorithm(run, data, split, series_range=(40.0, 60.0)))
    section = records[0]["standardization"]
    assert section == records[1]["standardization"] and section["rule"] == STATED_RULE
    assert section["ranges"] == [[40.0, 60.0]] and section["target"] == {"mean": 50.0, "std": 10.0}
    model = records[0].model
    np.testing.assert_array_equal(model.inputs.mean, [50.0])
    np.testing.assert_array_equal(model.outputs.scale, [10.0])
    assert not any("not standardised" in w for w in records[0]["warnings"])
    assert coverage.undeclared(dict(records[0])) == []
    assert coverage.undeclared_model(model.save(tmp_path / "model")) == []
    assert records[0]["test"]["rmse"] == pytest.approx(records[0]["test"]["standardized"]["rmse"] * 10.0)
    with pytest.raises(ValueError, match="--series-range: expected LO,HI \\(LO < HI, finite\\) for every channel"):
        scaling_for("auto", data, split, series_range=(60.0, 40.0))
    with pytest.raises(ValueError, match="--series-range: scales a forecast's series by stated ranges; drop it"):
        scaling_for("off", data, split, series_range=(40.0, 60.0))
