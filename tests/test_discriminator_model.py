"""Discriminator training data, network, save/load and filter conversion (thesis §6.1, ch. 4)."""

import json

import numpy as np
import pytest
import tensorflow as tf

from discriminator import (
    FAKE,
    REAL,
    DeltaConfig,
    DiscriminatorConfig,
    DiscriminatorFileError,
    DiscriminatorFilter,
    evaluate,
    generate_deltas,
    load_discriminator,
    load_filter,
    search_discriminator,
    train_discriminator,
)
from discriminator.search import SPACE
from global_rng import call_untouched
from tff_esn import ReservoirConfig
from tff_esn.data.sequences import ClientSequences
from tff_esn.federated import ThesisModelConfig
from tff_esn.federated.model import WeightedBinaryCrossentropy

UNITS = 12
MODEL = ThesisModelConfig(reservoir=ReservoirConfig(units=UNITS, spectral_radius=0.9, seed=2), batch_size=4,
                          learning_rate=0.1)


def _subjects(seed=0, n=16, steps=30):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, steps, 2)).astype(np.float32)
    y = (np.cumsum(x[..., 0], axis=1) / np.sqrt(np.arange(1, steps + 1)) > 1.0).astype(np.int64)
    return {"A": ClientSequences(x[: n // 2], y[: n // 2]), "B": ClientSequences(x[n // 2:], y[n // 2:])}


@pytest.fixture(scope="module")
def deltas():
    return generate_deltas(_subjects(), DeltaConfig(model=MODEL, steps=300, seed=1),
                           test_subjects=_subjects(seed=5, n=6))


@pytest.fixture(scope="module")
def trained(deltas):
    return train_discriminator(deltas, DiscriminatorConfig(epochs=30, seed=3))


def test_deltas_shapes_labels_and_split_by_time(deltas):
    assert deltas.n_inputs == UNITS + 1
    assert deltas.x_train.shape == (2 * 240, UNITS + 1) and deltas.x_test.shape == (2 * 60, UNITS + 1)
    for label in (REAL, FAKE):
        train_steps = deltas.step_train[deltas.y_train == label]
        test_steps = deltas.step_test[deltas.y_test == label]
        assert len(train_steps) == 240 and len(test_steps) == 60
        assert train_steps.max() < test_steps.min()  # by time, not at random
        np.testing.assert_array_equal(np.concatenate([train_steps, test_steps]), np.arange(1, 301))
    assert set(deltas.esn_metrics) == {"real", "fake"} and 0 <= deltas.esn_metrics["real"]["f1_micro"] <= 1
    # the two ESNs start from the same readout and see the same batches; they differ only by the noise on
    # the fake one's inputs. Adam's first step is lr·sign(g) per weight, so the first deltas may coincide.
    real, fake = deltas.x_train[deltas.y_train == REAL], deltas.x_train[deltas.y_train == FAKE]
    assert np.allclose(np.abs(real[0]), MODEL.learning_rate, atol=1e-5)  # ε of Adam
    assert np.allclose(np.abs(fake[0]), MODEL.learning_rate, atol=1e-5)
    assert all(not np.allclose(real[i], fake[i]) for i in range(1, 5))


def test_first_delta_is_one_adam_step_against_the_weighted_cross_entropy_gradient():
    """One batch holding every sequence: the delta w0 − w1 is Adam's first step η·g/(|g| + ε) (≈ η·sign g)."""
    subjects = _subjects(n=4)
    model = MODEL.replace(batch_size=4)
    d = generate_deltas(subjects, DeltaConfig(model=model, steps=2, test_fraction=0.5))
    first = d.x_train[d.y_train == REAL][0]
    from tff_esn.federated.clients import reservoir_states, targets
    from tff_esn.federated.model import build_thesis_model

    data = ClientSequences.concat(subjects.values())
    states, labels = reservoir_states(data.x, model.reservoir, model), targets(data, model)
    readout = build_thesis_model(UNITS, model, readout_only=True)
    with tf.GradientTape() as tape:
        loss = WeightedBinaryCrossentropy(model.class_weight)(labels, readout(states))
    grads = np.concatenate([g.numpy().reshape(-1) for g in tape.gradient(loss, readout.trainable_variables)])
    np.testing.assert_allclose(first, model.learning_rate * grads / (np.abs(grads) + 1e-7), rtol=1e-3, atol=1e-6)


def test_restarting_the_optimizer_each_step_makes_every_delta_a_first_adam_step():
    d = generate_deltas(_subjects(), DeltaConfig(model=MODEL, steps=20, restart_every=1))
    # a first Adam step moves every coordinate by η·|g|/(|g| + ε): never more than η, ≈ η where |g| ≫ ε
    step = np.abs(d.x_train)
    assert step.max() <= MODEL.learning_rate * (1 + 1e-6)
    assert np.mean(np.isclose(step, MODEL.learning_rate, rtol=1e-3)) > 0.99


def test_same_seed_same_deltas_and_other_seed_other_noise(deltas):
    tf.random.set_seed(11)  # a global seed set elsewhere in the process must not reach the deltas
    try:
        again = generate_deltas(_subjects(), DeltaConfig(model=MODEL, steps=300, seed=1))
    finally:
        tf.random.set_seed(None)
    np.testing.assert_array_equal(again.x_train, deltas.x_train)
    other = generate_deltas(_subjects(), DeltaConfig(model=MODEL, steps=300, seed=2))
    assert not np.array_equal(other.x_train[other.y_train == FAKE], deltas.x_train[deltas.y_train == FAKE])


def test_discriminator_separates_real_from_fake_well_above_chance(trained, deltas):
    m = trained.metrics
    # chance is 0.5; on this 16-sequence toy set the test score moves with the batch order
    assert m["test_accuracy"] >= 0.75 and m["test_f1"] >= 0.75, m
    assert m["train_accuracy"] >= 0.85 and m["val_binary_accuracy"] >= 0.8, m
    assert m["n_train"] == 480 and m["n_test"] == 120
    assert {"real_esn_test_f1", "fake_esn_test_f1"} <= set(m)
    assert evaluate(trained, deltas.x_test, deltas.y_test)["accuracy"] == pytest.approx(m["test_accuracy"])
    layers = [type(layer).__name__ for layer in trained.model.layers]
    assert layers == ["Normalization", "Dense", "Dropout", "Dense", "Dropout", "Dense"]  # thesis Fig. 6.2
    assert trained.model.layers[-1].activation is tf.keras.activations.sigmoid


def test_same_seed_same_discriminator(deltas, trained):
    again = train_discriminator(deltas, DiscriminatorConfig(epochs=30, seed=3))
    for a, b in zip(trained.model.get_weights(), again.model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_training_ignores_and_keeps_the_global_seeds(deltas):
    # Initialisation, dropout (rate > 0) and epoch orders come from the config's seed alone
    config = DiscriminatorConfig(epochs=2, dropout=(0.3, 0.3), seed=3)
    first, again = (call_untouched(lambda: train_discriminator(deltas, config), global_seed)
                    for global_seed in (7, 123))
    assert first.metrics == again.metrics
    for a, b in zip(first.model.get_weights(), again.model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_save_load_round_trip_and_filter_equals_keras_predict(trained, deltas, tmp_path):
    path = trained.save(tmp_path / "disc")
    loaded = load_discriminator(path, n_inputs=UNITS + 1)
    np.testing.assert_array_equal(loaded.predict(deltas.x_test), trained.predict(deltas.x_test))
    assert loaded.metrics == pytest.approx(trained.metrics)
    assert loaded.info["discriminator_config"]["hidden"] == [64, 16]
    flt = load_filter(path, units=UNITS)
    np.testing.assert_allclose(flt.probability(deltas.x_test).numpy(), trained.predict(deltas.x_test),
                               rtol=1e-5, atol=1e-6)
    for row, p in zip(deltas.x_test[:20], trained.predict(deltas.x_test[:20])):
        assert bool(flt(row[:-1, None], row[-1:])) == (p > 0.5)
    assert not bool(DiscriminatorFilter(trained, threshold=1.0)(row[:-1, None], row[-1:]))
    trained.save(path)  # replacing an existing discriminator folder works
    assert load_discriminator(path).n_inputs == UNITS + 1


def test_corrupted_missing_and_mismatched_files_give_clear_errors(trained, tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_discriminator(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DiscriminatorFileError, match="model.keras and discriminator.json"):
        load_discriminator(tmp_path / "empty")
    path = trained.save(tmp_path / "disc")
    with pytest.raises(DiscriminatorFileError, match=f"{UNITS + 1} values, but .* has 201 values"):
        load_filter(path, units=200)
    flt = load_filter(path)
    with pytest.raises(ValueError, match=f"takes deltas of {UNITS + 1} values .* kernel \\(200, 1\\)"):
        flt(tf.zeros((200, 1)), tf.zeros((1,)))
    (path / "model.keras").write_bytes(b"not a zip archive" * 10)
    with pytest.raises(DiscriminatorFileError, match="cannot load model.keras \\(corrupted\\?\\)"):
        load_discriminator(path)
    path = trained.save(tmp_path / "disc2")
    (path / "discriminator.json").write_text("{broken")
    with pytest.raises(DiscriminatorFileError, match="not valid JSON"):
        load_discriminator(path)
    path = trained.save(tmp_path / "disc3")
    meta = json.loads((path / "discriminator.json").read_text())
    (path / "discriminator.json").write_text(json.dumps({**meta, "n_inputs": 7}))
    with pytest.raises(DiscriminatorFileError, match="expected \\(None, 7\\)"):
        load_discriminator(path)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("keep me")
    with pytest.raises(DiscriminatorFileError, match="not a discriminator folder"):
        trained.save(tmp_path / "other")
    assert (tmp_path / "other" / "x.txt").read_text() == "keep me"


def test_unsupported_layers_are_named():
    model = tf.keras.Sequential([tf.keras.Input((5,)), tf.keras.layers.BatchNormalization(),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    with pytest.raises(DiscriminatorFileError, match="BatchNormalization"):
        DiscriminatorFilter(model)


def test_bad_configurations_are_named(deltas):
    with pytest.raises(ValueError, match="noise_std"):
        DeltaConfig(noise_std=0.0)
    with pytest.raises(ValueError, match="test_fraction"):
        DeltaConfig(test_fraction=1.0)
    with pytest.raises(ValueError, match="restart_every"):
        DeltaConfig(restart_every=0)
    with pytest.raises(ValueError, match=r"DeltaConfig.steps \(--steps\): expected an integer ≥ 2, got 1"):
        DeltaConfig(steps=1)
    with pytest.raises(ValueError, match=r"DiscriminatorConfig.batch_size \(--disc-batch-size\): expected an integer"):
        DiscriminatorConfig(batch_size=0)
    with pytest.raises(ValueError, match=r"DiscriminatorConfig.learning_rate: expected a finite number > 0"):
        DiscriminatorConfig(learning_rate=0.0)
    with pytest.raises(ValueError, match="hidden"):
        DiscriminatorConfig(hidden=(64,))
    with pytest.raises(ValueError, match="dropout"):
        DiscriminatorConfig(dropout=(0.1, 1.0))
    with pytest.raises(ValueError, match="activation"):
        DiscriminatorConfig(activation="nope")
    with pytest.raises(ValueError, match="threshold"):
        DiscriminatorFilter(tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)]), threshold=2)
    with pytest.raises(ValueError, match="per-step labels"):
        generate_deltas(_subjects(), DeltaConfig(model=MODEL.replace(state_mode="last"), steps=4))
    with pytest.raises(ValueError, match="no training deltas"):
        generate_deltas(_subjects(), DeltaConfig(model=MODEL, steps=2, test_fraction=0.9))
    with pytest.raises(TypeError, match="subjects"):
        generate_deltas([], DeltaConfig(model=MODEL))


def test_random_search_returns_a_configuration_from_the_space(deltas):
    best = search_discriminator(deltas, DiscriminatorConfig(epochs=2, seed=4), max_trials=2)
    assert best.hidden[0] in SPACE["hidden_1"] and best.hidden[1] in SPACE["hidden_2"]
    assert best.dropout[0] in SPACE["dropout_1"] and best.dropout[1] in SPACE["dropout_2"]
    assert best.epochs == 2 and best.seed == 4


def test_random_search_ignores_and_keeps_the_global_seeds(deltas, tmp_path):
    # The same candidates get the same validation scores whatever global seed ran before
    def search(folder):
        best = search_discriminator(deltas, DiscriminatorConfig(epochs=2, seed=4), max_trials=2,
                                    directory=tmp_path / folder)
        trials = sorted((tmp_path / folder / "discriminator").glob("trial_*/trial.json"))
        records = [json.loads(t.read_text()) for t in trials]
        return best, [(r["hyperparameters"]["values"], r["score"]) for r in records]

    first, again = (call_untouched(lambda: search(str(global_seed)), global_seed) for global_seed in (7, 123))
    assert len(first[1]) == 2 and all(score is not None for _, score in first[1])
    assert first == again


def test_k_class_deltas_are_the_whole_softmax_readout_and_the_filter_reads_them(tmp_path):
    """K = 3 classes, sequences of unequal length: a delta is kernel (U·K, row-major) then bias (K)."""
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 18)
    x = (rng.normal(size=(18, 12, 2)) + (y - 1.0)[:, None, None]).astype(np.float32)
    subjects = ClientSequences(x, y, rng.integers(6, 13, 18))
    model = MODEL.replace(class_weight=(1.0, 1.0, 2.0), state_mode="mean")
    d = generate_deltas(subjects, DeltaConfig(model=model, steps=40, seed=1), test_subjects=subjects)
    assert d.n_inputs == (UNITS + 1) * 3 == d.x_train.shape[1]
    # Adam's first step is η·sign(g) for every weight with a gradient: all K biases, no weight further
    assert np.allclose(np.abs(d.x_train[0, -3:]), model.learning_rate, atol=1e-5)
    assert np.all(np.abs(d.x_train[0]) <= model.learning_rate + 1e-5)
    assert set(d.esn_metrics["real"]) >= {"accuracy", "f1_macro", "auc"}
    disc = train_discriminator(d, DiscriminatorConfig(epochs=2, seed=0))
    path = disc.save(tmp_path / "disc")
    flt = load_filter(path, units=UNITS, outputs=3)
    deltas = d.x_test[:6]
    want = disc.predict(deltas) > 0.5
    got = [bool(flt(row[:-3].reshape(UNITS, 3), row[-3:]).numpy()) for row in deltas]
    assert got == list(want)
    with pytest.raises(DiscriminatorFileError, match=f"{(UNITS + 1) * 3} values, but .* has {UNITS + 1} values"):
        load_filter(path, units=UNITS, outputs=1)


def test_random_search_seed_0_is_a_seed(deltas, tmp_path):
    """KerasTuner replaces a falsy seed by a random one; seed 0 must fix the candidates too."""
    def tried(folder):
        search_discriminator(deltas, DiscriminatorConfig(epochs=1, seed=0), max_trials=3, directory=tmp_path / folder)
        trials = sorted((tmp_path / folder / "discriminator").glob("trial_*/trial.json"))
        return [json.loads(t.read_text())["hyperparameters"]["values"] for t in trials]

    first = tried("first")
    assert len(first) == 3 and first == tried("again")
