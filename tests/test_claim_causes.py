"""Disagreeing claims get ``cause="data"`` only when the baselines explain them."""

import numpy as np

from scripts.common import baseline_accuracy, chance_cause, data_cause, unless_at_chance
from scripts.thesis_preliminary import fluctuation


def test_data_cause_from_the_baselines():
    cause, reason = data_cause({"incfed 25%": 99.0, "fedip 25%": 100.0}, lr=100.0, majority=17.0)
    assert cause == "data" and "ceiling" in reason
    cause, reason = data_cause({"incfed 25%": 30.0, "fedavg 25%": 41.0}, lr=40.0, majority=38.0)
    assert cause == "data" and "majority" in reason
    # LR's summary features weak, but the ESNs learn (synthetic WESAD, quick profile): no data cause
    assert data_cause({"incfed 25%": 44.1, "fedavg 25%": 62.9}, lr=43.2, majority=38.6) == (None, "")
    assert data_cause({"incfed 25%": 43.7}, lr=43.2, majority=38.6)[0] is None  # margin is strict above 5 points
    assert data_cause({"incfed 25%": 30.0}, lr=80.0, majority=38.0) == (None, "")  # LR learns, the ESN not


def test_baseline_accuracy_reads_a_record_section():
    section = {"majority": {"class": 1, "val": None, "test": {"accuracy": 0.25}},
               "logistic_regression": {"inputs": "summary", "val": None, "test": {"accuracy": 0.5}}}
    assert baseline_accuracy(section) == {"majority": 25.0, "LR": 50.0}
    assert baseline_accuracy(section, "val") == {"majority": None, "LR": None}


def test_chance_cause_only_when_every_run_is_at_chance():
    cause, reason = chance_cause({"FedAvg-1.0": 0.20, "FedCurv-1.0": 0.47})
    assert cause == "seed" and "FedAvg-1.0 0.200" in reason and "FedCurv-1.0 0.470" in reason
    assert chance_cause({"FedAvg-1.0": 0.20, "FedCurv-1.0": 0.75}) == (None, "")  # one run learned
    assert chance_cause({"FedAvg-1.0": 0.55}, margin=0.01) == (None, "")
    assert chance_cause({"FedAvg-1.0": 0.20, "FedCurv-1.0": None}) == (None, "")  # an AUC is missing
    assert chance_cause({}) == (None, "")



def test_a_claim_on_runs_at_chance_cannot_hold():
    """thesis-discriminative: FedAvg+Disc with different reservoirs 'exceeded' the centralized F1 (0.874 vs
    0.810) at test AUC 0.48 — the majority class's F1, not learning."""
    assert unless_at_chance(True, {"FedAvg-1.0+Disc": 0.48, "FedCurv-1.0+Disc": 0.52}) == (
        False, "seed", chance_cause({"FedAvg-1.0+Disc": 0.48, "FedCurv-1.0+Disc": 0.52})[1])
    assert unless_at_chance(True, {"FedAvg-1.0+Disc": 0.48, "FedCurv-1.0+Disc": 0.71}) == (True, None, "")
    assert unless_at_chance(False, {"FedAvg-1.0+Disc": 0.71}) == (False, None, "")
    assert unless_at_chance(None, {"FedAvg-1.0+Disc": 0.48})[0] is None  # undetermined stays undetermined


def test_fluctuation_is_the_range_over_the_last_half_of_the_rounds():
    rows = [{"test_f1_micro": v} for v in (0.1, 0.9, 0.70, 0.75, 0.72, 0.80)]
    assert fluctuation(rows) == 0.80 - 0.72
    assert abs(fluctuation([{"test_f1_micro": 0.5}, {"test_f1_micro": 0.6}]) - 0.1) < 1e-12


def test_fedip_transfer_causes():
    from scripts.fedip_table import _transfer

    m = {(0.25, "incfed"): 49.0, (0.25, "LR"): 51.5, (1.0, "incfed"): 72.0, (1.0, "LR"): 74.5}
    cause, reason = _transfer(m, [0.25], 1.0)
    assert cause == "data" and "51.5 %" in reason
    assert _transfer({**m, (0.25, "incfed"): 40.0}, [0.25], 1.0)[0] == "defect"  # IncFed far below LR
    assert _transfer({**m, (0.25, "LR"): 70.0, (0.25, "incfed"): 69.0}, [0.25], 1.0) == (None, "")  # split not weak


def test_squared_reason_needs_the_squared_inputs_within_the_margin_of_lr_at_every_weak_fraction():
    from scripts.common import squared_reason

    lr = {"25%": 67.0, "50%": 64.0}
    closed = {"25%": {"fedrr": 63.0, "LR": 56.0}, "50%": {"fedrr": 60.0, "LR": 56.0}}
    reason = squared_reason({"25%": "gap", "50%": "gap"}, closed, lr, margin=5.0)
    assert "25%: 63.0 vs 67.0, 56.0" in reason and "50%: 60.0 vs 64.0, 56.0" in reason
    assert squared_reason({"25%": "gap", "50%": "gap"}, {"25%": closed["25%"]}, lr, margin=5.0) is None  # unmeasured
    assert squared_reason({"25%": "gap"}, {"25%": {"fedrr": 61.9, "LR": 56.0}}, lr, margin=5.0) is None  # 5.1 below
    assert squared_reason({}, closed, lr, margin=5.0) is None


def test_power_reason_needs_means_carried_and_power_lost_at_every_weak_fraction():
    from scripts.common import POWER_R2, power_reason

    lost = {"mean_min": 0.93, "mean_max": 1.0, "std_min": -2.7, "std_max": 0.59, "std_median": -0.9}
    reason = power_reason({"25%": "gap"}, {"25%": lost})
    assert reason is not None and "0.93–1.00" in reason and "-0.90, 0.59" in reason
    assert power_reason({"25%": "gap", "50%": "gap"}, {"25%": lost}) is None  # 50 % not measured
    assert power_reason({"25%": "gap"}, {"25%": {**lost, "std_median": POWER_R2}}) is None  # power carried
    assert power_reason({"25%": "gap"}, {"25%": {**lost, "mean_min": -1.0}}) is None  # means carried no better
    assert power_reason({"25%": "gap"}, {"25%": {**lost, "mean_min": 0.68}}) is not None
    assert power_reason({"25%": "gap"}, {"25%": None}) is None  # per-step labels: no summary


def test_pfedrr_and_fedip_causes_turn_data_only_with_the_measurement():
    from scripts.fedip_table import _transfer
    from scripts.framework import MeanStd
    from scripts.pfedrr_table import _cause

    lost = {"mean_min": 0.93, "mean_max": 1.0, "std_min": -2.7, "std_max": 0.59, "std_median": -0.9}
    sums = {0.25: {"fedrr": MeanStd(46.0, 1.0), "fedrr train": MeanStd(99.0, 0.0), "LR": MeanStd(67.0, 0.0)}}
    assert _cause(sums, "hhar", "")[0] == "defect"
    cause, reason = _cause(sums, "hhar", "", {"25%": lost})
    assert cause == "data" and "46.0" in reason and "motion power" in reason
    m = {(0.25, "incfed"): 40.0, (0.25, "LR"): 51.5, (1.0, "incfed"): 72.0, (1.0, "LR"): 74.5}
    assert _transfer(m, [0.25], 1.0)[0] == "defect"
    assert _transfer(m, [0.25], 1.0, {"25%": lost})[0] == "data"


def test_fedavg_train_accuracy_reason_needs_interpolating_orthogonal_local_readouts():
    from scripts.incfed_tables import _fedavg_averages_local_fits

    cells = {(f, "incfed"): [{"train": {"accuracy": a}}] for f, a in ((0.25, 1.0), (1.0, 0.987))}
    local = {0.25: {"own": 100.0, "cos": -0.06, "average": 78.0}, 1.0: {"own": 100.0, "cos": 0.04, "average": 82.6}}
    reason = _fedavg_averages_local_fits(cells, local, (0.25, 1.0))
    assert reason is not None and "78.0 %" in reason and "-0.06" in reason and "98.7" in reason
    assert _fedavg_averages_local_fits(cells, None, (0.25, 1.0)) is None
    assert _fedavg_averages_local_fits(cells, {**local, 1.0: {**local[1.0], "cos": 0.5}}, (0.25, 1.0)) is None
    assert _fedavg_averages_local_fits(cells, {**local, 0.25: {**local[0.25], "own": 90.0}}, (0.25, 1.0)) is None


def test_chosen_l2_is_the_best_validation_accuracy_and_a_tie_goes_to_the_larger_lambda():
    from scripts.common import chosen_l2

    assert chosen_l2([0.5, 0.7, 0.6]) == 1
    assert chosen_l2([0.5, 0.7, 0.7, 0.6]) == 2
    assert chosen_l2([0.4]) == 0


def test_feature_ridge_accuracy_picks_lambda_on_validation():
    from closed_form_data import default_split, random_dataset
    from scripts.common import FEATURE_RIDGE, chosen_l2, feature_ridge_accuracy
    from tff_esn.runs.baselines import ridge_on_features

    data = random_dataset(n_clients=7, steps=12, features=3, n_classes=3, seed=2, sizes=[30] * 7)
    split = default_split(data)
    grid = (1e-3, 1e1, 1e5)
    got = feature_ridge_accuracy(data, split, 0.5, grid=grid)
    every = ridge_on_features(data, split, (*grid, 0.5))
    best = chosen_l2([m["accuracy"] for m in every["val"][:3]])
    assert got == {FEATURE_RIDGE: 100 * every["test"][best]["accuracy"],
                   f"{FEATURE_RIDGE} λ fixed": 100 * every["test"][3]["accuracy"]}


def test_loss_reason_needs_fedrr_within_the_margin_of_ridge_on_the_lr_features_at_every_weak_fraction():
    from scripts.common import loss_reason

    lr = {"25%": 67.4, "50%": 64.0}
    ridge = {"25%": 60.1, "50%": 58.0}
    reason = loss_reason({"25%": "gap", "50%": "gap"}, {"25%": 57.4, "50%": 53.5}, ridge, lr, margin=5.0)
    assert "25%: 57.4 vs 60.1 vs 67.4" in reason and "50%: 53.5 vs 58.0 vs 64.0" in reason and "loss" in reason
    assert loss_reason({"25%": "gap", "50%": "gap"}, {"25%": 57.4, "50%": 52.9}, ridge, lr, margin=5.0) is None
    assert loss_reason({"25%": "gap"}, {"25%": 43.6}, {"25%": 64.0}, lr, margin=5.0) is None  # the reservoir's part
    assert loss_reason({"25%": "gap"}, {"25%": 57.4}, {}, lr, margin=5.0) is None  # not measured
    assert loss_reason({}, {}, ridge, lr, margin=5.0) is None


def test_pfedrr_cause_prefers_the_loss_and_else_reports_what_was_measured_beside():
    from scripts.framework import MeanStd
    from scripts.pfedrr_table import FEATURE_RIDGE, _cause

    lost = {"mean_min": 0.93, "mean_max": 1.0, "std_min": -2.7, "std_max": 0.59, "std_median": -0.9}
    cell = {"fedrr": MeanStd(57.4, 1.0), "fedrr train": MeanStd(80.0, 0.0), "LR": MeanStd(65.5, 0.0),
            FEATURE_RIDGE: MeanStd(61.8, 0.0)}
    cause, reason = _cause({0.25: cell}, "hhar", "")
    assert cause == "data" and "57.4 vs 61.8 vs 65.5" in reason and "Beside it" not in reason
    far = {**cell, "fedrr": MeanStd(43.6, 1.0), FEATURE_RIDGE: MeanStd(64.0, 0.0)}
    assert _cause({0.25: far}, "hhar", "")[0] == "defect"
    cause, reason = _cause({0.25: far}, "hhar", "", {"25%": lost}, {"25%": {"fedrr": 55.0, "LR": 56.4}})
    assert cause == "data" and "motion power" in reason
    assert "inputs (no reservoir) 25% 64.0; FedRR on the squared inputs 25% 55.0." in reason
    cause, reason = _cause({0.25: far}, "hhar", "", None, {"25%": {"fedrr": 62.8, "LR": 56.4}})
    assert cause == "data" and "62.8 vs 65.5, 56.4" in reason  # the squared inputs reach LR


def test_select_l2_returns_the_readout_with_the_best_validation_accuracy():
    from closed_form_data import default_split, random_dataset
    from scripts.common import accuracy_of, chosen_l2, select_l2, shared_closed_form_runs
    from scripts.framework import run_config
    from tff_esn.esn.ridge import RidgeStats

    data = random_dataset(n_clients=6, steps=10, features=3, n_classes=3, seed=3, sizes=[12] * 6)
    run = shared_closed_form_runs(data, {1.0: default_split(data)}, run_config("incfed", units=15, seed=1))[1.0]
    total = RidgeStats.sum(run.stats())
    grid = (1e-4, 1e-1, 1e2, 1e5)
    l2, readout = select_l2(run, total, grid)
    val = [accuracy_of(run, total.solve(g), run.split.val) for g in grid]
    assert l2 == grid[chosen_l2(val)]
    np.testing.assert_allclose(readout, total.solve(l2), rtol=1e-7, atol=1e-10)


def test_fedip_table_says_when_its_ip_runs_were_decided_by_rounding():
    from scripts.fedip_table import SENSITIVITY, _rounding_note
    from scripts.fedip_table import ROUNDING_SENSITIVITY

    calm = {"wesad": {(0.25, "fedip"): [60.0], (0.25, SENSITIVITY): [2e-7, 5e-7]}}
    assert _rounding_note(calm) == "" and _rounding_note({"wesad": {(0.25, "fedip"): [60.0]}}) == ""
    chaotic = {**calm, "hhar": {(0.5, SENSITIVITY): [3e-7, 0.8]}}
    note = _rounding_note(chaotic)
    assert "decided by float rounding" in note and "0.8 of their size" in note
    assert _rounding_note({"hhar": {(0.5, SENSITIVITY): [ROUNDING_SENSITIVITY]}}) == ""


def _fedip_claims(sensitivity: float) -> list:
    """The claims of fedip-table on WESAD where FedIP loses to IncFed at 25 % and nothing in the baselines
    explains it; FedIP's runs at 25 % have the given rounding sensitivity."""
    import types

    from scripts.fedip_table import SENSITIVITY, Settings, _claims

    cells = {(0.25, "incfed"): [60.0], (0.25, "fedip"): [57.0], (0.25, "majority"): [40.0], (0.25, "LR"): [58.0],
             (0.25, SENSITIVITY): [1e-7, sensitivity],
             (1.0, "incfed"): [70.0], (1.0, "fedip"): [72.0], (1.0, "majority"): [40.0], (1.0, "LR"): [62.0],
             (1.0, SENSITIVITY): [1e-7]}
    claims = []
    ctx = types.SimpleNamespace(claim=lambda *args, **kwargs: claims.append((args, kwargs)))
    _claims(ctx, {"wesad": cells}, Settings(datasets=("wesad",), fractions=(0.25, 1.0)), {})
    return claims


def test_a_fedip_claim_decided_by_rounding_says_so_and_only_then():
    from scripts.fedip_table import ROUNDING_SENSITIVITY

    (args, kwargs), *_ = _fedip_claims(0.8)
    assert args[0].startswith("On WESAD, FedIP improves on IncFed") and args[2] is False
    assert kwargs["cause"] == "rounding" and "25%" in kwargs["reason"] and "0.8 of their size" in kwargs["reason"]
    (args, kwargs), *_ = _fedip_claims(ROUNDING_SENSITIVITY)
    assert args[2] is False and kwargs["cause"] is None
