"""run_federated: each algorithm and reservoir mode, cached = faithful, resume = uninterrupted, CLI."""

import argparse
import csv
import dataclasses

import numpy as np
import pytest

from tff_esn import ReservoirConfig
from tff_esn.registry import algorithms
from tff_esn.cli import build_parser
from tff_esn.cli.run import request_of
from tff_esn.registry.launch import resolved
from tff_esn.data.sequences import SequenceDataset
from tff_esn.federated import (FedAvgConfig, FedCurvConfig, ThesisModelConfig, build_thesis_model, run_federated,
                               sample_clients)
from tff_esn.common.metrics import classification_metrics

from closed_form_data import THESIS_SPLIT, random_thesis_dataset

MODEL = ThesisModelConfig(reservoir=ReservoirConfig(units=6, spectral_radius=0.9, seed=4), batch_size=4,
                          learning_rate=0.05)
SPLIT = THESIS_SPLIT


@pytest.fixture(scope="module")
def data():
    return random_thesis_dataset()


def _config(algorithm="fedavg", **kwargs):
    """A short run of ``algorithm`` in memory (FedAvg's config has no penalty)."""
    base = dict(model=MODEL, rounds=2, clients_per_round=2, noise_std=0.0)
    base.update(kwargs)
    if algorithm == "fedavg":
        base.pop("penalty", None)
    return (FedCurvConfig if algorithm == "fedcurv" else FedAvgConfig)(**base)


def _reseeded(config, seed):
    """``config`` with another seed (the reservoir's, which also seeds sampling, noise and shuffling)."""
    return dataclasses.replace(config, model=config.model.replace(
        reservoir=dataclasses.replace(config.model.reservoir, seed=seed)))


def _weights(result):
    return result["extra"]["weights"]["kernel"], result["extra"]["weights"]["bias"]


@pytest.mark.parametrize("kwargs", [
    dict(algorithm="fedavg", reservoirs="same", server_lr=0.1, noise_std=0.5),
    dict(algorithm="fedcurv", reservoirs="different", noise_std=0.5, noisy_clients=("S0", "S2")),
    dict(algorithm="fedavg", states="faithful", noise_std=0.5),
    dict(algorithm="fedcurv", states="faithful", reservoirs="different", noise_std=0.5),
])
def test_short_run_of_each_algorithm_and_reservoir_mode(data, tmp_path, kwargs):
    config = _config(**kwargs)
    result = run_federated(data, SPLIT, dataclasses.replace(config, out=str(tmp_path), cache_dir=str(tmp_path / "cache")))
    kernel, bias = _weights(result)
    assert kernel.shape == (6, 1) and bias.shape == (1,)
    assert result["test"]["n"] == 11 * 10 and 0 <= result["val"]["accuracy"] <= 1
    assert result["extra"]["accepted_clients"] == [2, 2]
    for row in result["extra"]["rounds"]:
        noisy = set(config.noisy_clients or SPLIT.train) if config.noise_std else set()
        assert row["clean_clients"] == len(set(row["sampled"]) - noisy) and len(row["sampled"]) == 2
    comm = result["communication"]
    per_round = 7 * (3 if config.algorithm == "fedcurv" else 1)
    reservoir = 4 * 6 + 6 * 6 + 6 if config.states == "faithful" else 0
    assert comm["up_floats_per_client"] == 2 * per_round and comm["down_floats_per_client"] == 2 * (per_round + reservoir)
    with open(tmp_path / "rounds.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["round"] for r in rows] == ["1", "2"] and {"val_f1_micro", "test_auc", "accepted_clients"} <= set(rows[0])
    assert (tmp_path / "tensorboard").is_dir()


@pytest.mark.parametrize("algorithm, reservoirs", [("fedavg", "same"), ("fedavg", "different"),
                                                   pytest.param("fedcurv", "different", marks=pytest.mark.slow)])
def test_cached_states_and_reservoir_in_the_model_give_the_same_weights(data, algorithm, reservoirs):
    config = _config(rounds=2, algorithm=algorithm, reservoirs=reservoirs, penalty=1e-2)
    cached = run_federated(data, SPLIT, config)
    faithful = run_federated(data, SPLIT, dataclasses.replace(config, states="faithful"))
    for a, b in zip(_weights(cached), _weights(faithful)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert cached["extra"]["rounds"][-1]["val_accuracy"] == pytest.approx(faithful["extra"]["rounds"][-1]["val_accuracy"])
    server = build_thesis_model(4, MODEL)  # the server model, evaluated by Keras on the validation client
    server.get_layer("readout").set_weights(list(_weights(faithful)))
    val = data.pooled(SPLIT.val)
    keras_scores = server.predict(val.x, verbose=0).reshape(-1)
    metrics = classification_metrics(val.y.reshape(-1), keras_scores, 2)
    last = faithful["extra"]["rounds"][-1]
    assert (last["val_accuracy"], last["val_f1_micro"]) == (metrics["accuracy"], metrics["f1_micro"])
    assert last["val_auc"] == pytest.approx(metrics["auc"], abs=1e-6)
    if reservoirs == "different":  # the clients' own reservoirs were used, not the broadcast one
        same = run_federated(data, SPLIT, dataclasses.replace(config, states="faithful", reservoirs="same"))
        assert np.abs(_weights(same)[0] - _weights(faithful)[0]).max() > 1e-3


def test_resume_continues_to_the_same_final_weights(data, tmp_path):
    config = _config(algorithm="fedcurv", rounds=3, noise_std=0.3, penalty=1e-2)
    whole = run_federated(data, SPLIT, dataclasses.replace(config, out=str(tmp_path / "whole")))
    run_federated(data, SPLIT, _config(algorithm="fedcurv", rounds=1, noise_std=0.3, penalty=1e-2,
                                       out=str(tmp_path / "cut")))
    resumed = run_federated(data, SPLIT, dataclasses.replace(config, out=str(tmp_path / "cut"), resume=True))
    for a, b in zip(_weights(whole), _weights(resumed)):
        np.testing.assert_array_equal(a, b)
    assert [r["round"] for r in resumed["extra"]["rounds"]] == [1, 2, 3]

    def timeless(rows):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]

    assert timeless(resumed["extra"]["rounds"]) == timeless(whole["extra"]["rounds"])
    with open(tmp_path / "cut" / "rounds.csv") as fh:
        assert [r["round"] for r in csv.DictReader(fh)] == ["1", "2", "3"]
    with pytest.raises(ValueError, match="resume"):
        run_federated(data, SPLIT, dataclasses.replace(config, out=str(tmp_path / "whole")))
    with pytest.raises(ValueError, match=r"holds a run of 3 rounds; resuming it with rounds=2 would report"):
        run_federated(data, SPLIT, _config(algorithm="fedcurv", rounds=2, noise_std=0.3, penalty=1e-2,
                                           out=str(tmp_path / "whole"), resume=True))


def test_a_run_killed_between_its_row_and_its_checkpoint_resumes_to_the_uninterrupted_run(data, tmp_path):
    """The simulation's state resumes from the same checkpoint file as TFF's; the row of a round
    whose checkpoint was never written is dropped and that round's row written anew."""
    config = _config(algorithm="fedcurv", rounds=3, noise_std=0.3, penalty=1e-2, backend="sim")
    whole = run_federated(data, SPLIT, dataclasses.replace(config, out=str(tmp_path / "whole")))
    assert sorted(p.name for p in (tmp_path / "whole" / "checkpoints").iterdir()) == ["state.npz"]
    cut = tmp_path / "cut"
    run_federated(data, SPLIT, dataclasses.replace(config, rounds=1, out=str(cut)))
    lines = (cut / "rounds.csv").read_text().splitlines()
    (cut / "rounds.csv").write_text("\n".join([*lines, "2" + lines[1][1:].replace("2", "7")]) + "\n")
    resumed = run_federated(data, SPLIT, dataclasses.replace(config, out=str(cut), resume=True))
    for a, b in zip(_weights(whole), _weights(resumed)):
        np.testing.assert_array_equal(a, b)

    def rows(folder):
        with open(folder / "rounds.csv") as fh:
            return [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(fh)]

    assert rows(cut) == rows(tmp_path / "whole") and [r["round"] for r in rows(cut)] == ["1", "2", "3"]


def test_checkpoints_of_another_format_or_model_are_refused_not_restarted(data, tmp_path):
    legacy = tmp_path / "legacy"
    (legacy / "checkpoints" / "program_state_2").mkdir(parents=True)
    for resume in (False, True):
        with pytest.raises(ValueError, match=r"its checkpoints \(round 2\) are TFF SavedModel folders .* start it "
                                             r"over with --force \(force=True\) or in a new output folder"):
            run_federated(data, SPLIT, _config(out=str(legacy), resume=resume))
    assert not (legacy / "rounds.csv").exists()
    run_federated(data, SPLIT, _config(rounds=1, out=str(tmp_path / "small"), backend="sim"))
    wider = MODEL.replace(reservoir=dataclasses.replace(MODEL.reservoir, units=7))
    with pytest.raises(ValueError, match=r"holds a run started with other settings: --units 6 → 7; resume it with "
                                         r"the settings that started it"):
        run_federated(data, SPLIT, _config(rounds=2, model=wider, out=str(tmp_path / "small"), resume=True,
                                           backend="sim"))


def test_seeded_runs_repeat_and_sampling_is_a_function_of_seed_and_round(data):
    a = run_federated(data, SPLIT, _config(noise_std=0.5))
    b = run_federated(data, SPLIT, _config(noise_std=0.5))
    for x, y in zip(_weights(a), _weights(b)):
        np.testing.assert_array_equal(x, y)
    ids = SPLIT.train
    assert sample_clients(ids, 2, 0, 5) == sample_clients(ids, 2, 0, 5)
    draws = {tuple(sample_clients(ids, 2, 0, r)) for r in range(20)}
    assert len(draws) > 1 and all(len(set(d)) == 2 and set(d) <= set(ids) for d in draws)
    assert sample_clients(ids, 9, 0, 0) == list(ids)


@pytest.mark.parametrize("kwargs", [
    dict(algorithm="fedcurv", reservoirs="different", noise_std=0.5, noisy_clients=("S0", "S2")),
    pytest.param(dict(algorithm="fedavg", states="faithful", noise_std=0.5, server_lr=0.1),
                 marks=pytest.mark.slow),
])
def test_same_seed_same_metrics_whatever_ran_before(data, kwargs):
    """Same seed, same numbers — every per-round metric equal (not close), also when
    another seed's run and a global TF seed (set by centralized/discriminator training;
    ``Dataset.shuffle`` would mix it into the client shuffling, see
    :func:`tff_esn.federated.clients.seeded_epochs`) came in between."""
    import tensorflow as tf

    config = _config(rounds=3, **kwargs)
    first = run_federated(data, SPLIT, config)
    other = run_federated(data, SPLIT, _reseeded(config, 7))
    tf.random.set_seed(11)
    try:
        again = run_federated(data, SPLIT, config)
    finally:
        tf.random.set_seed(None)

    def numbers(result):
        return [{k: v for k, v in row.items() if k != "seconds"} for row in result["extra"]["rounds"]]

    assert numbers(first) == numbers(again)
    assert numbers(other) != numbers(first)  # the seed does reach the run
    for x, y in zip(_weights(first), _weights(again)):
        np.testing.assert_array_equal(x, y)


def test_bad_configurations_are_named(data):
    with pytest.raises(ValueError, match="reservoirs"):
        _config(reservoirs="mixed")
    with pytest.raises(ValueError, match="clients_per_round"):
        _config(clients_per_round=0)
    with pytest.raises(ValueError, match="noisy_clients"):
        run_federated(data, SPLIT, _config(noisy_clients=("S9",)))
    with pytest.raises(ValueError, match=r"resume \(--resume\): expected False when out is None"):  # the boundary
        _config(resume=True)
    three = SequenceDataset(data.clients, 3, data.feature_names, ("a", "b", "c"), "x")
    with pytest.raises(ValueError, match="3 classes, but class_weight has 2 weights"):
        run_federated(three, SPLIT, _config())


def _run_args(argv):
    """The parsed flags of ``tff-esn run ...`` and the typed config the CLI maps them to."""
    args = build_parser().parse_args(argv)
    assert isinstance(args, argparse.Namespace)
    return args, resolved(request_of(args)).config


def test_registered_commands_parse_thesis_defaults_and_run(data, tmp_path):
    assert {"fedavg", "fedcurv", "thesis-central"} <= set(algorithms.available_algorithms())
    defaults, config = _run_args(["run", "fedcurv", "--out", str(tmp_path)])
    assert (defaults.units, defaults.spectral_radius, defaults.rounds, defaults.clients_per_round,
            defaults.noise_std, defaults.penalty, defaults.client_lr, defaults.batch_size) == \
        (200, 0.99, 78, 5, 0.5, 1e-4, 0.1, 20)
    run = resolved(request_of(defaults))
    assert (run.pipeline, run.split) == ("thesis", "thesis-primal")
    assert config == FedCurvConfig(out=str(tmp_path))  # the flags' defaults are the config's
    _, args = _run_args(["run", "fedcurv", "--out", str(tmp_path), "--units", "6", "--rounds", "2",
                      "--clients-per-round", "2", "--noise-std", "0", "--penalty", "0.01", "--server-lr", "0.1",
                      "--reservoir", "different", "--batch-size", "4", "--no-progress",
                      "--cache-dir", str(tmp_path / "cache")])
    record = algorithms.run_algorithm(algorithms.resolve_run("fedcurv", data, config=args), data, SPLIT)
    assert record["algorithm"] == "fedcurv" and record["communication"]["rounds"] == 2
    assert record["config"]["penalty"]["value"] == 0.01 and (tmp_path / "rounds.csv").exists()
    assert len(list((tmp_path / "cache" / "federated-states").glob("states-*"))) == 4  # one per training client
    _, central = _run_args(["run", "thesis-central", "--out", str(tmp_path), "--units", "6", "--batch-size", "4"])
    record = algorithms.run_algorithm(algorithms.resolve_run("thesis-central", data, config=central), data, SPLIT)
    assert record["test"]["n"] == 110 and "design" in record["extra"]


def test_relative_cache_dir_and_out_survive_a_change_of_folder(data, tmp_path, monkeypatch):
    """The TFF worker reads cached states from its own working folder: relative paths are made absolute."""
    from tff_esn import runtime
    from tff_esn.federated.configs import FedAvgConfig

    tff = runtime.load_tff()
    started, later = tmp_path / "started", tmp_path / "later"
    started.mkdir()
    later.mkdir()
    monkeypatch.chdir(started)
    runtime.stop_workers()  # the next computation starts a worker whose working folder is `started`
    assert tff.tensorflow.computation(lambda: np.int32(7))() == 7
    monkeypatch.chdir(later)
    try:
        config = FedAvgConfig(model=MODEL, rounds=2, clients_per_round=2, out="run", cache_dir="cache", progress=False)
        assert (config.out, config.cache_dir) == (str(later / "run"), str(later / "cache"))
        record = algorithms.run_algorithm(algorithms.resolve_run("fedavg", data, config=config), data, SPLIT)
        assert record["config"]["cache_dir"]["value"] == str(later / "cache") and record["config"]["out"]["value"] == str(later / "run")
        assert len(list((later / "cache" / "federated-states").glob("states-*"))) == 4
        direct = run_federated(data, SPLIT, _config(cache_dir="states"))
        assert len(list((later / "states" / "federated-states").glob("states-*"))) == 4
        assert direct["test"]["n"] == 110
    finally:
        runtime.stop_workers()


def test_the_backend_flag_reaches_the_run_and_both_backends_agree_on_a_round(data, tmp_path):
    """``--backend`` is a field of the one config ``run_federated`` reads (no translation that could drop it)."""
    records = {}
    for backend in ("tff", "sim"):
        _, config = _run_args(["run", "fedavg", "--out", str(tmp_path / backend), "--units", "6", "--rounds", "1",
                               "--clients-per-round", "2", "--noise-std", "0", "--batch-size", "4", "--no-progress",
                               "--backend", backend, "--cache-dir", str(tmp_path / "cache")])
        records[backend] = algorithms.run_algorithm(algorithms.resolve_run("fedavg", data, config=config), data, SPLIT)
        assert records[backend]["extra"]["backend"] == backend
        assert records[backend]["config"]["backend"]["value"] == backend
    for a, b in zip(_weights(records["tff"]), _weights(records["sim"])):
        np.testing.assert_allclose(b, a, rtol=2e-5, atol=2e-6)
