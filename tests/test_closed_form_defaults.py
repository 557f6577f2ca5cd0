"""Closed-form runs on a researcher's own data: one singular-system rule in every backend,
λ chosen on the validation clients (``l2="auto"``), FedIP on sequences of unequal length,
the saturation warning and Partial IncFed's bound on k."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from closed_form_data import default_split
from hypothesis import given, settings
from hypothesis import strategies as st

from tff_esn.registry import algorithms
from tff_esn.closed_form import selection
from tff_esn.closed_form.configs import IPConfig
from tff_esn.esn.weights import ReservoirWeights
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.common.metrics import accuracy, predictions
from tff_esn.esn.ridge import RidgeStats, SingularSystemError, one_hot, singular_tolerance
from tff_esn.common.run_warnings import recording

SINGULAR = "numerically singular"


def _dataset(sizes, n_classes=3, seed=0, steps=10, features=3) -> SequenceDataset:
    """Clients whose labels cycle through every class (so training sees each) and shift the input mean."""
    rng = np.random.default_rng(seed)
    clients = {}
    for i, n in enumerate(sizes):
        y = (np.arange(n) + i) % n_classes
        x = rng.normal(size=(n, steps, features)) + 0.5 * y[:, None, None]
        clients[f"c{i}"] = ClientSequences(x.astype(np.float32), y)
    return SequenceDataset(clients, n_classes, tuple(f"f{j}" for j in range(features)),
                           tuple(f"k{j}" for j in range(n_classes)), "cycled")


def _config(name, **settings):
    return algorithms.config_from_flags(algorithms.get_algorithm(name).config,
                                        {"units": 12, "seed": 3, "state_mode": "mean", **settings})


def _singular_stats(seed: int, clients: int = 2) -> list[RidgeStats]:
    """Clients with fewer states than features, at a scale where λ = 1e-9 is below rounding."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(clients):
        s = 1e4 * rng.normal(size=(3, 8))
        out.append(RidgeStats.from_states(s, one_hot(rng.integers(0, 2, 3), 2)))
    return out


def _pinv_readout(stats: list[RidgeStats], l2: float) -> np.ndarray:
    """The minimum-norm solution by numpy's SVD pseudo-inverse, cut at N·ε·largest."""
    total = RidgeStats.sum(stats)
    matrix = total.B + l2 * np.eye(total.n_features)
    return total.A @ np.linalg.pinv(matrix, rcond=matrix.shape[0] * np.finfo(np.float64).eps)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_singular_system_is_solved_by_the_pseudo_inverse_with_a_recorded_warning(seed):
    from tff_esn.closed_form.incfed import fit_incfed

    stats = _singular_stats(seed)
    total = RidgeStats.sum(stats)
    eigenvalues = np.linalg.eigvalsh(total.B + 1e-9 * np.eye(8))
    assert eigenvalues[0] <= singular_tolerance(eigenvalues)  # the case under test
    with recording() as said:
        got = fit_incfed(stats, 1e-9)
    assert any(SINGULAR in text for text in said)
    expected = _pinv_readout(stats, 1e-9)
    np.testing.assert_allclose(got, expected, atol=1e-8 * np.abs(expected).max())
    with pytest.raises(SingularSystemError, match="l2 > 0"):
        fit_incfed(stats, 0.0)


def test_singular_system_gives_the_same_readout_from_numpy_and_tff():
    from tff_esn.closed_form.incfed import fit_incfed, federate_stats_tff

    stats = _singular_stats(7)
    with recording() as numpy_said:
        numpy_readout = fit_incfed(stats, 1e-9)
    with recording() as tff_said:
        tff_readout = federate_stats_tff(stats, 1e-9)
    assert numpy_said == tff_said and SINGULAR in numpy_said[0]
    np.testing.assert_allclose(tff_readout, numpy_readout, atol=1e-8 * np.abs(numpy_readout).max())
    with pytest.raises(SingularSystemError, match="l2 > 0"):
        federate_stats_tff(stats, 0.0)


@pytest.mark.parametrize("name", ["centralized", "incfed", "fedavg-ridge", "pfedrr", "partial-incfed", "ensemble",
                                  "alignment"])
def test_every_backend_follows_the_singular_rule_and_records_it(name):
    """Two sequences per client and 12 units: every B is singular at λ = 1e-300."""
    data = _dataset([2, 2, 2, 2], n_classes=2, seed=1)
    split = default_split(data)
    record = algorithms.run_algorithm(algorithms.resolve_run(name, data, config=_config(name, l2=1e-300)), data, split)
    assert any(SINGULAR in text for text in record["warnings"]), record["warnings"]
    assert record["test"]["n"] == 2
    with pytest.raises(SingularSystemError):
        algorithms.run_algorithm(algorithms.resolve_run(name, data, config=_config(name, l2=0.0)), data, split)


def test_incfed_numpy_and_tff_backends_agree_on_a_singular_run():
    data = _dataset([2, 2, 2, 2], n_classes=2, seed=1)
    split = default_split(data)
    records = [algorithms.run_algorithm(algorithms.resolve_run("incfed", data, config=_config("incfed", l2=1e-300, backend=b)),
                                        data, split)
               for b in ("numpy", "tff")]
    assert records[0]["warnings"] == records[1]["warnings"]
    assert records[0]["test"] == records[1]["test"] and records[0]["train"] == records[1]["train"]


def _val_accuracy(name, data, split, l2, **settings):
    record = algorithms.run_algorithm(algorithms.resolve_run(name, data, config=_config(name, l2=l2, **settings)),
                                      data, split)
    return record["val"]["accuracy"], record


@pytest.mark.parametrize("name", ["centralized", "incfed", "fedavg-ridge", "ensemble", "pfedrr", "partial-incfed",
                                  "alignment", "fedip"])
def test_auto_l2_is_the_grid_value_with_the_best_validation_accuracy(name):
    """Brute force: a run per λ of the grid with that λ given; ``auto`` picks the best
    validation accuracy (a tie to the larger λ) and reports the same test metrics."""
    data = _dataset([6, 6, 6, 6, 12, 12], seed=4)
    split = default_split(data)
    grid = (1e-6, 1e-2, 1e1, 1e3)
    settings = {"l2_grid": grid, **({"backend": "numpy"} if name in ("incfed", "fedip") else {}),
                **({"rounds": 1} if name == "fedip" else {})}
    runs = [_val_accuracy(name, data, split, l2, **settings) for l2 in grid]
    best = max(a for a, _ in runs)
    expected = max(i for i, (a, _) in enumerate(runs) if a == best)
    record = algorithms.run_algorithm(algorithms.resolve_run(name, data, config=_config(name, l2="auto", **settings)),
                                      data, split)
    chosen = record["l2_selection"]
    assert chosen["rule"] == "validation" and chosen["l2"] == grid[expected]
    assert chosen["scores"] == [a for a, _ in runs]
    assert record["test"] == runs[expected][1]["test"]


def test_auto_l2_without_validation_clients_is_cross_validated_and_with_privacy_is_the_stated_default():
    data = _dataset([6, 5, 7, 6], seed=2)
    ids = data.client_ids
    no_val = Split("no-val", ids[:3], (), ids[3:])
    record = algorithms.run_algorithm(algorithms.resolve_run("centralized", data, config=_config("centralized", l2="auto")),
                                      data, no_val)
    assert record["l2_selection"]["rule"] == "cross-validation"
    assert record["validation"]["rule"] == "local hold-out" and not record["validation"]["test_used"]
    assert record["val"] is None
    given_l2 = algorithms.run_algorithm(algorithms.resolve_run("centralized", data, config=_config("centralized", l2=record["l2_selection"]["l2"])),
                                        data, no_val)
    assert record["test"] == given_l2["test"] and given_l2["l2_selection"]["rule"] == "given"
    single = SequenceDataset({"a": ClientSequences(data.clients["c0"].x[:1], data.clients["c0"].y[:1]),
                              "b": data.clients["c1"]}, 3, data.feature_names, data.label_names, "cycled")
    from tff_esn.closed_form.run import Run

    alone = Run(single, Split("one", ("a",), (), ("b",)), _config("centralized", l2="auto"), "alone")
    assert alone.choose_l2(lambda grid: pytest.fail("nothing to validate on")) == selection.DEFAULT_L2
    assert alone.l2_choice.to_dict() == {"l2": selection.DEFAULT_L2, "rule": "default",
                                     "reason": "no validation data (a single training sequence)"}
    private = algorithms.run_algorithm(algorithms.resolve_run("pfedrr", data, config=_config("pfedrr", l2="auto", secure_aggregation=True)),
                                       data, default_split(data))
    assert private["l2_selection"]["rule"] == "default" and "privacy" in private["l2_selection"]["reason"]


def test_l2_flag_and_grid_are_validated():
    from tff_esn.closed_form.configs import ReadoutConfig

    assert ReadoutConfig(l2="auto").l2 == "auto"
    for bad in ("Auto", -1.0, float("nan")):
        with pytest.raises(ValueError, match="--l2"):
            ReadoutConfig(l2=bad)
    for grid in ((), (1.0, 0.1), (0.0, 1.0), (1.0, 1.0)):  # the boundary: an empty grid has no scores
        with pytest.raises(ValueError, match="l2_grid"):
            ReadoutConfig(l2_grid=grid)
    assert selection.chosen_l2([0.5, 0.7, 0.7, 0.1]) == 2


def test_cli_parses_l2_auto():
    import argparse

    from tff_esn.registry.algorithms import get_algorithm
    from tff_esn.cli.flags import add_algorithm_flags

    parser = argparse.ArgumentParser()
    add_algorithm_flags(parser, get_algorithm("incfed"))
    assert parser.parse_args(["--l2", "auto"]).l2 == "auto"
    assert parser.parse_args(["--l2", "1e-3"]).l2 == 1e-3
    with pytest.raises(SystemExit):
        parser.parse_args(["--l2", "often"])


# ----------------------------------------------------------------------------- FedIP on unequal lengths
def _ragged_client(lengths, seed=0, features=2) -> ClientSequences:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(len(lengths), max(lengths), features)).astype(np.float32)
    return ClientSequences(x, rng.integers(0, 2, len(lengths)), np.asarray(lengths))


def _alone(client: ClientSequences, i: int) -> ClientSequences:
    """Sequence ``i`` of ``client`` cut to its own length, as a client of its own."""
    n = int(client.steps[i])
    return ClientSequences(client.x[i:i + 1, :n], client.y[i:i + 1])


@settings(max_examples=8, deadline=None)
@given(lengths=st.lists(st.integers(2, 9), min_size=2, max_size=4), seed=st.integers(0, 1000))
def test_fedip_ragged_batch_of_one_equals_ip_on_each_sequence_alone(lengths, seed):
    from tff_esn.closed_form.fedip import intrinsic_plasticity

    client = _ragged_client(lengths, seed)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=6, seed=seed), 2)
    cfg = IPConfig(eta=1e-2, batch_size=1)
    got = intrinsic_plasticity(weights, client, cfg)
    expected = weights
    for i in range(len(client)):
        expected = intrinsic_plasticity(expected, _alone(client, i), cfg)
    np.testing.assert_allclose(got.gain, expected.gain, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.bias, expected.bias, rtol=1e-5, atol=1e-6)


def test_fedip_ragged_batch_averages_only_the_running_sequences():
    """Batch of two: the longer sequence's steps past the shorter's end are its updates alone;
    a numpy reference of the per-step masked mean (FedIP eqs. 2–3)."""
    from tff_esn.closed_form.fedip import intrinsic_plasticity, ip_updates

    client = _ragged_client([3, 7], seed=5)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=5, seed=2), 2)
    cfg = IPConfig(eta=1e-2, batch_size=2, min_gain=None)
    got = intrinsic_plasticity(weights, client, cfg)
    g, b = weights.gain.astype(np.float64), weights.bias.astype(np.float64)
    x = np.zeros((2, 5))
    for t in range(7):
        net = client.x[:, t].astype(np.float64) @ weights.kernel + x @ weights.recurrent
        y = np.tanh(g * net + b)
        x = y  # leaky = 1
        dg, db = ip_updates(net, y, g, cfg.mu, cfg.sigma, cfg.eta)
        running = (t < client.steps)[:, None]
        g, b = g + (dg * running).sum(0) / running.sum(), b + (db * running).sum(0) / running.sum()
    np.testing.assert_allclose(got.gain, g, rtol=1e-4)
    np.testing.assert_allclose(got.bias, b, rtol=1e-4, atol=1e-6)


def _ragged_dataset(seed=0) -> SequenceDataset:
    rng = np.random.default_rng(seed)
    clients = {}
    for i in range(4):
        lengths = rng.integers(4, 12, size=6)
        y = np.arange(6) % 2
        x = (rng.normal(size=(6, 12, 2)) + y[:, None, None]).astype(np.float32)
        clients[f"c{i}"] = ClientSequences(x[:, :int(lengths.max())] if i else x, y, lengths)
    return SequenceDataset(clients, 2, ("a", "b"), ("n", "p"), "ragged")


def test_fedip_tff_equals_numpy_on_ragged_clients_and_runs_end_to_end():
    from tff_esn.closed_form.fedip import fedip_numpy, fedip_tff

    data = _ragged_dataset()
    clients = list(data.clients.values())
    weights = ReservoirWeights.from_config(ReservoirConfig(units=8, seed=1), 2)
    cfg = IPConfig(eta=1e-2, batch_size=4)
    expected = fedip_numpy(weights, clients, cfg, 2)
    got, _ = fedip_tff(weights, clients, cfg, 2)
    np.testing.assert_allclose(got.gain, expected.gain, atol=5e-5)  # float32 sums in another order
    np.testing.assert_allclose(got.bias, expected.bias, atol=5e-5)
    assert np.abs(expected.gain - weights.gain).max() > 1e-2  # IP did move the gains
    record = algorithms.run_algorithm(algorithms.resolve_run("fedip", data, config=_config("fedip", rounds=1, l2=1e-3)),
                                      data, default_split(data))
    assert 0 <= record["test"]["accuracy"] <= 1


@pytest.mark.parametrize("mode", ["mean", "all", "last"])
def test_streamed_incfed_takes_unequal_lengths_and_equals_the_run_without_subrounds(mode):
    data = _ragged_dataset()  # lengths 4–11 within clients, and clients padded to 12 steps or to their longest
    split = default_split(data)
    whole = algorithms.run_algorithm(algorithms.resolve_run("incfed", data, config=_config(
        "incfed", state_mode=mode, l2=1e-3)), data, split)
    assert whole["extra"]["subround_size"] is None and whole["extra"]["backend"] == "numpy"
    for size in (1, 2):
        streamed = algorithms.run_algorithm(algorithms.resolve_run("incfed", data, config=_config(
            "incfed", state_mode=mode, l2=1e-3, subround_size=size)), data, split)
        assert streamed["extra"]["subround_size"] == size and streamed["extra"]["backend"] == "tff"
        np.testing.assert_allclose(streamed.model.members[0].readout.weights,
                                   whole.model.members[0].readout.weights, rtol=1e-4, atol=1e-5)


def test_tff_incfed_streams_in_subrounds_above_the_clients_it_federates_at_once(monkeypatch):
    from tff_esn.closed_form import incfed

    data = _ragged_dataset()
    split = Split("s", ("c0", "c1", "c2"), (), ("c3",))
    monkeypatch.setattr(incfed, "TFF_AT_ONCE", 2)
    monkeypatch.setattr(incfed, "TFF_SUBROUND", 2)
    runs = {backend: algorithms.run_algorithm(algorithms.resolve_run("incfed", data, config=_config(
        "incfed", l2=1e-3, backend=backend)), data, split) for backend in ("tff", "numpy")}
    assert runs["tff"]["extra"]["subround_size"] == 2 and runs["numpy"]["extra"]["subround_size"] is None
    np.testing.assert_allclose(runs["tff"].model.members[0].readout.weights,
                               runs["numpy"].model.members[0].readout.weights, rtol=1e-4, atol=1e-5)
    monkeypatch.setattr(incfed, "TFF_AT_ONCE", 3)
    at_once = algorithms.run_algorithm(algorithms.resolve_run("incfed", data, config=_config(
        "incfed", l2=1e-3, backend="tff")), data, split)
    assert at_once["extra"]["subround_size"] is None


def test_streamed_incfed_refuses_per_step_labels_of_unequal_lengths_in_one_line():
    from tff_esn.closed_form.incfed import stream_incfed
    from tff_esn.esn.weights import StateSpec

    rng = np.random.default_rng(0)
    clients = {f"c{i}": ClientSequences(rng.normal(size=(3, t, 2)).astype(np.float32), rng.integers(0, 2, (3, t)))
               for i, t in enumerate((6, 9))}
    data = SequenceDataset(clients, 2, ("a", "b"), ("n", "p"), "per-step")
    weights = ReservoirWeights.from_config(ReservoirConfig(units=6, seed=0), 2)
    with pytest.raises(ValueError, match="per-step labels of sequences of unequal length"):
        stream_incfed(weights, data, StateSpec("all"), 1e-3, subround_size=2)


# ----------------------------------------------------------------------------- saturation, k
def test_a_saturated_reservoir_is_a_recorded_warning():
    data = _dataset([6, 5, 7, 6], seed=2)
    split = default_split(data)
    saturated = algorithms.run_algorithm(algorithms.resolve_run("centralized", data, config=_config("centralized", spectral_radius=1e6)),
                                         data, split)
    assert any("saturates" in text for text in saturated["warnings"])
    assert saturated["extra"]["states"]["saturated_share"] > 0.9
    normal = algorithms.run_algorithm(algorithms.resolve_run("centralized", data, config=_config("centralized")),
                                      data, split)
    assert not any("saturates" in text for text in normal["warnings"])
    assert normal["extra"]["states"]["saturated_share"] < 0.5


def test_constant_states_are_a_recorded_warning():
    from tff_esn.closed_form.saturation import check_states

    client = ClientSequences(np.zeros((4, 6, 2), np.float32), np.array([0, 1, 0, 1]))
    weights = ReservoirWeights.from_config(ReservoirConfig(units=5), 2)
    with recording() as said:
        result = check_states(weights, [client], 0)
    assert result["max_unit_std"] == 0 and any("do not vary" in text for text in said)


def test_partial_incfed_k_beyond_the_features_is_refused_by_the_config():
    from tff_esn.closed_form.configs import PartialIncFedConfig

    assert PartialIncFedConfig(reservoir=ReservoirConfig(units=10), k=11).k == 11
    with pytest.raises(ValueError, match=r"--k.*\[1, 11\]"):
        PartialIncFedConfig(reservoir=ReservoirConfig(units=10), k=12)
    with pytest.raises(ValueError, match=r"--k.*\[1, 10\]"):
        dataclasses.replace(PartialIncFedConfig(reservoir=ReservoirConfig(units=10)), readout_bias=False, k=11)


def test_auto_l2_val_scores_are_the_readouts_accuracies():
    """The recorded validation accuracies are those of the exact readout at each λ (solve_path)."""
    data = _dataset([6, 5, 7, 6, 8], seed=6)
    split = default_split(data)
    grid = (1e-4, 1e0, 1e2)
    record = algorithms.run_algorithm(algorithms.resolve_run("centralized", data, config=_config("centralized", l2="auto", l2_grid=grid)),
                                      data, split)
    from tff_esn.closed_form.run import Run

    run = Run(data, split, _config("centralized", l2=1.0), "check")
    total = RidgeStats.sum(run.stats())
    expected = []
    for l2 in grid:
        scores, labels = run.scorer(total.solve(l2))(split.val)
        expected.append(accuracy(labels, predictions(scores)))
    assert record["l2_selection"]["scores"] == pytest.approx(expected)


# ----------------------------------------------------------------------------- real data (slow)
UEA = "/work/uea/npz"
UEA_SETS = ("BasicMotions", "JapaneseVowels", "GunPoint", "PickupGestureWiimoteZ")
OWN_DATA = {"state_mode": "mean", "bias_scaling": 1.0, "l2": "auto"}
"""The closed-form settings recommended for a researcher's own sequence classification data."""


@pytest.mark.slow
@pytest.mark.parametrize("name", UEA_SETS)
def test_own_data_settings_learn_on_ucr_uea_sets(name):
    """centralized and incfed within 0.05 of logistic regression (or above it), every other
    closed-form algorithm exits cleanly, with the own-data settings on four UCR/UEA sets."""
    import os

    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split

    path = f"{UEA}/{name}.npz"
    if not os.path.exists(path):
        pytest.skip(f"{path} is not available")
    data = load_source(f"npz:{path}", "incfed-wesad")
    split = get_split("npz", data)
    for algorithm in ("centralized", "incfed", "fedavg-ridge", "partial-incfed", "pfedrr", "fedip", "ensemble",
                      "alignment"):
        config = algorithms.config_from_flags(algorithms.get_algorithm(algorithm).config, OWN_DATA)
        record = algorithms.run_algorithm(algorithms.resolve_run(algorithm, data, config=config), data, split)
        assert record["l2_selection"]["rule"] == "cross-validation"
        if algorithm in ("centralized", "incfed"):
            baseline = record["baselines"]["logistic_regression"]["test"]["accuracy"]
            assert record["test"]["accuracy"] >= baseline - 0.05, (algorithm, record["test"], baseline)
