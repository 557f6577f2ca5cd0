"""The thesis model on K > 2 classes and on sequences of unequal length: softmax readout, loss,
FedCurv's Fisher, FedAvg = FedCurv(0), one client = the centralized step, class weights, runs."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_federated as tff
from sklearn.linear_model import LogisticRegression
from sklearn.utils.class_weight import compute_class_weight

from tff_esn import ReservoirConfig
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.federated import curvature, learning_process
from tff_esn.federated import clients as client_data
from tff_esn.federated.centralized import _states, train_centralized
from tff_esn.federated.clients import CachedStates
from tff_esn.federated.configs import for_data, loss_labels
from tff_esn.federated.model import (
    ThesisModelConfig,
    WeightedCategoricalCrossentropy,
    build_thesis_model,
    thesis_loss,
)
from tff_esn.esn.model import readout_probabilities
from tff_esn.federated.configs import FedAvgConfig, FedCurvConfig
from tff_esn.esn.standardization import federated_standardization
from tff_esn.federated.training import run_federated
from tff_esn.esn.layer import Reservoir
from tff_esn.common.run_warnings import recording

K = 3
UNITS = 6
RES = ReservoirConfig(units=UNITS, spectral_radius=0.9, seed=3, bias_scaling=1.0)
CFG = ThesisModelConfig(reservoir=RES, batch_size=4, learning_rate=0.05, class_weight=(1.0, 2.0, 0.5),
                        state_mode="mean")
IDS = ("a", "b", "c")


def _clients(seed=0, ragged=False, n_clients=3):
    """K-class sequences whose class shifts the first feature; ragged: lengths 5–9 steps."""
    rng = np.random.default_rng(seed)
    clients = {}
    for i in range(n_clients):
        n = 6 + 2 * i
        y = rng.integers(0, K, n)
        x = (rng.normal(size=(n, 9, 2)) + np.stack([y - 1.0, np.zeros(n)], 1)[:, None]).astype(np.float32)
        lengths = rng.integers(5, 10, n) if ragged else None
        clients[f"c{i}"] = ClientSequences(x, y, lengths)
    return clients


def _dataset(ragged=False, n_clients=5):
    return SequenceDataset(_clients(ragged=ragged, n_clients=n_clients), K, ("f0", "f1"), ("x", "y", "z"), "toy")


@pytest.fixture(scope="module")
def source():
    clients = dict(zip(IDS, _clients().values()))
    return CachedStates(clients, CFG, seed=1, shuffle=False)


def _model_fn(cfg, source):
    """A TFF readout model of ``cfg`` on ``source``'s cached states."""
    spec = source.dataset(source.ids[0], 0).element_spec
    return lambda: tff.learning.models.from_keras_model(build_thesis_model(UNITS, cfg, readout_only=True),
                                                        loss=thesis_loss(cfg), input_spec=spec)


@pytest.fixture(scope="module")
def model_fn(source):
    return _model_fn(CFG, source)


def test_softmax_loss_is_keras_categorical_crossentropy_with_class_weights():
    rng = np.random.default_rng(0)
    w = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
    for shape in ((7,), (5, 6)):  # per sequence, per step
        y = rng.integers(0, 4, shape)
        p = tf.nn.softmax(rng.normal(size=shape + (4,)).astype(np.float32)).numpy()
        onehot = np.eye(4, dtype=np.float32)[y]
        want = tf.keras.losses.CategoricalCrossentropy()(onehot, p, sample_weight=w[y]).numpy()
        got = WeightedCategoricalCrossentropy(tuple(w))(onehot, p).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_k_class_model_has_a_softmax_readout_of_k_units_and_one_hot_targets():
    model = build_thesis_model(2, CFG)
    assert model.output_shape == (None, K) and model.layers[-1].activation is tf.keras.activations.softmax
    assert [w.shape for w in model.trainable_weights] == [(UNITS, K), (K,)]
    client = ClientSequences(np.zeros((4, 5, 2), np.float32), np.array([0, 2, 1, 2]))
    np.testing.assert_array_equal(client_data.targets(client, CFG), np.eye(K)[[0, 2, 1, 2]])
    binary = CFG.replace(class_weight=(12.0, 88.0))
    assert build_thesis_model(2, binary).output_shape == (None, 1)
    states = np.random.default_rng(1).normal(size=(10, UNITS)).astype(np.float32)
    readout = build_thesis_model(UNITS, CFG, readout_only=True)
    np.testing.assert_allclose(readout_probabilities(states, *readout.get_weights()), readout(states).numpy(),
                               rtol=1e-5, atol=1e-7)


def test_fedcurv_with_zero_penalty_equals_fedavg_every_round_on_k_classes(model_fn, source):
    fedavg = learning_process(model_fn, client_learning_rate=CFG.learning_rate)
    fedcurv = learning_process(model_fn, client_learning_rate=CFG.learning_rate, penalty=0.0)
    states = [fedavg.initialize(), fedcurv.initialize()]
    for r in range(2):
        data = source.datasets(IDS, r)
        states = [p.next(s, data).state for p, s in zip((fedavg, fedcurv), states)]
        avg, curv = (p.get_model_weights(s).trainable for p, s in zip((fedavg, fedcurv), states))
        assert np.asarray(avg[0]).shape == (UNITS, K)
        for a, b in zip(avg, curv):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6, atol=1e-7)
    u, _ = curvature(states[1])
    assert [t.shape for t in u] == [(UNITS, K), (K,)] and all(np.all(t > 0) for t in u)


def test_fedcurv_fisher_covers_every_softmax_weight(model_fn, source):
    """One client, one batch: u = (∂ Σ_k log p_k / ∂w)² / n with ∂/∂z_j Σ_k log p_k = 1 − K p_j."""
    process = learning_process(model_fn, client_learning_rate=CFG.learning_rate, penalty=1.0)
    w0 = [np.asarray(w) for w in process.get_model_weights(process.initialize()).trainable]
    one_batch = source.dataset("a", 0).take(1)
    u, v = curvature(process.next(process.initialize(), [one_batch]).state)
    x, _ = next(iter(one_batch.as_numpy_iterator()))
    s = x.astype(np.float64)
    z = s @ w0[0] + w0[1]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    g = 1 - K * p
    np.testing.assert_allclose(u[0], (s.T @ g) ** 2 / len(x), rtol=1e-4)
    np.testing.assert_allclose(u[1], g.sum(0) ** 2 / len(x), rtol=1e-4)
    np.testing.assert_allclose(v[0], u[0] * w0[0], rtol=1e-4, atol=1e-8)


def test_one_client_one_local_step_is_the_centralized_step():
    clients = {"a": _clients()["c0"]}
    data = SequenceDataset(clients, K, ("f0", "f1"), ("x", "y", "z"), "toy")
    cfg = CFG.replace(batch_size=len(clients["a"]))  # one batch: the same step whatever the order
    model, _ = train_centralized(data, Split("s", train=("a",)), cfg, include_validation=False)
    central = [np.asarray(w) for w in model.weights]
    source = CachedStates(clients, cfg, shuffle=False)
    process = learning_process(_model_fn(cfg, source), client_learning_rate=cfg.learning_rate)
    state = process.next(process.initialize(), source.datasets(["a"], 0)).state
    for got, want in zip(process.get_model_weights(state).trainable, central):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_balanced_class_weight_is_sklearns_and_explicit_weights_must_match_k():
    data = _dataset()
    split = ("c0", "c1", "c2")
    resolved = for_data(CFG.replace(class_weight="balanced"), data, split)
    y = np.concatenate([data.clients[c].y for c in split])
    np.testing.assert_allclose(resolved.class_weight, compute_class_weight("balanced", classes=np.arange(K), y=y))
    assert resolved.n_outputs == K and for_data(resolved, data, split) == resolved
    with pytest.raises(DataError, match="3 classes, but class_weight has 2 weights"):
        for_data(CFG.replace(class_weight=(12.0, 88.0)), data, split)
    with pytest.raises(ValueError, match="resolved from the training labels first"):
        CFG.replace(class_weight="balanced").n_classes


def test_label_layout_and_faithful_ragged_runs_are_refused_in_one_line():
    data = _dataset(ragged=True)
    with pytest.raises(DataError, match="use --state-mode mean"):
        for_data(CFG.replace(state_mode="all"), data, ("c0",))
    with pytest.raises(DataError, match="use --states cached"):
        for_data(CFG, data, ("c0",), faithful=True)
    with pytest.raises(DataError, match="washout 5 must be shorter"):
        for_data(CFG.replace(washout=5), data, ("c0",))


def test_ragged_states_are_each_sequence_harvested_alone():
    client = _clients(ragged=True)["c1"]
    got = client_data.client_states(client, RES, CFG)
    layer = Reservoir(RES, state_mode="mean")
    want = np.concatenate([layer(client.x[i:i + 1, :n]).numpy() for i, n in enumerate(client.lengths)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("algorithm", ["fedavg", "fedcurv"])
def test_ragged_k_class_run_learns_reports_k_class_metrics_and_keeps_the_best_round(tmp_path, algorithm):
    data = _dataset(ragged=True)
    split = Split("s", train=("c0", "c1", "c2"), val=("c3",), test=("c4",))
    config = {"fedavg": FedAvgConfig, "fedcurv": FedCurvConfig}[algorithm](
        model=CFG.replace(class_weight="balanced", learning_rate=0.1), rounds=6, clients_per_round=2, noise_std=0.0,
        keep_best=True, out=str(tmp_path / "run"), progress=False)
    result = run_federated(data, split, config)
    rows = result["extra"]["rounds"]
    assert {"val_accuracy", "val_f1_macro", "val_auc", "test_balanced_accuracy"} <= set(rows[0])
    assert result["extra"]["weights"]["kernel"].shape == (UNITS, K) and len(result["extra"]["class_weight"]) == K
    scores = [r["val_f1_macro"] for r in rows]
    kept = result["extra"]["kept_round"]
    assert kept == 1 + int(np.argmax(scores)) and result["val"]["f1_macro"] == pytest.approx(max(scores))
    assert result["test"]["n"] == len(data.clients["c4"]) and result["test"]["accuracy"] > 1 / K + 0.2
    # the binary report's keys, over K classes
    assert {"accuracy", "balanced_accuracy", "f1_macro", "f1_micro", "auc"} <= set(result["test"])


def test_thesis_central_on_k_classes_stops_early_on_validation_loss():
    data = _dataset(ragged=True)
    split = Split("s", train=("c0", "c1", "c2"), val=("c3",), test=("c4",))
    cfg = CFG.replace(class_weight="balanced", epochs=200, learning_rate=0.5)
    _, report = train_centralized(data, split, cfg, patience=3)
    assert report["epochs"] < 200 and report["test"]["accuracy"] > 1 / K + 0.2
    assert report["design"]["n"] == sum(len(data.clients[c]) for c in split.train)  # validation held out
    with recording() as said:
        _, report = train_centralized(data, Split("s", train=("c0",), test=("c4",)), cfg.replace(epochs=4),
                                      patience=3)
    assert report["epochs"] == 4 and said == [
        "patience 3: the split 's' has no validation clients to stop on; trained on the design set for 4 epochs."]


def test_thesis_central_refit_is_design_set_training_for_the_stopped_best_epoch_count():
    data = _dataset(ragged=True)
    split = Split("s", train=("c0", "c1", "c2"), val=("c3",), test=("c4",))
    cfg = CFG.replace(class_weight="balanced", epochs=200, learning_rate=0.5, readout_inputs="standardized")
    stopped, plain = train_centralized(data, split, cfg, patience=3)
    model, report = train_centralized(data, split, cfg, patience=3, refit=True)
    epochs = report["refit"]["epochs"]
    assert plain["refit"] is None and report["refit"] == {"epochs": epochs, "learning_rate": 0.5, "stopped_epochs": epochs}
    assert 1 <= epochs == plain["epochs"] - 3 < 197  # the stopped run's best epoch, not its last
    assert report["epochs"] == epochs and report["design"]["n"] == sum(len(data.clients[c]) for c in split.train + split.val)
    want, design = train_centralized(data, split, cfg.replace(epochs=epochs))
    assert report["test"] == design["test"] and report["standardization"] == design["standardization"]
    for got, ref in zip(model.get_weights(), want.get_weights()):
        np.testing.assert_array_equal(got, ref)
    assert any(not np.array_equal(a, b) for a, b in zip(model.get_weights(), stopped.get_weights()))


@pytest.mark.slow  # a few hundred full-batch epochs
def test_thesis_central_l2_refit_reaches_the_penalised_logistic_regression_minimum():
    """The refit with λ > 0 minimises mean(w_y · CE) + λ‖W‖²: scikit-learn's LogisticRegression at
    C = 1 / (2λn) with sample weights w_y on the same standardised design states (full batch, small η)."""
    data, l2 = _dataset(ragged=True), 1e-2
    split = Split("s", train=("c0", "c1", "c2"), val=("c3",), test=("c4",))
    cfg = CFG.replace(class_weight="balanced", epochs=2000, batch_size=64, learning_rate=0.05,
                      readout_inputs="standardized")
    model, report = train_centralized(data, split, cfg, patience=20, refit=True, l2=l2)
    assert report["l2"] == l2 and report["refit"]["stopped_epochs"] < report["refit"]["epochs"] < 2000
    design, cfg = split.train + split.val, cfg.replace(class_weight=tuple(report["class_weight"]))
    scaled = federated_standardization([client_data.client_states(c, RES, cfg) for c in data.select(design).values()])
    (x, _), (test, _) = (_states(data, ids, cfg, scaled) for ids in (design, split.test))
    y = loss_labels([data.pooled(design)], cfg)
    ref = LogisticRegression(C=1 / (2 * l2 * len(y)), tol=1e-10, max_iter=10_000).fit(
        x, y, sample_weight=np.asarray(report["class_weight"])[y])
    np.testing.assert_allclose(model.predict(test, verbose=0), ref.predict_proba(test), atol=2e-3)
    np.testing.assert_allclose(model.get_weights()[0], ref.coef_.T, atol=2e-2)


def test_keep_best_without_validation_clients_keeps_the_last_round_and_says_so():
    data = _dataset()
    config = FedAvgConfig(model=CFG, rounds=2, clients_per_round=2, noise_std=0.0, keep_best=True, progress=False)
    with recording() as said:
        result = run_federated(data, Split("s", train=("c0", "c1"), test=("c4",)), config)
    assert result["extra"]["kept_round"] == 2
    assert said[0] == "keep_best: no validation clients to choose a round on; the result is the last round's model."
    assert all("closed form" in m for m in said[1:])  # nothing said of a kept round: none was chosen
