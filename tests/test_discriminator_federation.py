"""FedAvg/FedCurv+Disc (thesis Alg. 3–4): oracle filter = FedAvg on the real clients alone, reject-all,
the discriminator filter inside TFF, the discriminative phase report and the CLI flag."""

import functools
import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff

from discriminator import DiscriminatorFilter, acceptance_report, run_discriminative_phase
from tff_esn import ReservoirConfig
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.federated import FedAvgConfig, ThesisModelConfig, learning_process
from tff_esn.federated.model import build_thesis_model, thesis_loss

UNITS = 5
CFG = ThesisModelConfig(reservoir=ReservoirConfig(units=UNITS, spectral_radius=0.9, seed=3), batch_size=4,
                        learning_rate=0.05)
REAL_IDS, FAKE_IDS = ("r1", "r2", "r3"), ("f1", "f2", "f3")
ROUNDS = [("r1", "f1", "f2"), ("r1", "r2", "f3"), ("f1", "f2", "f3"), ("r2", "r3", "f1")]


def _states(cid, i):
    """Readout inputs: unit 0 is exactly 0 for real clients, 1 for fakes — so a real client's kernel delta[0]
    is exactly 0 (zero gradient, zero Adam step) and the oracle can tell them apart."""
    rng = np.random.default_rng(i)
    s = rng.normal(size=(6 + i, 7, UNITS)).astype(np.float32)
    s[..., 0] = 0.0 if cid.startswith("r") else 1.0
    y = (s[..., 1] > 0.5).astype(np.float32)[..., None]
    return tf.data.Dataset.from_tensor_slices((s, y)).batch(CFG.batch_size)


DATA = {cid: _states(cid, i) for i, cid in enumerate(REAL_IDS + FAKE_IDS)}


def _model_fn():
    spec = DATA["r1"].element_spec
    return tff.learning.models.from_keras_model(build_thesis_model(UNITS, CFG, readout_only=True),
                                                loss=thesis_loss(CFG), input_spec=spec)


def _oracle(kernel_delta, bias_delta):
    return tf.equal(kernel_delta[0, 0], 0.0)


def _run(process, rounds):
    state = process.initialize()
    accepted = []
    for ids in rounds:
        if ids:
            out = process.next(state, [DATA[c] for c in ids])
            state = out.state
            accepted.append(int(out.metrics["client_work"].get("accepted_clients", len(ids))))
        else:
            accepted.append(0)  # no real client: the thesis' "no update"
    return [np.asarray(w) for w in process.get_model_weights(state).trainable], accepted


@pytest.mark.parametrize("build", [learning_process, functools.partial(learning_process, penalty=1e-4)])
def test_oracle_filter_equals_the_algorithm_on_the_real_clients_alone(build):
    rounds = ROUNDS if build is learning_process else [r for r in ROUNDS if set(r) & set(REAL_IDS)]
    got, accepted = _run(build(_model_fn, client_learning_rate=CFG.learning_rate, client_filter=_oracle), rounds)
    real_only = [tuple(c for c in r if c in REAL_IDS) for r in rounds]
    want, _ = _run(build(_model_fn, client_learning_rate=CFG.learning_rate), real_only)
    assert accepted == [len(r) for r in real_only]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _discriminator(n_inputs=UNITS + 1):
    model = tf.keras.Sequential([tf.keras.Input((n_inputs,)), tf.keras.layers.Normalization(mean=0.0, variance=1.0),
                                 tf.keras.layers.Dense(4, activation="relu"), tf.keras.layers.Dropout(0.2),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    model.set_weights([w if w.ndim == 0 else np.random.default_rng(7).normal(size=w.shape).astype(np.float32)
                       for w in model.get_weights()])
    return model


@pytest.mark.parametrize("build", [learning_process, functools.partial(learning_process, penalty=1e-4)])
def test_a_filter_that_rejects_everyone_leaves_the_model_unchanged(build):
    process = build(_model_fn, client_learning_rate=CFG.learning_rate,
                    client_filter=DiscriminatorFilter(_discriminator(), threshold=1.0))
    initial = [np.asarray(w) for w in process.get_model_weights(process.initialize()).trainable]
    got, accepted = _run(process, ROUNDS[:2])
    assert accepted == [0, 0]
    for a, b in zip(got, initial):
        np.testing.assert_array_equal(a, b)


def test_discriminator_filter_in_tff_decides_as_the_keras_model_on_each_delta():
    fedavg = learning_process(_model_fn, client_learning_rate=CFG.learning_rate)
    w0 = [np.asarray(w) for w in fedavg.get_model_weights(fedavg.initialize()).trainable]
    model = _discriminator()
    prob = {}
    for cid in DATA:
        w1, _ = _run(fedavg, [(cid,)])
        delta = np.concatenate([(w0[0] - w1[0]).reshape(-1), w0[1] - w1[1]])[None]
        prob[cid] = float(model.predict(delta, verbose=0)[0, 0])
    threshold = float(np.median(list(prob.values())))  # splits the clients
    valid = {cid: p > threshold for cid, p in prob.items()}
    assert 0 < sum(valid.values()) < len(valid), prob
    ids = tuple(DATA)
    got, accepted = _run(learning_process(_model_fn, client_learning_rate=CFG.learning_rate,
                                      client_filter=DiscriminatorFilter(model, threshold=threshold)), [ids])
    want, _ = _run(fedavg, [tuple(c for c in ids if valid[c])])
    assert accepted == [sum(valid.values())]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_discriminator_for_another_reservoir_size_is_refused():
    with pytest.raises(ValueError, match="takes deltas of 201 values"):
        learning_process(_model_fn, client_learning_rate=CFG.learning_rate,
                         client_filter=DiscriminatorFilter(_discriminator(201)))


@pytest.fixture(scope="module")
def dataset():
    rng = np.random.default_rng(0)
    clients = {}
    for i in range(12):
        x = rng.normal(size=(5, 8, 2)).astype(np.float32)
        clients[f"S{i}"] = ClientSequences(x, (x[..., 0] > 0.8).astype(np.int64))
    return SequenceDataset(clients, 2, ("pEDA", "tEDA"), ("no stress", "stress"), "random")


def test_discriminative_phase_reports_accepted_vs_real_and_mae(dataset, tmp_path):
    split = Split("tiny-disc", train=tuple(f"S{i}" for i in range(10)), val=("S10",), test=("S11",))
    config = FedAvgConfig(model=CFG, rounds=3, clients_per_round=5, noise_std=0.5, progress=False)
    everyone = run_discriminative_phase(dataset, split, dataclasses.replace(config, out=str(tmp_path / "all")), None,
                                        fake_clients=5)
    report = everyone["extra"]["discriminator"]
    assert len(report["fake_clients"]) == 5 and set(report["fake_clients"]) <= set(split.train)
    for row, fed in zip(report["rounds"], everyone["extra"]["rounds"]):
        real = len(set(fed["sampled"]) - set(report["fake_clients"]))
        assert (row["sampled"], row["accepted"], row["real"]) == (5, 5, real)
    assert report["mae"] == pytest.approx(np.mean([5 - r["real"] for r in report["rounds"]]))
    assert (tmp_path / "all" / "acceptance.csv").exists() and (tmp_path / "all" / "acceptance.png").stat().st_size

    model = _discriminator(UNITS + 1)
    nobody = run_discriminative_phase(dataset, split, config, DiscriminatorFilter(model, threshold=1.0))
    rep = nobody["extra"]["discriminator"]
    assert [r["accepted"] for r in rep["rounds"]] == [0, 0, 0]
    assert rep["mae"] == pytest.approx(np.mean([r["real"] for r in rep["rounds"]]))
    with pytest.raises(ValueError, match="need input noise"):
        run_discriminative_phase(dataset, split, dataclasses.replace(config, noise_std=0.0), None)


def test_acceptance_report_checks_its_inputs():
    rep = acceptance_report([3, 2], [2, 2], [5, 5])
    assert rep["mae"] == 0.5 and rep["rounds"][0] == {"round": 1, "sampled": 5, "real": 2, "accepted": 3, "error": 1}
    with pytest.raises(ValueError, match="equal, non-empty"):
        acceptance_report([1], [1, 2], [5])


@pytest.mark.slow
def test_discriminator_commands_train_and_run_the_phase_from_the_federation_config(tmp_path, capsys):
    """``tff-esn discriminator phase`` builds the registry's FedAvg/FedCurv config from its flags: the
    discriminator's model, the flags' federation (FedCurv's penalty), the discriminator's seed."""
    import json

    from tff_esn.cli import main

    disc, cache = tmp_path / "disc", str(tmp_path / "cache")
    assert main(["discriminator", "train", "--units", "6", "--steps", "10", "--epochs", "1", "--seed", "2",
                 "--cache-dir", cache, "--out", str(disc)]) == 0
    phase = ["discriminator", "phase", "--discriminator", str(disc), "--rounds", "1", "--no-progress",
             "--cache-dir", cache, "--algorithm", "fedcurv", "--penalty", "0.01"]
    assert main([*phase, "--out", str(tmp_path / "other-seed")]) == 2  # the default seed 0 ≠ the discriminator's 2
    assert "the discriminator was trained for the reservoir of seed 2" in capsys.readouterr().err
    assert main([*phase, "--seed", "2", "--out", str(tmp_path / "run")]) == 0
    record = json.loads((tmp_path / "run" / "metrics.json").read_text())
    config = {k: v["value"] for k, v in record["config"].items()}
    assert (record["algorithm"], config["penalty"], config["units"], config["seed"], config["rounds"]) == \
        ("fedcurv+disc", 0.01, 6, 2, 1)
    assert record["extra"]["backend"] == "sim" and (tmp_path / "run" / "acceptance.csv").exists()  # auto: no workers
