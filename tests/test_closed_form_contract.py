"""Every closed-form algorithm through the same contract (STYLE: scikit-learn's common checks).

Sections and shapes of the record, seeded determinism, communication-cost accounting by the
seeds' formulas, and clear errors for bad input.
"""

import numpy as np
import pytest

from tff_esn.registry import algorithms
from tff_esn.closed_form.heterogeneous import align, client_weights
from tff_esn.common.streams import child_seed
from tff_esn.esn.hyperparameters import ReservoirConfig, client_reservoir
from tff_esn.esn.weights import ReservoirWeights

from closed_form_data import default_split, random_dataset

CLOSED_FORM = ("centralized", "incfed", "fedavg-ridge", "rls", "partial-incfed", "pfedrr", "fedip", "ensemble",
               "alignment")
UNITS, CLASSES, ROUNDS = 8, 3, 2
N_F = UNITS + 1  # readout bias input


def _args(name, **settings):
    """``name``'s typed config: the contract's common settings, then ``settings`` (flag names)."""
    common = dict(units=UNITS, l2=1e-2, seed=3, washout=1, **({"rounds": ROUNDS} if name == "fedip" else {}))
    return algorithms.config_from_flags(algorithms.get_algorithm(name).config, {**common, **settings})


@pytest.fixture(scope="module")
def data():
    return random_dataset(n_clients=5, seed=11)


@pytest.fixture(scope="module")
def records(data):
    return {name: algorithms.run_algorithm(algorithms.resolve_run(name, data, config=_args(name)),
                                           data, default_split(data)) for name in CLOSED_FORM}


def test_every_closed_form_algorithm_is_registered():
    assert set(CLOSED_FORM) <= set(algorithms.available_algorithms())


@pytest.mark.parametrize("name", CLOSED_FORM)
def test_record_has_every_section(name, records, data):
    rec = records[name]
    assert rec["algorithm"] == name and rec["data"] == "random" and rec["split"] == "random"
    assert rec["config"]["units"]["value"] == UNITS and rec["seconds"] > 0
    sizes = {"train": sum(len(data.clients[c]) for c in data.client_ids[:-2]),
             "val": len(data.clients["c3"]), "test": len(data.clients["c4"])}
    for group, n in sizes.items():
        section = rec[group]
        assert section["n"] == n
        # accuracy is a count over n; single-label micro F1 is the accuracy itself
        assert round(section["accuracy"] * n) == pytest.approx(section["accuracy"] * n, abs=1e-9)
        assert section["f1_micro"] == pytest.approx(section["accuracy"])
        assert round(section["random_baseline_accuracy"] * n) == pytest.approx(section["random_baseline_accuracy"] * n)
    assert {"up_floats_per_client", "down_floats_per_client", "rounds",
            "up_bytes_per_client", "down_bytes_per_client"} <= set(rec["communication"])
    test = data.pooled(["c4"]).y
    majority = rec["baselines"]["majority"]
    assert majority["test"]["accuracy"] == pytest.approx(np.mean(test == majority["class"]))
    assert rec["baselines"]["logistic_regression"]["test"]["n"] == sizes["test"]


@pytest.mark.parametrize("name", CLOSED_FORM)
def test_same_seed_same_numbers(name, records, data):
    again = algorithms.run_algorithm(algorithms.resolve_run(name, data, config=_args(name)), data, default_split(data))
    for key in ("train", "val", "test", "communication", "extra"):
        assert again[key] == records[name][key]


def test_centralized_and_incfed_give_identical_metrics(records):
    for group in ("train", "val", "test"):
        assert records["centralized"][group] == records["incfed"][group]


def test_alignment_with_alpha_one_is_incfed(data):
    rec = algorithms.run_algorithm(algorithms.resolve_run("alignment", data, config=_args("alignment", alpha=1.0)),
                                   data, default_split(data))
    ref = algorithms.run_algorithm(algorithms.resolve_run("incfed", data, config=_args("incfed", backend="numpy")),
                                   data, default_split(data))
    for group in ("train", "val", "test"):
        assert rec[group] == ref[group]


@pytest.mark.parametrize("name", CLOSED_FORM)
def test_communication_follows_the_seed_formulas(name, records, data):
    comm, extra = records[name]["communication"], records[name]["extra"]
    readout = CLASSES * N_F
    incfed_up = N_F**2 + N_F * CLASSES
    train = data.client_ids[:-2]
    expected = {
        "centralized": (np.mean([data.clients[c].x.size for c in train]), 0, 1),
        "incfed": (incfed_up, readout, 1),
        "alignment": (incfed_up, readout, 1),
        "fedavg-ridge": (readout, readout, 1),
        "rls": (incfed_up, incfed_up, 1),
        "partial-incfed": (extra.get("k", 0) * (CLASSES + N_F), readout, 1),
        "fedip": (ROUNDS * 2 * UNITS + incfed_up, ROUNDS * 2 * UNITS + readout, ROUNDS + 1),
        "ensemble": (readout, len(train) * readout, 1),
    }
    if name == "pfedrr":
        assert readout + N_F <= comm["up_floats_per_client"] <= incfed_up
        assert comm["down_floats_per_client"] == readout and comm["rounds"] == 1
        return
    up, down, rounds = expected[name]
    assert (comm["up_floats_per_client"], comm["down_floats_per_client"], comm["rounds"]) == (up, down, rounds)
    if name == "partial-incfed":
        assert extra["k"] == 4  # the thesis' 1.5/|C| · N_F for 3 clients
    if name == "fedip":
        assert comm["up_bytes_per_client"] == ROUNDS * 2 * UNITS * 4 + incfed_up * 8


def test_pfedrr_with_tau_one_costs_incfed_and_reports_the_comparison(data):
    rec = algorithms.run_algorithm(algorithms.resolve_run("pfedrr", data, config=_args("pfedrr", tau=1.0)),
                                   data, default_split(data))
    assert rec["communication"]["up_floats_per_client"] == N_F**2 + N_F * CLASSES
    assert rec["extra"]["percent_units"] == 100.0
    assert rec["extra"]["fedrr"]["test"] == rec["test"] == rec["extra"]["r-pfedrr"]["test"]


@pytest.mark.parametrize("name,flags,match", [
    ("partial-incfed", {"k": 0}, r"PartialIncFedConfig.k \(--k\): expected"),
    ("partial-incfed", {"k": N_F + 1}, r"k \(--k\): expected None or an integer in \[1, "),
    ("partial-incfed", {"alpha": 2.0}, "alpha"),
    ("pfedrr", {"tau": 0.0}, "tau"),
    ("pfedrr", {"tau": 1.5}, "tau"),
    ("alignment", {"alpha": -0.5}, "alpha"),
    ("incfed", {"washout": 10}, "washout"),
    ("centralized", {"units": 0}, "units"),
    ("fedip", {"ip_sigma": 0.0}, "sigma"),
])
def test_bad_input_is_rejected_by_name(name, flags, match, data):
    with pytest.raises(ValueError, match=match):
        algorithms.run_algorithm(algorithms.resolve_run(name, data, config=_args(name, **flags)),
                                 data, default_split(data))


def test_singular_system_and_unknown_algorithm(data):
    from tff_esn.esn.ridge import SingularSystemError

    small = random_dataset(n_clients=3, seed=1, sizes=[8, 4, 4], n_classes=2)  # 8 states, 21 unknowns
    with pytest.raises(SingularSystemError):
        algorithms.run_algorithm(algorithms.resolve_run("incfed", small, config=_args("incfed", l2=0.0, state_mode="last",
                                                                             units=20)), small, default_split(small))
    with pytest.raises(KeyError, match="unknown algorithm 'nope'"):
        algorithms.get_algorithm("nope")


def test_per_step_labels_need_a_per_step_state_mode():
    data = random_dataset(n_clients=4, seed=2, per_step=True)
    rec = algorithms.run_algorithm(algorithms.resolve_run("incfed", data, config=_args("incfed")),
                                   data, default_split(data))
    assert rec["test"]["n"] == len(data.clients["c3"]) * (10 - 1)  # every step after washout
    with pytest.raises(ValueError, match="mean"):
        algorithms.run_algorithm(algorithms.resolve_run("incfed", data, config=_args("incfed", state_mode="mean")),
                                 data, default_split(data))


def test_registry_rejects_bad_registrations():
    with pytest.raises(ValueError, match="lower-case"):
        algorithms.register_algorithm("Bad Name", ReservoirConfig, lambda d, s, a: {})
    with pytest.raises(TypeError, match="dataclass type"):
        algorithms.register_algorithm("fine", dict, lambda d, s, a: {})
    with pytest.raises(ValueError, match="already registered"):
        algorithms.register_algorithm("incfed", ReservoirConfig, lambda d, s, a: {})


# ------------------------------------------------------------------ heterogeneous reservoirs
def test_client_weights_differ_and_alignment_interpolates():
    cfg = ReservoirConfig(units=6, seed=4)
    target = ReservoirWeights.from_config(cfg, 3)
    members = client_weights(cfg, 3, 3)
    assert len({m.key for m in members} | {target.key}) == 4
    assert [m.key for m in members] == [ReservoirWeights.from_config(client_reservoir(cfg, i), 3).key for i in range(3)]
    half = align(members[0], target, 0.5)
    np.testing.assert_allclose(half.recurrent, 0.5 * (members[0].recurrent + target.recurrent), rtol=1e-6)
    rescaled = align(members[0], target, 0.5, rescale=True).recurrent  # the same mix, scaled back to the target's ρ
    np.testing.assert_allclose(rescaled / rescaled[0, 0], half.recurrent / half.recurrent[0, 0], rtol=1e-5)
    assert align(members[0], target, 1.0).key == target.key and align(members[0], target, 0.0).key == members[0].key
    with pytest.raises(ValueError, match="differ in W_in"):
        align(members[0], ReservoirWeights.from_config(cfg.replace(units=7), 3), 0.5)


def test_both_families_draw_a_clients_own_reservoir_by_one_seed_rule():
    from tff_esn.federated.clients import client_reservoir_configs

    cfg = ReservoirConfig(units=6, seed=4)
    gradient = client_reservoir_configs(cfg, 3, "different")
    assert [r.seed for r in gradient] == [child_seed(4, 3, i) for i in range(3)] == [client_reservoir(cfg, i).seed
                                                                                     for i in range(3)]
    assert [ReservoirWeights.from_config(r, 3).key for r in gradient] == [m.key for m in client_weights(cfg, 3, 3)]
    assert client_reservoir(cfg, 1) == client_reservoir(cfg, 1) and 4 not in {r.seed for r in gradient}
    with pytest.raises(ValueError, match="index"):
        client_reservoir(cfg, -1)



