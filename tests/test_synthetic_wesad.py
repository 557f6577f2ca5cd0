"""Synthetic WESAD wrist model: calibration to thesis Table 5.1, stress physiology,
learnability through the thesis pipeline, determinism.

One module fixture simulates the 15 full 100-minute wrist-only subjects (≈ 20 s; Table 5.1
describes all 15, and subsets of 5 vary by more than a factor 2); every test reads it.
"""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score

from tff_esn.data.seed_sources import wesad
from scripts.data_summary import THESIS_STRESS_SHARE, THESIS_TABLE_5_1, calibration_statistics
from tff_esn.data.seed_sources.synthetic_wesad import generate_subject

SUBJECTS = wesad.SUBJECTS


@pytest.fixture(scope="module")
def raw():
    """``{subject: (wrist features (T, 4), label codes (T,))}`` of full-length subjects."""
    return {s: wesad.wrist_features(generate_subject(s, seed=0, devices=("wrist",)), 25) for s in SUBJECTS}


def _pooled_stats(raw):
    x = np.concatenate([f for f, _ in raw.values()])
    x = x[np.all(np.isfinite(x), axis=1)]
    return {n: {"min": x[:, i].min(), "mean": x[:, i].mean(), "var": x[:, i].var()}
            for i, n in enumerate(wesad.THESIS_FEATURES)}


# not compared: the thesis' HR min 0.49 bpm (a ~2-minute gap between detected beats) and HRV
# min 13 ms are single artefacts of the real recordings; pEDA's mean is compared on its scale
SKIPPED = {("HR", "min"), ("HRV", "min"), ("pEDA", "mean")}


def test_feature_statistics_within_a_factor_of_two_of_thesis_table_5_1(raw):
    ours = _pooled_stats(raw)
    for name, stats in ours.items():
        for stat, value in stats.items():
            if (name, stat) in SKIPPED:
                continue
            ref = THESIS_TABLE_5_1[name][stat]
            assert 0.5 <= value / ref <= 2.0, (name, stat, value, ref)
    # pEDA is the high-pass part of the EDA: mean ≈ 0 (thesis −0.014), compared on its own scale
    assert abs(ours["pEDA"]["mean"]) < 0.05 * np.sqrt(THESIS_TABLE_5_1["pEDA"]["var"])


def test_class_share_and_steps_per_subject(raw):
    codes = np.concatenate([c for _, c in raw.values()])
    assert abs(np.mean(codes == 2) - THESIS_STRESS_SHARE) < 0.005
    assert all(len(c) == 6000 for _, c in raw.values())  # thesis §5.2: ~6000 samples per subject
    x, y = wesad.thesis_features(generate_subject("S2", seed=0, devices=("wrist",)))
    assert 5900 < len(y) <= 6000 and abs(y.mean() - (1 - 0.8857)) < 0.01


def test_stress_physiology_heart_rate_up_rmssd_down_tonic_eda_up(raw):
    up_hr, down_hrv, up_eda = [], [], []
    for x, c in raw.values():
        base, stress = c == 1, c == 2
        up_hr.append(np.nanmedian(x[stress, 2]) - np.nanmedian(x[base, 2]))
        down_hrv.append(np.nanmedian(x[base, 3]) - np.nanmedian(x[stress, 3]))
        up_eda.append(np.nanmedian(x[stress, 1]) / np.nanmedian(x[base, 1]))
    assert np.median(up_hr) > 8 and np.median(down_hrv) > 3 and np.median(up_eda) > 1.2
    assert min(up_hr) < np.median(up_hr) / 2 or min(up_eda) < 1.1  # responsiveness varies between subjects


def _logistic_balanced_accuracy(raw, **normalise):
    data = {s: wesad.normalise_thesis_features(x, c, **normalise) for s, (x, c) in raw.items()}
    train, test = SUBJECTS[:10], SUBJECTS[10:]  # thesis-primal's training subjects; the other five
    x = np.concatenate([data[s][0] for s in train])
    y = np.concatenate([data[s][1] for s in train])
    model = LogisticRegression(class_weight="balanced", max_iter=2000).fit(np.clip(x, -1e3, 1e3), y)
    xt = np.concatenate([data[s][0] for s in test])
    yt = np.concatenate([data[s][1] for s in test])
    return balanced_accuracy_score(yt, model.predict(np.clip(xt, -1e3, 1e3)))


def test_logistic_regression_beats_the_majority_class_through_the_thesis_pipeline(raw):
    default = _logistic_balanced_accuracy(raw, ma_steps=int(wesad.THESIS_MA_WINDOW_S), ma_mode=wesad.THESIS_MA_MODE)
    assert default > 0.5 + 0.2  # majority class: balanced accuracy 0.5
    # the literal reading of §5.2 (divide by a 25 s moving average) erases the stress levels
    literal = _logistic_balanced_accuracy(raw, ma_steps=25, ma_mode="divide")
    assert literal < 0.6


def test_wrist_model_is_deterministic_and_independent_of_the_chest():
    a = generate_subject("S4", minutes=3, seed=7)
    b = generate_subject("S4", minutes=3, seed=7, devices=("wrist",))
    c = generate_subject("S4", minutes=3, seed=8, devices=("wrist",))
    assert set(b["signal"]) == {"wrist"}
    for key in ("BVP", "EDA", "TEMP", "ACC"):
        np.testing.assert_array_equal(a["signal"]["wrist"][key], b["signal"]["wrist"][key])
    assert not np.array_equal(b["signal"]["wrist"]["BVP"], c["signal"]["wrist"]["BVP"])
    np.testing.assert_array_equal(a["label"], b["label"])
    with pytest.raises(ValueError, match="devices"):
        generate_subject("S4", minutes=1, devices=("arm",))


def test_calibration_statistics_report_the_table_5_1_layout():
    out = calibration_statistics(("S3",), minutes=2)
    assert set(out["features"]) == set(THESIS_TABLE_5_1)
    assert all(set(v) == {"min", "max", "mean", "var"} for v in out["features"].values())
    assert out["steps_per_subject"] == 120 and 0.05 < out["stress_share"] < 0.2


def test_table_5_1_targets_are_the_thesis_rows():
    from pathlib import Path

    text = (Path(__file__).parent / "seed_excerpts" / "003_c2e74226a179ae56.txt").read_text()
    for name, s in THESIS_TABLE_5_1.items():
        assert f"| {name} | {s['min']:.4f} | {s['max']:.4f} | {s['mean']:.4f} | {s['var']:.4f} |" in text, name
    assert f'label "1": {100 * THESIS_STRESS_SHARE:.2f}%' in text
