"""Free-run (closed-loop) forecasting: Model.generate, its scores, exactness under federation, bad windows."""

import numpy as np
import pytest

from tff_esn.common.tasks import Task
from tff_esn.data.errors import DataError
from tff_esn.data.seed_sources.generators import LYAPUNOV, series_dataset
from tff_esn.data.splits import get_split
from tff_esn.esn.model import Model, joint_forecast
from tff_esn.registry.algorithms import resolve_run, run_algorithm
from tff_esn.runs.free_run import VPT_THRESHOLD, check_free_run, free_run_scores, window_starts

SETTINGS = {"units": 80, "l2": 1e-8, "washout": 50, "spectral_radius": 0.9}


@pytest.fixture(scope="module")
def mackey_glass():
    data = series_dataset("mackey-glass", Task("forecast", 1), clients=3, steps=400, held_steps=400)
    split = get_split("npz", data)
    runs = {algo: run_algorithm(resolve_run(algo, data, **SETTINGS), data, split, free_run=40)
            for algo in ("centralized", "incfed")}
    return data, split, runs


def test_a_free_run_feeds_each_forecast_back_as_the_next_input(mackey_glass):
    data, split, runs = mackey_glass
    model = runs["centralized"].model
    x = data.clients[split.test[0]].x[0]
    generated = model.generate(x[:200], 6)
    fed = x[:200, 0].tolist()
    for k in range(6):  # the teacher-forced one-step forecast of the series extended by the forecasts so far
        step = model.predict(np.array(fed, np.float32)[None, :, None])[0, -1]
        assert generated[k] == pytest.approx(step, rel=1e-6, abs=1e-9)
        fed.append(step)
    assert generated[0] == pytest.approx(model.predict(x[None, :200])[0, -1], rel=1e-12)


def test_incfed_free_runs_equal_the_centralized_ones_and_are_scored(mackey_glass):
    data, split, runs = mackey_glass
    central, incfed = runs["centralized"]["free_run"], runs["incfed"]["free_run"]
    assert central["steps"] == 40 and central["lyapunov_exponent"] == LYAPUNOV["mackey-glass"][0]
    for group in ("val", "test"):
        assert incfed[group]["nrmse"] == pytest.approx(central[group]["nrmse"], rel=1e-6)
        np.testing.assert_allclose(incfed[group]["nrmse_per_step"], central[group]["nrmse_per_step"], rtol=1e-5)
    test = central["test"]
    assert test["windows"] == len(window_starts(400, 40, 50)) == 8 and len(test["nrmse_per_step"]) == 40
    assert test["nrmse"] < 0.5 and test["nrmse_per_step"][0] < test["nrmse_per_step"][-1]
    assert test["vpt_lyapunov_times"] == pytest.approx(test["vpt_steps"] * 0.006 * 1.0)
    # the scores recomputed from the model's own free runs
    model, x = runs["centralized"].model, data.clients[split.test[0]].x[0]
    y = data.clients[split.test[0]].y[0]
    errors = np.array([model.generate(x[:w], 40) - y[w - 1:w + 39] for w in window_starts(400, 40, 50)])
    assert test["nrmse"] == pytest.approx(np.sqrt(np.mean(errors ** 2)) / y.std(), rel=1e-9)
    exceeded = np.abs(errors) / y.std() > VPT_THRESHOLD
    assert test["vpt_steps"] == np.mean([e.argmax() if e.any() else 40 for e in exceeded])


def test_a_free_run_window_beyond_the_test_series_or_of_another_horizon_is_refused():
    data = series_dataset("mackey-glass", Task("forecast", 1), clients=2, steps=100, held_steps=120)
    split = get_split("npz", data)
    with pytest.raises(DataError, match="--free-run 80: val client 'c2' has a series of 120 steps, too short for "
                                        "a warm-up beyond the washout \\(50\\) and 80 free-run steps; use a "
                                        "window below 70"):
        check_free_run(80, data, split, 50)
    check_free_run(70, data, split, 50)
    ahead = series_dataset("mackey-glass", Task("forecast", 2), clients=2, steps=100)
    with pytest.raises(DataError, match="--free-run 5: feeds the forecast back .* --horizon 1"):
        run_algorithm(resolve_run("centralized", ahead, units=20, washout=10), ahead, get_split("npz", ahead),
                      free_run=5)
    with pytest.raises(ValueError, match="generate: expected steps ≥ 1 and, for the inputs besides 'x'"):
        run_algorithm(resolve_run("centralized", data, units=20, washout=10), data, split).model.generate(
            data.clients["c0"].x[0], 3, exog=np.zeros((2, 1)))


@pytest.fixture(scope="module")
def lorenz_models():
    data = {c: series_dataset("lorenz", Task("forecast", 1, c), clients=2, steps=300, held_steps=300)
            for c in ("x", "y", "z")}
    split = get_split("npz", data["x"])
    models = {(algo, c): run_algorithm(resolve_run(algo, d, **SETTINGS), d, split).model
              for algo in ("centralized", "incfed") for c, d in data.items()}
    return data, split, models


def test_a_joint_forecast_feeds_every_channel_back(lorenz_models, tmp_path):
    data, split, models = lorenz_models
    single = [models["centralized", c] for c in ("x", "y", "z")]
    joint = joint_forecast(single)
    assert joint.channels == ("x", "y", "z") and joint.fed_back == ("x", "y", "z")
    x = data["x"].clients[split.test[0]].x[0]
    np.testing.assert_allclose(joint.decision_function(x[None]),
                               np.concatenate([m.decision_function(x[None]) for m in single], axis=1), rtol=1e-12)
    np.testing.assert_allclose(joint.predict(x[None]), single[0].predict(x[None]), rtol=1e-12)
    generated, fed = joint.generate(x[:150], 5), x[:150].tolist()
    for k in range(5):  # every channel's teacher-forced forecast on the series extended by the forecasts so far
        step = [m.predict(np.array(fed, np.float32)[None])[0, -1] for m in single]
        assert generated[k] == pytest.approx(step[0], rel=1e-5, abs=1e-7)
        fed.append(step)
    np.testing.assert_array_equal(Model.load(joint.save(tmp_path / "joint")).generate(x[:150], 5), generated)
    incfed = joint_forecast([models["incfed", c] for c in ("x", "y", "z")])
    np.testing.assert_allclose(incfed.generate(x[:150], 40), joint.generate(x[:150], 40), rtol=1e-6, atol=1e-9)
    scores = free_run_scores(joint, data["x"], split, 40, lyapunov=LYAPUNOV["lorenz"])
    assert scores["test"]["vpt_steps"] > 0 and scores["test"]["windows"] == len(window_starts(300, 40, 50))
    with pytest.raises(ValueError, match="joint_forecast: expected one-step linear forecasts of distinct input"):
        joint_forecast([single[0], single[0]])
