"""FedIP and alignment defaults do not collapse to one class; the IP gain stays
positive; λ follows the adapted state scale; single-class predictions and a linearised
reservoir are reported."""


import numpy as np
import pytest

from scripts.framework import run_config
from tff_esn.registry.algorithms import resolve_run, run_algorithm
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.weights import ReservoirWeights
from tff_esn.closed_form.configs import DEFAULT_ALPHA, FedIPConfig
from tff_esn.closed_form.heterogeneous import align, client_weights
from scripts.fedip_table import ROUNDING_SENSITIVITY, ip_sensitivity, rounding_sensitivity
from tff_esn.closed_form.fedip import NEAR_LINEAR_SPREAD, IPConfig, intrinsic_plasticity, state_scaled_l2
from tff_esn.esn.draws import spectral_radius
from tff_esn.esn.ridge import RidgeStats

from closed_form_data import random_dataset


def _shape_dataset(seed: int = 0, clients: int = 8, n: int = 24, classes: int = 3) -> SequenceDataset:
    """Classes are oscillations of different frequencies with random phase (zero mean, same power)."""
    rng = np.random.default_rng(seed)
    t = np.arange(40)
    out = {}
    for c in range(clients):
        y = rng.integers(0, classes, n)
        phase = rng.uniform(0, 2 * np.pi, (n, 1))
        x = np.sin(2 * np.pi * t * (1 + y[:, None]) / 20 + phase) + 0.2 * rng.normal(size=(n, 40))
        out[f"c{c}"] = ClientSequences(x[..., None].astype(np.float32), y)
    return SequenceDataset(out, classes, ("x",), tuple(f"k{i}" for i in range(classes)), "shapes")


DATA = _shape_dataset()
SPLIT = Split("shapes", tuple(f"c{i}" for i in range(6)), ("c6",), ("c7",))
COMMON = dict(units=60, state_mode="mean", bias_scaling=0.5, l2=1e-3, seed=0)


def _run(name, tmp_path, **flags):
    return run_algorithm(resolve_run(name, DATA, config=run_config(name, **{**COMMON, **flags})), DATA, SPLIT)


def test_ip_gain_stays_positive_where_the_literal_rule_crosses_zero():
    rng = np.random.default_rng(0)
    client = ClientSequences((30 * rng.normal(size=(16, 40, 3))).astype(np.float32), rng.integers(0, 2, 16))
    weights = ReservoirWeights.from_config(ReservoirConfig(units=20, seed=3), 3)
    literal = intrinsic_plasticity(weights, client, IPConfig(min_gain=None))
    projected = intrinsic_plasticity(weights, client, IPConfig())
    assert literal.gain.min() < 0
    assert projected.gain.min() >= IPConfig().min_gain - 1e-7


def test_state_scaled_l2_moves_lambda_with_the_state_variance():
    rng = np.random.default_rng(1)
    states, targets = rng.normal(size=(50, 7)) + 0.3, np.eye(2)[rng.integers(0, 2, 50)]
    initial = [RidgeStats.from_states(states, targets, bias=True)]
    assert state_scaled_l2(1e-3, initial, initial) == pytest.approx(1e-3)
    # scaling the states by c scales λ by c²; an offset added to every state does not count
    scaled = [RidgeStats.from_states(0.1 * states + 5.0, targets, bias=True)]
    assert state_scaled_l2(1e-3, initial, scaled) == pytest.approx(1e-5, rel=1e-9)
    with pytest.raises(ValueError, match="l2_scale.*readout bias"):
        FedIPConfig(readout_bias=False)


def test_fedip_with_defaults_learns_where_incfed_learns(tmp_path):
    data = random_dataset(n_clients=8, steps=20, features=3, n_classes=3, sizes=[24] * 8, seed=4)
    split = Split("random", tuple(f"c{i}" for i in range(6)), ("c6",), ("c7",))
    flags = {**COMMON, "backend": "numpy"}
    incfed = run_algorithm(resolve_run("incfed", data, config=run_config("incfed", **flags)), data, split)
    fedip = run_algorithm(resolve_run("fedip", data, config=run_config("fedip", rounds=2, **flags)), data, split)
    assert incfed["test"]["accuracy"] > 0.8
    assert not [w for w in fedip["warnings"] if "every prediction" in w]
    assert fedip["test"]["accuracy"] > 1 / 3 + 0.3, (fedip["test"], incfed["test"])
    assert fedip["extra"]["l2_effective"] < COMMON["l2"]  # IP shrank the states, so λ shrank with them


def test_fedip_warns_when_ip_linearises_the_reservoir(tmp_path):
    # zero-mean oscillations of different frequencies: only the tanh's nonlinearity separates them
    incfed = _run("incfed", tmp_path, backend="numpy")
    small = _run("fedip", tmp_path, backend="numpy", rounds=2)
    wide = _run("fedip", tmp_path, backend="numpy", rounds=2, ip_sigma=0.3)
    assert incfed["test"]["accuracy"] > 0.9
    assert small["extra"]["state_std_median"] < NEAR_LINEAR_SPREAD
    assert any("nearly linear" in w for w in small["warnings"]) and small["test"]["accuracy"] < 0.6
    assert wide["warnings"] == [] and wide["test"]["accuracy"] > 0.8, wide["test"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rounding_sensitivity_separates_contracting_from_chaotic_ip(seed):
    """One ulp on the initial gains: at the default η the adapted gains move by rounding only; at
    FedIP Table 1's η 0.01 gains pushed onto ``min_gain`` take steps η/g of order one and the ulp
    grows to the size of the gains."""
    rng = np.random.default_rng(seed)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=50, seed=seed), 3)
    client = ClientSequences(rng.normal(size=(16, 200, 3)).astype(np.float32), np.zeros(16, np.int64))
    assert rounding_sensitivity(weights, client, IPConfig()) < 1e-6
    assert rounding_sensitivity(weights, client, IPConfig(eta=0.01)) > 0.1


def test_fedip_table_measures_a_runs_rounding_sensitivity_and_plain_runs_do_not(tmp_path):
    data = random_dataset(n_clients=4, steps=200, features=3, n_classes=2, seed=3)
    split = Split("r", ("c0", "c1"), ("c2",), ("c3",))
    flags = dict(units=50, state_mode="mean", l2=1e-3, seed=0, backend="numpy", rounds=1)
    calm = run_algorithm(resolve_run("fedip", data, config=run_config("fedip", **flags)), data, split)
    assert "ip_rounding_sensitivity" not in calm["extra"]
    assert ip_sensitivity(data, split, run_config("fedip", **flags)) < 1e-6
    assert ip_sensitivity(data, split, run_config("fedip", ip_eta=0.01, **flags)) > ROUNDING_SENSITIVITY


def test_alignment_default_learns_and_keeps_the_configured_spectral_radius(tmp_path):
    record = _run("alignment", tmp_path)
    assert record["extra"]["alpha"] == DEFAULT_ALPHA
    assert record["test"]["accuracy"] > 1 / DATA.n_classes + 0.3, record["test"]
    config = ReservoirConfig(units=50, spectral_radius=0.9, seed=0)
    target = ReservoirWeights.from_config(config, 2)
    own = client_weights(config, 2, 2)[1]
    literal, rescaled = align(own, target, 0.5), align(own, target, 0.5, rescale=True)
    assert spectral_radius(literal.recurrent) < 0.8  # independent draws: the literal mix contracts
    assert spectral_radius(rescaled.recurrent) == pytest.approx(0.9, rel=1e-4)
    assert np.linalg.norm(rescaled.kernel) == pytest.approx(np.linalg.norm(target.kernel), rel=1e-5)
    np.testing.assert_array_equal(align(own, target, 1.0).recurrent, target.recurrent)


def test_single_class_predictions_are_recorded_run_warnings(tmp_path):
    record = _run("centralized", tmp_path, l2=1e12, readout_bias=False)
    collapsed = [w for w in record["warnings"] if "every prediction is class" in w]
    assert [w.split(": ")[:2] for w in collapsed] == [["centralized", g] for g in ("val", "test")]
    assert all("one class" in record["result_check"][g] for g in ("val", "test"))
    assert _run("centralized", tmp_path)["warnings"] == []
