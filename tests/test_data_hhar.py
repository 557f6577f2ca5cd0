"""HHAR: CSV loader (null labels, copies, nearest-time join), synthetic CSVs, the HHAR pipelines."""

import json

import numpy as np
import pandas as pd
import pytest

from tff_esn.cli import main
from tff_esn.data.seed_sources import hhar
from tff_esn.data.cache import load_dataset
from tff_esn.data.seed_sources.pipelines import INCFED_HHAR_FEATURES, window_features
from tff_esn.data.sources import load_source
from tff_esn.data.seed_sources.synthetic_hhar import generate_frames, write_hhar

USERS = ("a", "b", "c")


@pytest.fixture(scope="module")
def hhar_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("hhar")
    write_hhar(out, users=USERS, minutes=0.25, seed=1, models=["nexus4", "s3", "samsungold", "gear"])
    return out


def test_csvs_keep_null_labels_as_text(hhar_dir):
    frames = hhar.read_hhar(hhar_dir)
    acc = frames[("phone", "acc")]
    assert list(acc.columns) == list(hhar.COLUMNS)
    assert (acc["gt"] == "null").sum() > 0 and acc["gt"].isna().sum() == 0
    assert set(acc["gt"].unique()) == {*hhar.ACTIVITIES, "null"}
    assert "samsungold" in set(acc["Model"]) and "samsungold" not in set(frames[("phone", "gyro")]["Model"])
    rates = {m: 1e9 / np.median(np.diff(g["Creation_Time"].to_numpy()))
             for m, g in acc[acc["User"] == "a"].groupby("Device", observed=True)}
    assert 190 < rates["nexus4_1"] < 210 and 45 < rates["samsungold_2"] < 55


def test_runs_drop_null_skip_models_without_gyroscope_and_keep_native_rates(hhar_dir):
    frames = hhar.read_hhar(hhar_dir)
    runs = hhar.device_recordings(frames[("phone", "acc")], frames[("phone", "gyro")])
    assert set(runs) == {(u, m) for u in USERS for m in ("nexus4", "s3")}
    run = runs[("a", "nexus4")]
    assert run.values.shape[1] == 6 and np.isfinite(run.values).all()
    assert set(np.unique(run.labels)) == set(range(6))
    assert 150 < 1 / np.median(np.diff(run.t)) < 250


def _frame(device, times_ns, values, labels, user="a"):
    n = len(times_ns)
    return pd.DataFrame({"Index": np.arange(n), "Arrival_Time": np.arange(n), "Creation_Time": np.asarray(times_ns),
                         "x": values[:, 0], "y": values[:, 1], "z": values[:, 2], "User": user,
                         "Model": device.split("_")[0], "Device": device, "gt": labels}).astype(
        {c: "category" for c in ("User", "Model", "Device", "gt")})


def test_copy_with_fewer_gaps_and_nearest_time_join():
    t = np.arange(0, 2000) * 10_000_000  # 100 Hz for 20 s
    gappy = np.concatenate([t[:500], t[900:]])  # a 4-s gap
    ones = np.ones((2000, 3))
    acc = pd.concat([_frame("nexus4_1", gappy, ones[: len(gappy)], "walk"), _frame("nexus4_2", t, 2 * ones, "walk")])
    gyro_t = t[::2] + 3_000_000  # 50 Hz, 3 ms late
    gyro_v = np.arange(len(gyro_t))[:, None] * np.ones((1, 3))
    gyro = pd.concat([_frame("nexus4_1", gyro_t, gyro_v, "walk"), _frame("nexus4_2", gyro_t, gyro_v, "walk")])
    runs = hhar.device_recordings(acc.reset_index(drop=True), gyro.reset_index(drop=True))
    run = runs[("a", "nexus4")]
    assert run.device == "nexus4_2" and np.all(run.values[:, :3] == 2)
    # acc sample k at 10k ms: nearest gyro sample is k // 2 (at 20(k//2)+3 ms)
    np.testing.assert_array_equal(run.values[:6, 3], [0, 0, 1, 1, 2, 2])


def test_unknown_label_and_missing_column_are_clear_errors(tmp_path):
    t = np.arange(10) * 10_000_000
    v = np.zeros((10, 3))
    bad = tmp_path / "Phones_accelerometer.csv"
    _frame("s3_1", t, v, "jump").to_csv(bad, index=False)
    with pytest.raises(ValueError, match="unknown activity label.*jump"):
        hhar.read_sensor_csv(bad)
    _frame("s3_1", t, v, "sit").drop(columns="gt").to_csv(bad, index=False)
    with pytest.raises(ValueError, match=r"Phones_accelerometer.csv: missing column\(s\) \['gt'\]"):
        hhar.read_sensor_csv(bad)


def test_window_features_match_a_direct_computation():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(650, 6))
    f = window_features(values, 200)
    assert f.shape == (650, 32) and len(INCFED_HHAR_FEATURES) == 32
    assert np.isnan(f[:199, 6:30]).all() and np.isfinite(f[199:]).all()
    for t in (199, 250, 299, 300, 649):
        k = (t - 199) // 100
        w = values[100 * k: 100 * k + 200]
        np.testing.assert_allclose(f[t, 6:30], np.concatenate([w.mean(0), w.std(0), w.min(0), w.max(0)]))
    np.testing.assert_allclose(f[:, 30], np.linalg.norm(values[:, :3], axis=1))


@pytest.mark.parametrize("pipeline, shape", [("incfed-hhar", (500, 32)), ("pfedrr-hhar", (200, 6)),
                                             ("fedip-hhar", (400, 6))])
def test_pipelines_on_the_csvs(hhar_dir, tmp_path, pipeline, shape):
    data = load_source(f"hhar:{hhar_dir}", pipeline, cache_dir=tmp_path)
    assert data.client_ids == USERS and data.n_classes == 6 and data.label_names == hhar.ACTIVITIES
    for c in data.clients.values():
        assert c.x.shape[1:] == shape and c.y.ndim == 1 and len(c) > 5
        np.testing.assert_allclose(c.x.reshape(-1, shape[1]).mean(0), 0, atol=0.35)


def test_synthetic_source_equals_the_written_csvs(hhar_dir, tmp_path):
    from_files = load_source(f"hhar:{hhar_dir}", "pfedrr-hhar", cache_dir=tmp_path)
    in_memory = load_source("synthetic-hhar", "pfedrr-hhar", cache_dir=tmp_path, users=USERS, minutes=0.25, seed=1)
    for u in USERS:
        np.testing.assert_allclose(from_files.clients[u].x, in_memory.clients[u].x, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(from_files.clients[u].y, in_memory.clients[u].y)


def test_generator_is_deterministic():
    a = generate_frames(users=["d"], minutes=0.05, seed=2, models=["s3mini"])[("phone", "acc")]
    b = generate_frames(users=["d"], minutes=0.05, seed=2, models=["s3mini"])[("phone", "acc")]
    pd.testing.assert_frame_equal(a, b)


def test_cli_rejects_unknown_users(tmp_path, capsys):
    assert main(["data", "synth-hhar", "--out", str(tmp_path), "--users", "a,z"]) == 2
    assert "unknown user(s) ['z']" in capsys.readouterr().err


def test_squared_appends_the_square_of_each_standardized_axis(hhar_dir, tmp_path):
    plain = load_source(f"hhar:{hhar_dir}", "pfedrr-hhar", cache_dir=tmp_path)
    squared = load_source(f"hhar:{hhar_dir}", "pfedrr-hhar", cache_dir=tmp_path, squared=True)
    assert squared.feature_names == (*plain.feature_names, *(f"{a}^2" for a in plain.feature_names))
    for u in USERS:
        x = squared.clients[u].x
        assert x.shape == plain.clients[u].x.shape[:2] + (12,)
        np.testing.assert_array_equal(x[..., :6], plain.clients[u].x)
        np.testing.assert_allclose(x[..., 6:], plain.clients[u].x.astype(np.float64) ** 2, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(squared.clients[u].y, plain.clients[u].y)
    assert len(list((tmp_path / "datasets").glob("pfedrr-hhar-*.npz"))) == 2  # its own cache key


def test_cli_squared_inputs_reach_the_pipeline_and_are_refused_where_they_do_not_apply(hhar_dir, tmp_path, capsys):
    five = tmp_path / "five"
    write_hhar(five, users=list("abcde"), minutes=0.25, seed=2, models=["nexus4"])
    flags = ["--data", f"hhar:{five}", "--pipeline", "pfedrr-hhar", "--cache-dir", str(tmp_path), "--units", "8"]
    for name, extra in (("plain", []), ("squared", ["--squared-inputs"])):
        assert main(["run", "centralized", *flags, *extra, "--out", str(tmp_path / name)]) == 0
    plain, squared = (json.loads((tmp_path / n / "metrics.json").read_text()) for n in ("plain", "squared"))
    assert squared["cli"]["squared_inputs"] is True and plain["cli"]["squared_inputs"] is False
    assert plain["extra"]["n_features"] == squared["extra"]["n_features"] == 9  # the reservoir's, not the inputs'
    cached = sorted((tmp_path / "datasets").glob("pfedrr-hhar-*.npz"))  # the squared inputs: their own data set
    assert sorted(len(load_dataset(p).feature_names) for p in cached) == [6, 12]
    capsys.readouterr()
    assert main(["run", "centralized", "--data", f"hhar:{hhar_dir}", "--pipeline", "incfed-hhar", "--squared-inputs",
                 "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--squared-inputs: applies to the pipelines fedip-hhar, pfedrr-hhar, got --pipeline incfed-hhar" in err
