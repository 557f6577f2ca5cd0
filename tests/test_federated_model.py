"""The thesis model: weighted BCE = Keras class_weight, shapes, serialization, config errors, centralized ESN."""

import numpy as np
import pytest
import tensorflow as tf

from global_rng import call_untouched
from tff_esn import ReservoirConfig
from tff_esn.common.streams import child_seed
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.federated.centralized import train_centralized
from tff_esn.federated.configs import FedAvgConfig
from tff_esn.federated import clients as client_data
from tff_esn.federated.clients import (
    CachedStates,
    RawInputs,
    client_reservoir_configs,
    noisy,
    reservoir_states,
    targets,
)
from tff_esn.federated.model import (
    ThesisModelConfig,
    WeightedBinaryCrossentropy,
    build_thesis_model,
    compile_thesis_model,
)

RES = ReservoirConfig(units=8, spectral_radius=0.9, seed=2)


def test_weighted_bce_equals_keras_class_weight_training():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 5)).astype(np.float32)
    y = (rng.random((40, 1)) < 0.2).astype(np.float32)
    cfg = ThesisModelConfig(reservoir=RES.replace(units=5), learning_rate=0.05, state_mode="last")

    def fit(loss, **kwargs):
        model = build_thesis_model(5, cfg, readout_only=True)
        model.compile(tf.keras.optimizers.Adam(0.05), loss=loss)
        model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, **kwargs)
        return model.get_weights()

    ours = fit(WeightedBinaryCrossentropy((12, 88)))
    keras = fit(tf.keras.losses.BinaryCrossentropy(), class_weight={0: 12, 1: 88})
    for a, b in zip(ours, keras):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_per_step_loss_value():
    y = np.array([[[1.0], [0.0]]], np.float32)
    p = np.array([[[0.7], [0.4]]], np.float32)
    want = np.mean([88 * -np.log(0.7), 12 * -np.log(0.6)])
    np.testing.assert_allclose(WeightedBinaryCrossentropy({0: 12, 1: 88})(y, p).numpy(), want, rtol=1e-5)


def test_model_shapes_serialization_and_readout_only_equivalence(tmp_path):
    cfg = ThesisModelConfig(reservoir=RES)
    x = np.random.default_rng(1).normal(size=(3, 9, 4)).astype(np.float32)
    full = compile_thesis_model(build_thesis_model(4, cfg), cfg)
    out = full(x).numpy()
    assert out.shape == (3, 9, 1) and full.trainable_weights[0].shape == (8, 1)
    readout = build_thesis_model(8, cfg, readout_only=True)
    np.testing.assert_allclose(readout(reservoir_states(x, RES, cfg)).numpy(), out, rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "m.keras")
    full.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_allclose(loaded(x).numpy(), out, rtol=1e-6)
    assert loaded.loss.class_weight == (12.0, 88.0)
    last = build_thesis_model(4, cfg.replace(state_mode="last"))
    assert last(x).shape == (3, 1)
    assert build_thesis_model(4, cfg.replace(washout=2))(x).shape == (3, 7, 1)


@pytest.mark.parametrize("kwargs,match", [
    (dict(learning_rate=0.0), "learning_rate"), (dict(batch_size=0), "batch_size"), (dict(epochs=1.5), "epochs"),
    (dict(class_weight=(1.0, float("nan"))), "class_weight"), (dict(class_weight={0: 1}), "class_weight"),
    (dict(state_mode="first"), "state_mode"), (dict(washout=-1), "washout"),
])
def test_config_errors_name_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ThesisModelConfig(**kwargs)


def test_targets_check_label_layout_and_helpers_are_seeded():
    per_step = ClientSequences(np.zeros((2, 5, 1), np.float32), np.ones((2, 5), np.int64))
    per_seq = ClientSequences(np.zeros((2, 5, 1), np.float32), np.ones(2, np.int64))
    assert targets(per_step, ThesisModelConfig(washout=1)).shape == (2, 4, 1)
    assert targets(per_seq, ThesisModelConfig(state_mode="mean")).shape == (2, 1)
    with pytest.raises(ValueError, match="per-step labels"):
        targets(per_seq, ThesisModelConfig())
    with pytest.raises(ValueError, match="per-sequence labels"):
        targets(per_step, ThesisModelConfig(state_mode="last"))
    with pytest.raises(ValueError, match="washout"):
        targets(per_step, ThesisModelConfig(washout=5))
    x = np.zeros((3, 4, 2), np.float32)
    np.testing.assert_array_equal(noisy(x, 0.5, 7), noisy(x, 0.5, 7))
    assert np.std(noisy(x, 0.5, 7)) > 0.2 and noisy(x, 0.0, 7) is x
    assert child_seed(0, 1, 2) == child_seed(0, 1, 2) != child_seed(0, 1, 3)
    same, diff = client_reservoir_configs(RES, 3, "same"), client_reservoir_configs(RES, 3, "different")
    assert same == [RES] * 3 and len({r.seed for r in diff} | {RES.seed}) == 4
    with pytest.raises(ValueError, match=r"reservoirs \(--reservoir\)"):  # the boundary: the run's config
        FedAvgConfig(reservoirs="shared")


@pytest.mark.parametrize("state_mode", ["all", "mean"])
def test_file_backed_states_equal_in_memory_ones_and_are_harvested_once(tmp_path, monkeypatch, state_mode):
    config = ThesisModelConfig(reservoir=RES, batch_size=4, state_mode=state_mode, washout=2 * (state_mode == "all"))
    rng = np.random.default_rng(3)
    clients = {}
    for cid, n in (("a", 7), ("b", 9)):
        x = rng.normal(size=(n, 6, 2)).astype(np.float32)
        y = (x[..., 0] > 0.5).astype(np.int64)
        clients[cid] = ClientSequences(x, y if state_mode == "all" else y[:, -1])
    kwargs = dict(seed=5, noise_std={"a": 0.3}, reservoirs="different")
    memory = CachedStates(clients, config, **kwargs)
    files = CachedStates(clients, config, cache_dir=tmp_path, **kwargs)
    assert len(list(tmp_path.glob("states-*"))) == 2 and not list(tmp_path.glob(".states-*"))

    def batches(source, cid, r):
        return list(source.dataset(cid, r).as_numpy_iterator())

    for cid in clients:
        for r in (0, 3):
            pairs = list(zip(batches(memory, cid, r), batches(files, cid, r)))
            assert len(pairs) == len(list(batches(files, cid, r))) == len(list(batches(memory, cid, r)))
            for (xm, ym), (xf, yf) in pairs:
                np.testing.assert_array_equal(xm, xf)
                np.testing.assert_array_equal(ym, yf)
        assert batches(files, cid, 0)[0][0].shape[-1] == RES.units
    assert not np.array_equal(batches(files, "a", 0)[0][0], batches(files, "a", 1)[0][0])  # reshuffled per round

    def no_harvest(*args, **kwargs):
        raise AssertionError("harvested again")

    monkeypatch.setattr(client_data, "reservoir_states", no_harvest)
    again = CachedStates(clients, config, cache_dir=tmp_path, **kwargs)
    np.testing.assert_array_equal(batches(again, "b", 2)[1][0], batches(files, "b", 2)[1][0])
    with pytest.raises(AssertionError, match="harvested again"):  # another noise draw is another key
        CachedStates(clients, config, cache_dir=tmp_path, **{**kwargs, "seed": 6})
    damaged = next(tmp_path.glob("states-*"))
    (damaged / "states.f32").write_bytes(b"\0" * 12)
    with pytest.raises(ValueError, match="damaged — delete that folder"):
        CachedStates(clients, config, cache_dir=tmp_path, **kwargs)
    empty = ClientSequences(np.zeros((0, 6, 2), np.float32), np.zeros((0, 6) if state_mode == "all" else 0, np.int64))
    with pytest.raises(ValueError, match=r"\['c'\] have no sequences"):
        CachedStates({**clients, "c": empty}, config, cache_dir=tmp_path)


def test_raw_inputs_carry_each_clients_own_reservoir_with_different_reservoirs():
    config = ThesisModelConfig(reservoir=RES, batch_size=4)
    rng = np.random.default_rng(4)
    clients = {cid: ClientSequences(rng.normal(size=(5, 6, 2)).astype(np.float32), np.zeros((5, 6), np.int64))
               for cid in ("a", "b")}
    same = RawInputs(clients, config).dataset("a", 0)
    assert isinstance(same, tf.data.Dataset)
    source = RawInputs(clients, config, reservoirs="different")
    own = {cid: source.dataset(cid, 0)[1].get_single_element() for cid in clients}
    for cid, res in zip(clients, client_reservoir_configs(RES, 2, "different")):
        reservoir = build_thesis_model(2, config, reservoir=res).get_layer("reservoir")
        assert len(own[cid]) == len(reservoir.get_weights())
        for got, want in zip(own[cid], reservoir.get_weights()):
            np.testing.assert_array_equal(got, want)
    assert not np.array_equal(own["a"][1], own["b"][1])


def _dataset(n_clients=5, seed=0):
    rng = np.random.default_rng(seed)
    clients = {}
    for i in range(n_clients):
        x = rng.normal(size=(12, 16, 4)).astype(np.float32)
        y = (x[..., 0] + 0.3 * rng.normal(size=(12, 16)) > 1.0).astype(np.int64)
        clients[f"S{i}"] = ClientSequences(x, y)
    return SequenceDataset(clients, 2, ("pEDA", "tEDA", "HR", "HRV"), ("no stress", "stress"), "random")


def _sections(report):
    """A report's sections without its model (a Model compares by identity)."""
    return {k: v for k, v in report.items() if k != "model"}


def test_centralized_reports_table_6_3_metrics_and_repeats():
    data = _dataset()
    split = Split("s", train=("S0", "S1", "S2"), val=("S3",), test=("S4",))
    cfg = ThesisModelConfig(reservoir=RES, epochs=3, learning_rate=0.05, batch_size=4)
    _, first = train_centralized(data, split, cfg, seed=1)
    _, again = train_centralized(data, split, cfg, seed=1)
    assert _sections(first) == _sections(again)
    np.testing.assert_array_equal(first["model"].members[0].readout.weights, again["model"].members[0].readout.weights)
    for name in ("design", "test"):
        assert {"accuracy", "auc", "f1_micro"} <= set(first[name])
        assert first[name]["f1_micro"] == pytest.approx(first[name]["accuracy"])  # binary: F1 micro = accuracy
    assert first["design"]["n"] == 4 * 12 * 16 and first["test"]["auc"] > 0.7
    with pytest.raises(DataError, match="3 classes, but class_weight has 2 weights"):
        train_centralized(SequenceDataset(data.clients, 3, data.feature_names, ("a", "b", "c"), "x"), split, cfg)


def test_seeded_fit_data_is_every_element_once_per_epoch_in_a_seeded_order():
    x = np.arange(10, dtype=np.float32)[:, None]
    ds, steps = client_data.seeded_fit_data(x, x[:, 0] * 2, batch_size=4, epochs=3, seed=5)
    batches = [(a.numpy()[:, 0], b.numpy()) for a, b in ds]
    assert steps == 3 and len(batches) == 3 * 3 and [len(a) for a, _ in batches[:3]] == [4, 4, 2]
    epochs = [np.concatenate([a for a, _ in batches[3 * e: 3 * e + 3]]) for e in range(3)]
    for order in epochs:
        np.testing.assert_array_equal(np.sort(order), np.arange(10))
    assert not np.array_equal(epochs[0], epochs[1])  # a new order each epoch
    np.testing.assert_array_equal(np.concatenate([b for _, b in batches]), 2 * np.concatenate(epochs))
    again, _ = client_data.seeded_fit_data(x, x[:, 0] * 2, batch_size=4, epochs=3, seed=5)
    np.testing.assert_array_equal(np.concatenate([a.numpy()[:, 0] for a, _ in again]), np.concatenate(epochs))
    with pytest.raises(ValueError, match="as many inputs as labels"):
        client_data.seeded_fit_data(x, x[:5, 0], batch_size=4, epochs=1, seed=0)


def test_centralized_ignores_and_keeps_the_global_seeds():
    # The same seed gives the same model whatever global seed ran before, and the
    # process-global random streams are left where they were
    data = _dataset()
    split = Split("s", train=("S0", "S1", "S2"), val=(), test=("S4",))
    cfg = ThesisModelConfig(reservoir=RES, epochs=2, learning_rate=0.05, batch_size=4)
    runs = [call_untouched(lambda: train_centralized(data, split, cfg, seed=1), global_seed)
            for global_seed in (7, 123)]
    (model_a, report_a), (model_b, report_b) = runs
    assert _sections(report_a) == _sections(report_b)
    for a, b in zip(model_a.get_weights(), model_b.get_weights()):
        np.testing.assert_array_equal(a, b)
    other, _ = train_centralized(data, split, cfg, seed=2)  # the seed reaches the epoch orders
    assert not np.array_equal(other.get_weights()[0], model_a.get_weights()[0])
