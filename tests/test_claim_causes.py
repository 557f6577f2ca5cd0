"""Disagreeing claims get ``cause="data"`` only when the baselines explain them."""

from scripts.common import baseline_accuracy, chance_cause, data_cause
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
