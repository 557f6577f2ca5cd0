"""WESAD: loader (allow-list unpickler, layout errors), synthetic generator, thesis features and HRV."""

import pickle
import warnings

import neurokit2 as nk
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tff_esn.cli import main
from tff_esn.data.seed_sources import wesad
from tff_esn.data.seed_sources.hrv import HRV_INDICES, windowed_hrv
from tff_esn.data.seed_sources.normalise import causal_moving_average, moving_average_normalise
from tff_esn.data.safe_pickle import UnsafePickleError
from tff_esn.data.seed_sources.synthetic_wesad import PROTOCOLS, generate_subject, protocol_seconds, write_subject

MINUTES = 3.0


@pytest.fixture(scope="module")
def wesad_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("wesad")
    assert main(["data", "synth-wesad", "--out", str(out), "--subjects", "S2,S3,S4", "--minutes", str(MINUTES)]) == 0
    return out


@pytest.fixture(scope="module")
def subject(wesad_dir):
    return wesad.load_subject(wesad_dir / "S2" / "S2.pkl")


def test_generated_files_have_the_real_layout(wesad_dir, subject):
    assert sorted(wesad.subject_files(wesad_dir)) == ["S2", "S3", "S4"]
    n = int(MINUTES * 60 * 700)
    assert subject["subject"] == "S2" and subject["label"].shape == (n,)
    chest, wrist = subject["signal"]["chest"], subject["signal"]["wrist"]
    assert {k: v.shape for k, v in chest.items()} == {"ACC": (n, 3), "ECG": (n, 1), "EMG": (n, 1), "EDA": (n, 1),
                                                       "Temp": (n, 1), "Resp": (n, 1)}
    seconds = n // 700
    assert {k: v.shape for k, v in wrist.items()} == {"ACC": (32 * seconds, 3), "BVP": (64 * seconds, 1),
                                                       "EDA": (4 * seconds, 1), "TEMP": (4 * seconds, 1)}
    assert set(np.unique(subject["label"])) == {0, 1, 2, 3, 4}
    # the file is a plain protocol-2 pickle a stock unpickler reads as well
    with open(wesad_dir / "S2" / "S2.pkl", "rb") as fh:
        plain = pickle.load(fh, encoding="latin1")
    np.testing.assert_array_equal(plain["signal"]["wrist"]["BVP"], wrist["BVP"])


def test_generator_is_deterministic_and_subjects_differ():
    a = generate_subject("S5", minutes=1, seed=3)
    b = generate_subject("S5", minutes=1, seed=3)
    c = generate_subject("S5", minutes=1, seed=4)
    np.testing.assert_array_equal(a["signal"]["chest"]["ECG"], b["signal"]["chest"]["ECG"])
    assert not np.array_equal(a["signal"]["chest"]["ECG"], c["signal"]["chest"]["ECG"])


def test_protocol_orders_and_stress_share():
    for order in PROTOCOLS:
        codes = protocol_seconds(100, order)
        assert codes.size == 6000 and abs(np.mean(codes == 2) - 0.115) < 1e-9
        blocks = [c for i, c in enumerate(codes) if c and (i == 0 or codes[i - 1] != c)]
        assert blocks == ([1, 3, 4, 2, 4] if order == "amusement-first" else [1, 2, 4, 3, 4])
    orders = {tuple(c for i, c in enumerate(s) if c in (2, 3) and s[i - 1] != c)
              for s in (generate_subject(f"S{n}", minutes=0.5)["label"][::700] for n in range(2, 8))}
    assert orders == {(2, 3), (3, 2)}


def test_condition_effects_stress_raises_heart_rate(subject):
    feats, codes = wesad.wrist_features(subject, 5)
    hr = feats[:, 2]
    assert np.nanmean(hr[codes == 2]) > np.nanmean(hr[codes == 1])
    assert np.nanmean(hr[codes == 4]) < np.nanmean(hr[codes == 2])


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_with_code_is_rejected_and_not_run(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "S2.pkl"
    path.write_bytes(pickle.dumps({"signal": {}, "label": _Payload(str(marker)), "subject": "S2"}, protocol=2))
    with pytest.raises(UnsafePickleError, match=r"global (io|builtins)\.open"):
        wesad.load_subject(path)
    assert not marker.exists()


def test_truncated_file_names_the_file(tmp_path, wesad_dir):
    data = (wesad_dir / "S3" / "S3.pkl").read_bytes()
    path = tmp_path / "S3.pkl"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="S3.pkl.*truncated"):
        wesad.load_subject(path)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["signal"]["chest"].update(RESP=d["signal"]["chest"].pop("Resp")), r"\['chest'\]\['Resp'\]"),
    (lambda d: d.pop("label"), r"missing key \['label'\]"),
    (lambda d: d["signal"]["wrist"].update(BVP=d["signal"]["wrist"]["BVP"][:-3]), r"\['wrist'\]\['BVP'\] expected shape"),
    (lambda d: d.update(label=d["label"][:-5]), "whole number"),
    (lambda d: d["label"].__setitem__(0, 9), r"codes \[9\]"),
])
def test_inconsistent_subject_files_raise_naming_the_key(tmp_path, edit, message):
    data = generate_subject("S2", minutes=0.2, seed=1)
    edit(data)
    path = write_subject(data, tmp_path)
    with pytest.raises(ValueError, match=message):
        wesad.load_subject(path)


def test_missing_directory_and_empty_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        wesad.subject_files(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no WESAD subject files"):
        wesad.subject_files(tmp_path)


# ------------------------------------------------------------------ HRV
def _reference(peaks, rate):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = nk.hrv_time(peaks, sampling_rate=rate)
    return {name: ref[f"HRV_{name}"].iloc[0] for name in HRV_INDICES}


def test_windowed_hrv_equals_neurokit_on_sampled_windows(subject):
    bvp = subject["signal"]["wrist"]["BVP"].ravel()
    peaks = nk.ppg_findpeaks(nk.ppg_clean(bvp, sampling_rate=64), sampling_rate=64)["PPG_Peaks"]
    ends = np.random.default_rng(0).integers(25 * 64, bvp.size, 12)
    ours = windowed_hrv(peaks, 64, ends, 25 * 64)
    for k, end in enumerate(ends):
        window = peaks[(peaks > end - 25 * 64) & (peaks <= end)]
        for name, value in _reference(window, 64).items():
            assert ours[name][k] == pytest.approx(value, rel=1e-9, abs=1e-9), name


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(20, 120), min_size=6, max_size=60), st.integers(100, 3000), st.integers(0, 10**6))
def test_windowed_hrv_property(gaps, window, seed):
    peaks = np.cumsum(gaps)
    end = int(np.random.default_rng(seed).integers(peaks[0], peaks[-1] + 1))
    inside = peaks[(peaks > end - window) & (peaks <= end)]
    ours = windowed_hrv(peaks, 100, np.array([end]), window)
    if len(inside) < 2:
        assert all(np.isnan(ours[n][0]) for n in ("MeanNN", "SDNN", "RMSSD", "SDSD", "pNN50"))
    elif len(inside) >= 4:
        for name, value in _reference(inside, 100).items():
            assert ours[name][0] == pytest.approx(value, rel=1e-9, abs=1e-9)


def test_windows_with_fewer_than_two_peaks_are_nan_not_errors():
    out = windowed_hrv(np.array([100, 200]), 64, np.array([50, 150, 250]), 64)
    assert np.isnan(out["MeanNN"][:2]).all() and np.isnan(out["RMSSD"]).all()
    assert np.isnan(windowed_hrv(np.array([], int), 64, np.array([10]), 64)["SDNN"]).all()


# ------------------------------------------------------------------ thesis pipeline
def test_thesis_features_shape_order_and_labels(subject):
    x, y = wesad.thesis_features(subject, hrv_window_s=25)
    assert x.ndim == 2 and x.shape[1] == 4 and x.dtype == np.float32 and y.shape == (x.shape[0],)
    assert x.shape[0] > MINUTES * 60 - 30 and set(np.unique(y)) == {0, 1} and np.isfinite(x).all()
    # stress share of the protocol (11.5 %) up to the dropped warm-up
    assert 0.08 < y.mean() < 0.16


def test_moving_average_normalisation_is_causal():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 4)) + 3
    changed = x.copy()
    changed[120:] = rng.normal(size=(80, 4)) * 50
    for mode in ("divide", "subtract"):
        a, b = moving_average_normalise(x, 25, mode), moving_average_normalise(changed, 25, mode)
        np.testing.assert_array_equal(a[:120], b[:120])
        assert not np.allclose(a[120:], b[120:])
    ma = causal_moving_average(x, 25)
    np.testing.assert_allclose(ma[30], x[6:31].mean(0))
    np.testing.assert_allclose(ma[3], x[:4].mean(0))


def test_nan_and_flat_stretches_do_not_crash(subject):
    data = {**subject, "signal": {**subject["signal"], "wrist": dict(subject["signal"]["wrist"])}}
    bvp = data["signal"]["wrist"]["BVP"].copy()
    bvp[64 * 40: 64 * 50] = np.nan
    bvp[64 * 80: 64 * 95] = bvp[64 * 80]
    eda = data["signal"]["wrist"]["EDA"].copy()
    eda[4 * 20: 4 * 30] = np.nan
    data["signal"]["wrist"].update(BVP=bvp, EDA=eda)
    x, y = wesad.thesis_features(data, hrv_window_s=5, source="S2-gappy")
    assert np.isfinite(x).all() and x.shape[0] > 100
    data["signal"]["wrist"]["BVP"] = np.zeros_like(bvp)
    with pytest.raises(ValueError, match="S2-gappy.*BVP.*heartbeats"):
        wesad.thesis_features(data, source="S2-gappy")


@pytest.mark.slow
def test_full_length_subject_preprocesses_within_ten_seconds():
    import time

    data = generate_subject("S9", minutes=100, seed=0)
    t0 = time.perf_counter()
    x, _ = wesad.thesis_features(data, hrv_window_s=25)
    elapsed = time.perf_counter() - t0
    print(f"thesis_features on a 100-minute synthetic subject: {elapsed:.2f} s, {x.shape[0]} steps")
    assert x.shape[0] > 5900
