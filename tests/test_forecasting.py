"""Forecasting and regression: tasks, generated series, metrics, baselines, exact federation, RLS."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

from tff_esn.registry.algorithms import run_algorithm
from tff_esn.runs.baselines import baseline_scores
from tff_esn.closed_form.harvest import Harvester
from tff_esn.closed_form.incfed import fit_incfed
from tff_esn.data.seed_sources import generators
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import load_npz
from tff_esn.data.sources import load_source
from tff_esn.data.splits import get_split
from tff_esn.registry.algorithms import resolve_run
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.ridge import RidgeStats
from tff_esn.esn.rls import RLSReadout
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.common.metrics import regression_metrics
from tff_esn.common.tasks import Task

SMALL = {"units": 40, "state_mode": "all", "washout": 20, "bias_scaling": 1.0, "backend": "numpy"}


def _series(name="narma10", horizon=1, **options):
    options = {"clients": 4, "steps": 150, **options}
    return generators.series_dataset(name, Task("forecast", horizon), **options)


def test_task_refuses_what_does_not_apply():
    with pytest.raises(ValueError, match="--horizon"):
        Task("forecast", 0)
    with pytest.raises(ValueError, match="--horizon"):
        Task("regress", 2)
    with pytest.raises(ValueError, match="--task"):
        Task("predict")
    assert Task("forecast", 3).real and Task("regress").real and not Task().real


def test_regression_metrics_match_scikit_learn():
    rng = np.random.default_rng(0)
    y, p = rng.normal(size=200), rng.normal(size=200)
    m = regression_metrics(y, p[:, None])
    assert m["rmse"] == pytest.approx(np.sqrt(mean_squared_error(y, p)), rel=1e-12)
    assert m["mae"] == pytest.approx(mean_absolute_error(y, p), rel=1e-12)
    assert m["r2"] == pytest.approx(r2_score(y, p), rel=1e-12)
    assert m["nrmse"] == pytest.approx(m["rmse"] / y.std(), rel=1e-12)
    assert regression_metrics(y, np.full(200, y.mean()))["nrmse"] == pytest.approx(1.0)
    assert regression_metrics(np.ones(3), np.zeros(3))["nrmse"] is None
    with pytest.raises(ValueError, match="predictions"):
        regression_metrics(y, p[:10])


def test_narma10_follows_its_recursion_and_is_seeded():
    series = generators.narma(300, np.random.default_rng(1))
    u, y = series.channel("u"), series.channel("y")
    t = np.arange(20, 299)
    expected = [0.3 * y[k] + 0.05 * y[k] * y[k - 9:k + 1].sum() + 1.5 * u[k - 9] * u[k] + 0.1 for k in t]
    np.testing.assert_allclose(y[t + 1], expected, rtol=1e-12)
    again = generators.narma(300, np.random.default_rng(1))
    np.testing.assert_array_equal(series.values, again.values)
    assert (u >= 0).all() and (u <= 0.5).all()
    assert np.all(np.abs(generators.narma(300, np.random.default_rng(1), order=20).channel("y")) < 1)


def test_a_narma_draw_too_long_to_stay_bounded_names_its_length_and_the_flags_that_set_it():
    with pytest.raises(DataError, match=r"draws of 100000 steps diverged .* draw fewer steps \(--series-steps, "
                                        r"--horizon, --series-clients\)"):
        generators.narma(100000, np.random.default_rng(2), retries=0)


def test_mackey_glass_is_the_chaotic_tau17_attractor():
    x = generators.mackey_glass(2000, np.random.default_rng(0)).channel("x")
    assert 0.2 < x.min() < 0.5 and 1.2 < x.max() < 1.45  # the τ = 17 attractor's range
    other = generators.mackey_glass(2000, np.random.default_rng(1)).channel("x")
    assert np.abs(x - other).max() > 0.1  # chaos: other initial histories, other trajectories


def test_forecast_targets_are_the_channel_h_steps_ahead_and_segments_contiguous():
    ds = _series("mackey-glass", horizon=3)
    first, second = ds.clients["c0"], ds.clients["c1"]
    assert first.x.shape == (1, 150, 1) and first.y.shape == (1, 150) and first.real
    np.testing.assert_allclose(first.y[0, :-3], first.x[0, 3:, 0], rtol=1e-6)
    whole = generators.mackey_glass(6 * 153, np.random.default_rng(np.random.SeedSequence([0, 0]))).channel("x")
    np.testing.assert_allclose(second.x[0, :, 0], whole[153:303], rtol=1e-6)
    assert ds.groups == {"c0": "train", "c1": "train", "c2": "train", "c3": "train", "c4": "val", "c5": "test"}
    narma = _series("narma10")
    assert narma.feature_names == ("u",) and narma.label_names == ("y(t+1)",) and narma.task.target == "y"
    assert not np.allclose(_series(split_by="realisations").clients["c0"].x, _series().clients["c0"].x)
    with pytest.raises(DataError, match="--target"):
        generators.series_dataset("lorenz", Task("forecast", 1, "w"), clients=2, steps=50)
    with pytest.raises(DataError, match="--task forecast"):
        generators.series_dataset("sine", Task("regress"))


def test_sources_and_refusals():
    assert load_source("sine", "incfed-wesad", clients=2, steps=60).task == Task("forecast", 1, "s")
    with pytest.raises(ValueError, match="series"):
        load_source("narma1", "incfed-wesad")
    ds = _series()
    with pytest.raises(DataError, match="'thesis-central' serves classify only; use one that serves forecast: central"):
        run_algorithm(resolve_run("thesis-central", ds, config=resolve_run("thesis-central", ds).config),
                      ds, get_split("npz", ds))


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 1000), clients=st.integers(1, 6), horizon=st.integers(1, 5),
       name=st.sampled_from(["narma10", "mackey-glass", "lorenz"]), split_by=st.sampled_from(generators.CLIENT_SPLITS))
def test_incfed_equals_centralized_on_forecasting(seed, clients, horizon, name, split_by):
    ds = generators.series_dataset(name, Task("forecast", horizon), clients=clients, steps=80, split_by=split_by,
                                   seed=seed)
    split = get_split("npz", ds)
    config = {**SMALL, "l2": 1e-3, "units": 20, "seed": seed}
    central = run_algorithm(resolve_run("centralized", ds, config=resolve_run("centralized", ds, **{k: v for k, v in config.items()
                                                                                        if k != "backend"}).config),
                            ds, split)
    fed = run_algorithm(resolve_run("incfed", ds, config=resolve_run("incfed", ds, **config).config), ds, split)
    for group in ("train", "val", "test"):
        for key in ("nrmse", "rmse", "mae", "r2"):
            assert fed[group][key] == pytest.approx(central[group][key], rel=1e-9, abs=1e-12)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000), parts=st.integers(1, 6))
def test_incfed_readout_equals_pooled_ridge_for_any_client_split(seed, parts):
    """Any regrouping of the training states into clients: the same readout as scikit-learn's Ridge on the pool."""
    ds = _series("lorenz", seed=seed)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=15, seed=seed, bias_scaling=1.0), 3)
    harvester = Harvester(ds, StateSpec("all", 10, True))
    states = np.concatenate([harvester.features(weights, c).states for c in ("c0", "c1", "c2", "c3")])
    targets = np.concatenate([harvester.features(weights, c).labels for c in ("c0", "c1", "c2", "c3")])
    rng = np.random.default_rng(seed)
    owner = rng.integers(0, parts, len(states))
    stats = [RidgeStats.from_states(states[owner == k], targets[owner == k, None], bias=True)
             for k in range(parts) if (owner == k).any()]
    readout = fit_incfed(stats, 1e-2)
    reference = Ridge(alpha=1e-2, fit_intercept=False).fit(np.c_[states, np.ones(len(states))], targets)
    np.testing.assert_allclose(readout[0], reference.coef_, rtol=1e-6, atol=1e-9)


@pytest.mark.slow
def test_incfed_through_tff_equals_numpy_on_forecasting():
    ds = _series()
    split = get_split("npz", ds)
    numpy_run = run_algorithm(resolve_run("incfed", ds, config=resolve_run("incfed", ds, **{**SMALL, "l2": 1e-3}).config),
                              ds, split)
    tff_run = run_algorithm(resolve_run("incfed", ds, config=resolve_run("incfed", ds, **{**SMALL, "l2": 1e-3, "backend": "tff"}).config),
                            ds, split)
    assert tff_run["test"]["nrmse"] == pytest.approx(numpy_run["test"]["nrmse"], rel=1e-9)


def test_baselines_of_a_forecast():
    ds = _series("mackey-glass", horizon=2)
    split = get_split("npz", ds)
    out = baseline_scores(ds, split, washout=20)
    test, skip = ds.clients["c5"], out["lagged_ridge"]["steps_from"]  # every baseline scored from the same step
    y, x = test.y[0, skip:], test.x[0, skip:, 0]
    assert out["persistence"]["test"] == regression_metrics(y, test.y[0, skip - 2:-2])  # c(t) = y(t − H)
    assert out["persistence"]["test"]["rmse"] == pytest.approx(regression_metrics(y, x)["rmse"], rel=1e-6)
    assert out["training_mean"]["test"]["nrmse"] == pytest.approx(1.0, abs=0.1)
    assert out["lagged_ridge"]["test"]["nrmse"] < out["persistence"]["test"]["nrmse"] / 10
    lags = out["lagged_ridge"]["lags"]
    assert out["lagged_ridge"]["steps_from"] == max(20, lags - 1)
    selection = out["lagged_ridge"]["lag_selection"]
    assert selection["values"][:5] == [1, 2, 3, 5, 10] and lags == selection["values"][
        int(np.argmin(selection["val_mse"]))]


def test_rls_after_all_data_equals_batch_ridge():
    ds = _series("narma10", clients=3, steps=400)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=100, seed=3, bias_scaling=1.0), 1)
    harvester = Harvester(ds, StateSpec("all", 50, True))
    for l2 in (1e-2, 1.0):
        rls = RLSReadout(101, 1, l2, bias=True)
        stats = []
        for cid in ("c0", "c1", "c2"):
            f = harvester.features(weights, cid)
            size = 150 if cid == "c1" else 37  # blocks above and below N_F = 101, then single samples
            for start in range(0, len(f.states), size):
                rls.update(f.states[start:start + size], f.labels[start:start + size, None])
            stats.append(RidgeStats.from_states(f.states, f.labels[:, None], bias=True))
        single = RLSReadout(101, 1, l2, bias=True)
        for s, y in zip(f.states, f.labels):
            single.update(s[None], y[None, None])
        batch = RidgeStats.sum(stats).solve(l2)
        assert np.linalg.norm(rls.readout - batch) <= 1e-6 * np.linalg.norm(batch)
        np.testing.assert_allclose(single.readout, stats[-1].solve(l2), rtol=1e-6, atol=1e-9 * np.abs(batch).max())
    with pytest.raises(ValueError, match="λ > 0"):
        RLSReadout(3, 1, 0.0)


def _regression_npz(path, per_step):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(120, 30, 2))
    lagged = 0.5 * x[:, :, 0] + 0.3 * np.roll(x[:, :, 0], 1, axis=1) + 0.2 * np.roll(x[:, :, 1], 2, axis=1)
    y = lagged if per_step else x[:, :, 0].mean(axis=1) - 0.5 * x[:, :, 1].mean(axis=1)
    client = np.repeat([f"k{i}" for i in range(6)], 20)
    split = np.repeat(["train", "train", "train", "train", "val", "test"], 20)
    np.savez(path, X=x, y=y, client=client, split=split)
    return path


@pytest.mark.parametrize("per_step", [False, True])
def test_regression_npz_runs_through_the_closed_form_with_baselines(tmp_path, per_step):
    ds = load_npz(_regression_npz(tmp_path / "r.npz", per_step))
    assert ds.task == Task("regress") and ds.n_classes == 1
    split = get_split("npz", ds)
    settings_ = {"state_mode": "all" if per_step else "mean", "units": 30, "backend": "numpy"}
    results = {}
    for algo in ("centralized", "incfed", "fedavg-ridge"):
        config = resolve_run(algo, ds, **{k: v for k, v in settings_.items() if algo == "incfed" or k != "backend"}).config
        results[algo] = record = run_algorithm(resolve_run(algo, ds, config=config), ds, split)
        assert set(record["test"]) == {"nrmse", "rmse", "mae", "r2", "n"}
        assert record["test"]["r2"] > 0.5
        assert record["baselines"]["training_mean"]["test"]["nrmse"] == pytest.approx(1.0, abs=0.3)
        assert record["baselines"]["lagged_ridge"]["test"]["nrmse"] < 1.0
        assert record["baselines"]["persistence"]["test"] is None
        json.dumps(record)
    assert results["incfed"]["test"]["rmse"] == pytest.approx(results["centralized"]["test"]["rmse"], rel=1e-9)
    fedavg = run_algorithm(resolve_run("fedavg", ds, config=resolve_run(
        "fedavg", ds, state_mode=settings_["state_mode"], units=30, rounds=40, patience=0, backend="sim",
        out=str(tmp_path / "fedavg"), progress=False).config), ds, split)
    assert set(fedavg["test"]) == {"nrmse", "rmse", "mae", "r2", "n"} and fedavg["test"]["r2"] > 0.3
    assert fedavg["baselines"] == results["centralized"]["baselines"] and fedavg["result_check"]["test"] == []


def test_a_file_asked_for_another_task_is_refused(tmp_path):
    path = _regression_npz(tmp_path / "r.npz", False)
    with pytest.raises(DataError, match="--task classify.*real targets"):
        load_source(f"npz:{path}", "incfed-wesad", task=Task("classify"))
    ahead = load_source(f"npz:{path}", "incfed-wesad", task=Task("forecast", 2, "f1"))
    raw = load_npz(path)
    assert ahead.task == Task("forecast", 2, "f1") and ahead.label_names == ("f1(t+2)",)
    np.testing.assert_array_equal(ahead.clients["k0"].x, raw.clients["k0"].x[:, :-2])
    np.testing.assert_array_equal(ahead.clients["k0"].y, raw.clients["k0"].x[:, 2:, 1])
    assert ahead.groups == raw.groups
    record = run_algorithm(resolve_run("incfed", ahead, config=resolve_run("incfed", ahead, **SMALL).config),
                           ahead, get_split("npz", ahead))
    assert record["baselines"]["persistence"]["test"] is not None
    with pytest.raises(DataError, match="--target f9: no such channel"):
        load_source(f"npz:{path}", "incfed-wesad", task=Task("forecast", 1, "f9"))


@pytest.mark.parametrize("task", ["forecast", "classify"])
def test_rls_run_equals_centralized(task):
    from closed_form_data import default_split, random_dataset

    ds = _series("mackey-glass") if task == "forecast" else random_dataset(n_clients=6, seed=2)
    split = get_split("npz", ds) if task == "forecast" else default_split(ds)
    settings_ = {"units": 30, "l2": 1e-2, "seed": 4, "state_mode": "all" if task == "forecast" else "mean"}
    online = run_algorithm(resolve_run("rls", ds, config=resolve_run("rls", ds, **settings_).config), ds, split)
    batch = run_algorithm(resolve_run("centralized", ds, config=resolve_run("centralized", ds, **settings_).config),
                          ds, split)
    for key, value in batch["test"].items():  # the harvest's statistics are float32 products summed in float64
        assert online["test"][key] == (value if key == "confusion" else pytest.approx(value, rel=1e-3, abs=1e-9)), key
    features, outputs = online["extra"]["n_features"], 1 if task == "forecast" else 3
    assert online["communication"]["up_floats_per_client"] == features ** 2 + features * outputs


@pytest.mark.parametrize("name", ["partial-incfed", "pfedrr", "fedip", "ensemble", "alignment"])
def test_every_closed_form_algorithm_forecasts(name):
    ds = _series("mackey-glass", clients=3, steps=200)
    settings_ = {**SMALL, "l2": 1e-3, **({"rounds": 1} if name == "fedip" else {})}
    if name not in ("fedip",):
        settings_.pop("backend")
    record = run_algorithm(resolve_run(name, ds, config=resolve_run(name, ds, **settings_).config),
                           ds, get_split("npz", ds))
    assert set(record["test"]) == {"nrmse", "rmse", "mae", "r2", "n"}
    beaten = "training_mean" if name == "alignment" else "persistence"  # α = 0.9 keeps the reservoirs apart
    assert record["test"]["nrmse"] < record["baselines"][beaten]["test"]["nrmse"]


def test_a_regression_ts_file_runs_and_warns_when_no_better_than_the_mean(tmp_path):
    rng = np.random.default_rng(0)
    for part, n in (("TRAIN", 30), ("TEST", 12)):
        cases = [",".join(f"{v:.4f}" for v in rng.normal(size=20)) + f":{rng.normal():.4f}" for _ in range(n)]
        (tmp_path / f"Noise_{part}.ts").write_text("@problemName Noise\n@univariate true\n@targetlabel true\n@data\n"
                                                  + "\n".join(cases) + "\n")
    ds = load_source(f"ts:{tmp_path}/Noise", "incfed-wesad")
    assert ds.task == Task("regress") and ds.clients["train"].y.dtype == np.float64
    record = run_algorithm(resolve_run("centralized", ds, config=resolve_run("centralized", ds, units=20).config),
                           ds, get_split("npz", ds), test_required=True)
    assert record["test"]["nrmse"] >= record["baselines"]["training_mean"]["test"]["nrmse"]
    assert any("no better than the training mean" in w for w in record["warnings"])


def test_cli_forecast_run_and_one_line_refusals(tmp_path, capsys):
    from tff_esn.cli import main

    small = ["--series-clients", "3", "--series-steps", "200", "--units", "30", "--washout", "20"]
    assert main(["run", "incfed", "--data", "narma10", "--task", "forecast", "--backend", "numpy", *small,
                 "--out", str(tmp_path / "n")]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("incfed on narma10: test nrmse ") and "persistence" in line and "lagged ridge" in line
    record = json.loads((tmp_path / "n" / "metrics.json").read_text())
    assert record["config"]["state_mode"] == {"value": "all", "origin": "own-data default"}
    assert record["test"]["nrmse"] < record["baselines"]["persistence"]["test"]["nrmse"]
    assert main(["run", "thesis-central", "--data", "mackey-glass", *small[:4], "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'thesis-central' serves classify only" in err
    assert main(["run", "centralized", "--horizon", "2", "--out", str(tmp_path / "h")]) == 2
    assert "--horizon/--target: apply to --task forecast only" in capsys.readouterr().err


def test_same_seed_same_numbers_other_seed_other_series():
    first, again = (_series("lorenz", split_by="realisations", seed=3) for _ in range(2))
    for cid in first.client_ids:
        np.testing.assert_array_equal(first.clients[cid].x, again.clients[cid].x)
        np.testing.assert_array_equal(first.clients[cid].y, again.clients[cid].y)
    assert not np.array_equal(_series("lorenz", seed=4).clients["c0"].x, first.clients["c0"].x)
    split = get_split("npz", first)
    runs = [run_algorithm(resolve_run("fedavg-ridge", ds, config=resolve_run("fedavg-ridge", ds, units=20, washout=20).config),
                          ds, split)
            for ds in (first, again)]
    assert runs[0]["test"] == runs[1]["test"] and runs[0]["baselines"] == runs[1]["baselines"]


def test_partitions_of_real_targets_keep_the_task_and_refuse_class_skews(tmp_path):
    from tff_esn.data.partition import partition_dataset

    ds = load_npz(_regression_npz(tmp_path / "r.npz", False))
    split = get_split("npz", ds)
    dealt, new_split, record = partition_dataset(ds, split, "iid", 8, seed=1)
    assert dealt.task == Task("regress") and len(new_split.train) == 8 and record["label_histogram"] is None
    with pytest.raises(DataError, match="dirichlet:0.1: skews the classes.*use iid"):
        partition_dataset(ds, split, "dirichlet:0.1", 8)


def test_per_step_targets_with_mean_states_are_refused_before_the_run(tmp_path):
    ds = load_npz(_regression_npz(tmp_path / "r.npz", True))
    with pytest.raises(DataError, match="one target per step, but --state-mode mean.*use --state-mode all"):
        run_algorithm(resolve_run("centralized", ds, config=resolve_run("centralized", ds, state_mode="mean").config),
                      ds, get_split("npz", ds))


def test_forecasting_a_file_runs_with_default_flags_its_task_sets_per_step_states(tmp_path, capsys):
    from tff_esn.cli import main
    from tff_esn.registry.algorithms import get_algorithm
    from tff_esn.registry.defaults import source_defaults

    path = _regression_npz(tmp_path / "r.npz", False)
    assert main(["run", "incfed", "--data", f"npz:{path}", "--task", "forecast", "--out", str(tmp_path / "i")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(f"incfed on npz:{path}: test nrmse ")
    record = json.loads((tmp_path / "i" / "metrics.json").read_text())
    assert record["config"]["state_mode"] == {"value": "all", "origin": "own-data default"}
    ahead = load_source(f"npz:{path}", "incfed-wesad", task=Task("forecast", 1))
    assert resolve_run("fedavg", ahead).config.model.state_mode == "all"  # the dataset's task, for library users
    assert source_defaults(get_algorithm("fedavg"), f"npz:{path}")["state_mode"] == "auto"  # a file's own task: chosen per sequence
    assert source_defaults(get_algorithm("fedcurv"), "narma10")["units"] == 500
