"""The trained :class:`~tff_esn.esn.model.Model` every run yields: its scores are the run's metrics, it saves and
loads without TensorFlow, and a damaged or foreign folder is refused in one line."""

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from tff_esn import resolve_run, run_algorithm
from tff_esn.registry.algorithms import RunRecord, available_algorithms
from tff_esn.common.tasks import Task
from tff_esn.data.sequences import ClientSequences, SequenceDataset
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.model import FORMAT_VERSION, Model, ModelFormatError, Readout, as_sequences, model_of
from tff_esn.esn.ridge import predict
from tff_esn.esn.standardization import Standardization
from tff_esn.privacy import coverage
from tff_esn.esn.weights import ReservoirWeights, StateSpec

from closed_form_data import default_split, random_dataset

CLOSED_FORM = ("centralized", "incfed", "fedavg-ridge", "rls", "partial-incfed", "pfedrr", "ensemble", "alignment",
               "fedip")


def _real_dataset(kind: str, ragged: bool = False) -> SequenceDataset:
    """Six clients of a learnable real target: the next step of channel 0 (forecast) or its sequence mean."""
    rng = np.random.default_rng(1)
    clients = {}
    for i in range(6):
        x = rng.normal(size=(6, 12, 2)).astype(np.float32)
        lengths = rng.integers(8, 13, 6) if ragged else None
        y = x[:, :, 0].mean(axis=1).astype(np.float64) if kind == "regress" else np.roll(x[:, :, 0], -1, 1)
        clients[f"c{i}"] = ClientSequences(x, y.astype(np.float64), lengths)
    return SequenceDataset(clients, 1, ("a", "b"), ("y",), "random", task=Task(kind, 1 if kind == "forecast" else 0,
                                                                                    "a" if kind == "forecast" else None))


def _same(a: dict, b: dict) -> bool:
    """Equal sections, NaN equal to NaN (``metrics.json``'s reading of the numbers)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


DATASETS = {
    "classify": lambda: random_dataset(n_clients=6, steps=12, n_classes=3),
    "classify-per-step": lambda: random_dataset(n_clients=6, steps=12, n_classes=2, per_step=True),
    "forecast": lambda: _real_dataset("forecast"),
    "regress-ragged": lambda: _real_dataset("regress", ragged=True),
}


GRADIENT = ("fedavg", "fedcurv")
CASES = ([(a, d) for a in CLOSED_FORM + GRADIENT for d in sorted(DATASETS)]
         + [("thesis-central", "classify"), ("thesis-central", "classify-per-step")])


def fast_settings(algorithm: str, dataset: SequenceDataset, out) -> dict:
    """Settings of a quick run of ``algorithm``: few rounds or epochs, nothing chosen on validation data."""
    settings = {"backend": "numpy"} if algorithm in ("incfed", "fedip") else {}
    if algorithm == "fedip":
        settings["ip_epochs"] = 1
    if algorithm in (*GRADIENT, "thesis-central"):
        per_step = any(c.per_step for c in dataset.clients.values())
        settings = {"state_mode": "all" if per_step else "mean", "reservoir_search": (), "client_lr": 0.1,
                    "patience": 0}
        settings.update({"epochs": 3, "refit": False, "l2": 0.0} if algorithm == "thesis-central" else
                        {"rounds": 2, "clients_per_round": 2, "keep_best": False, "backend": "sim",
                         "progress": False, "out": str(out)})
        if algorithm == "fedcurv":
            settings["penalty"] = 1e-2
    return settings


@pytest.mark.parametrize("algorithm, data", CASES)
def test_a_saved_model_scores_the_runs_metrics_exactly(algorithm, data, tmp_path):
    dataset = DATASETS[data]()
    split = default_split(dataset)
    settings = fast_settings(algorithm, dataset, tmp_path / "run")
    run = resolve_run(algorithm, dataset, units=24, **settings)
    record = run_algorithm(run, dataset, split)
    model = Model.load(record.model.save(tmp_path / "model"))
    for group, ids in (("val", split.val), ("test", split.test)):
        pooled = dataset.pooled(ids)
        assert _same(model.score(pooled.x, pooled.y, pooled.lengths), record[group])
    assert model.metrics["test"] == json.loads(json.dumps(record["test"]))
    assert model.provenance["algorithm"] == algorithm and model.provenance["config"]["units"]["value"] == 24
    members = len(split.train) if algorithm == "ensemble" else 1
    assert len(model.members) == members
    if algorithm in (*GRADIENT, "thesis-central"):
        readout = model.members[0].readout
        assert readout.kind == "dense" and readout.activation == (
            "identity" if dataset.task.real else "sigmoid" if dataset.n_classes == 2 else "softmax")
        assert model.spec == StateSpec(settings["state_mode"], 0, readout_bias=False)
        drawn = ReservoirWeights.from_config(run.config.model.reservoir, len(dataset.feature_names))
        for name in ("kernel", "recurrent", "bias", "gain"):
            np.testing.assert_array_equal(getattr(model.members[0].reservoir, name), getattr(drawn, name))
    if algorithm in GRADIENT:
        np.testing.assert_array_equal(readout.weights, record["extra"]["weights"]["kernel"])


def test_every_registered_algorithm_returns_its_model(tmp_path):
    dataset = DATASETS["classify"]()
    split = default_split(dataset)
    for name in available_algorithms():
        record = run_algorithm(resolve_run(name, dataset, units=12, **fast_settings(name, dataset, tmp_path / name)),
                               dataset, split)
        assert isinstance(record, RunRecord) and isinstance(record.model, Model), name
        assert record.model.provenance["algorithm"] == name


def test_predictions_are_the_readout_of_the_states_and_per_step_shapes():
    dataset = random_dataset(n_clients=6, steps=12, n_classes=2, per_step=True)
    split = default_split(dataset)
    record = run_algorithm(resolve_run("centralized", dataset, units=20, state_mode="all", washout=2,
                                       raw_inputs=False),
                           dataset, split)
    model, test = record.model, dataset.pooled(split.test)
    assert model.per_step and model.predict(test.x).shape == (len(test), 10)
    states = model.states(test.x)
    assert states.shape == (len(test) * 10, 20)
    outputs = predict(model.members[0].readout.weights, states, bias=True)
    np.testing.assert_array_equal(model.decision_function(test.x), outputs)
    np.testing.assert_array_equal(model.predict(test.x).reshape(-1), np.argmax(outputs, axis=1))
    with pytest.raises(AttributeError, match="not probabilities"):
        model.predict_proba(test.x)


def test_sequences_as_a_list_of_unequal_lengths_equal_the_padded_array():
    weights = ReservoirWeights.from_config(ReservoirConfig(units=16, leaky=0.5, seed=3), 2)
    rng = np.random.default_rng(0)
    model = model_of(weights, Readout("ridge", rng.normal(size=(1, 17))), StateSpec("mean", 1), Task("regress"),
                     ("a", "b"), ("y",))
    seqs = [rng.normal(size=(t, 2)).astype(np.float32) for t in (5, 9, 7)]
    padded = np.zeros((3, 9, 2), np.float32)
    for i, s in enumerate(seqs):
        padded[i, :len(s)] = s
    np.testing.assert_array_equal(model.predict(seqs), model.predict(padded, lengths=[5, 9, 7]))
    with pytest.raises(ValueError, match="3 features per step, the model was trained on 2"):
        model.predict(np.zeros((2, 5, 3)))
    with pytest.raises(ValueError, match="not more than the model's washout"):
        model.predict([np.zeros((1, 2))])
    with pytest.raises(ValueError, match="NaN"):
        model.predict(np.full((1, 4, 2), np.nan))


def test_a_sequence_dataset_is_predicted_as_its_clients_pooled():
    dataset = _real_dataset("regress", ragged=True)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=16, leaky=0.5, seed=3), 2)
    model = model_of(weights, Readout("ridge", np.random.default_rng(0).normal(size=(1, 17))), StateSpec("mean", 1),
                     dataset.task, dataset.feature_names, ("y",))
    pooled = dataset.pooled(dataset.client_ids)
    assert pooled.lengths is not None and len(pooled) == 36
    np.testing.assert_array_equal(model.predict(dataset), model.predict(pooled.x, pooled.lengths))
    np.testing.assert_array_equal(model.states(dataset), model.states(pooled.x, pooled.lengths))
    renamed = dataclasses.replace(dataset, feature_names=("b", "a"))
    with pytest.raises(ValueError, match=r"x: features \['b', 'a'\], the model was trained on \['a', 'b'\]"):
        model.predict(renamed)
    with pytest.raises(ValueError, match="a SequenceDataset carries its lengths"):
        model.predict(dataset, lengths=pooled.lengths)


def test_loading_and_predicting_import_no_tensorflow(tmp_path):
    dataset = random_dataset(n_clients=5, steps=10)
    record = run_algorithm(resolve_run("incfed", dataset, units=300, backend="numpy"), dataset,
                           default_split(dataset))
    folder = record.model.save(tmp_path / "model")
    assert sum(f.stat().st_size for f in folder.iterdir()) < 2 * 2 ** 20  # a 300-unit model under 2 MB
    np.save(tmp_path / "x.npy", dataset.clients["c4"].x)
    code = ("import sys, numpy as np, tff_esn; "
            f"m = tff_esn.Model.load({str(folder)!r}); p = m.predict(np.load({str(tmp_path / 'x.npy')!r})); "
            "print(len(p), 'tensorflow' in sys.modules, 'tensorflow_federated' in sys.modules, "
            "issubclass(tff_esn.ModelFormatError, ValueError), sorted(tff_esn.__all__) == tff_esn.__all__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == [str(len(dataset.clients["c4"])), "False", "False", "True", "True"], done.stderr


@pytest.mark.parametrize("name", ["deep", "mixed-activation", "small-world", "per-unit-leaks"])
def test_every_reservoir_kind_saves_and_loads_whole(name, tmp_path):
    """Deep layers, per-unit nonlinearities, a small-world graph and per-unit leaking rates come back exactly."""
    from test_model_exports import MODELS

    model, x = MODELS[name](np.random.default_rng(0))
    loaded = Model.load(model.save(tmp_path / "model"))
    ours, theirs = model.members[0].reservoir, loaded.members[0].reservoir
    if name == "deep":
        assert len(ours.layers) == 2
    elif name == "small-world":
        assert model.members[0].config.topology == "small-world"
    else:  # one nonlinearity or leaking rate per unit, not all alike
        assert len(set(ours.activation if name == "mixed-activation" else ours.leaky)) > 1
    for field in ("leaky", "layers", "readout_from", "activation"):
        assert getattr(theirs, field) == getattr(ours, field), field
    for field in ("kernel", "recurrent", "bias", "gain"):
        np.testing.assert_array_equal(getattr(theirs, field), getattr(ours, field))
    assert loaded.members[0].config == model.members[0].config and loaded.spec == model.spec
    np.testing.assert_array_equal(loaded.decision_function(x), model.decision_function(x))


@pytest.fixture
def saved(tmp_path):
    dataset = random_dataset(n_clients=5, steps=10)
    record = run_algorithm(resolve_run("centralized", dataset, units=12), dataset, default_split(dataset))
    return record.model.save(tmp_path / "model"), dataset


def test_a_folder_of_another_version_is_refused_in_one_line(saved):
    folder, _ = saved
    header = json.loads((folder / "model.json").read_text())
    header["version"] = FORMAT_VERSION + 1
    (folder / "model.json").write_text(json.dumps(header))
    with pytest.raises(ModelFormatError, match=f"format version {FORMAT_VERSION + 1}.*reads version") as err:
        Model.load(folder)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("damage", ["truncate", "flip", "missing", "json"])
def test_a_damaged_folder_is_refused_in_one_line(saved, damage):
    folder, _ = saved
    arrays = folder / "arrays.npz"
    if damage == "truncate":
        arrays.write_bytes(arrays.read_bytes()[:100])
    elif damage == "flip":
        blob = bytearray(arrays.read_bytes())
        blob[len(blob) // 2] ^= 0xFF
        arrays.write_bytes(bytes(blob))
    elif damage == "missing":
        arrays.unlink()
    else:
        (folder / "model.json").write_text("{not json")
    with pytest.raises(ModelFormatError) as err:
        Model.load(folder)
    assert "\n" not in str(err.value) and str(folder) in str(err.value)


def test_saving_over_a_model_replaces_it_whole(saved):
    folder, dataset = saved
    model = Model.load(folder)
    changed = model.replace(metrics={"note": 1})
    changed.save(folder)
    assert Model.load(folder).metrics == {"note": 1}
    assert sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("ragged", [False, True])
@pytest.mark.parametrize("state_mode", ["all", "mean", "last"])
def test_the_models_numpy_states_are_the_tf_reservoir_layers(state_mode, ragged):
    """:meth:`Model.states` (numpy) against the Keras ``Reservoir`` layer the federated training harvests with."""
    from tff_esn.federated.clients import reservoir_states
    from tff_esn.federated.configs import ThesisModelConfig

    reservoir = ReservoirConfig(units=20, leaky=0.7, spectral_radius=0.9, seed=4)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(7, 15, 3)).astype(np.float32)
    lengths = rng.integers(6, 16, 7) if ragged else None
    config = ThesisModelConfig(reservoir=reservoir, state_mode=state_mode, washout=3, class_weight=(1.0, 1.0))
    model = model_of(ReservoirWeights.from_config(reservoir, 3), Readout("dense", np.zeros((20, 1))),
                     StateSpec(state_mode, 3, readout_bias=False), Task(), ("a", "b", "c"), ("0", "1"),
                     per_step=state_mode == "all")
    ours = model.states(x, lengths)
    tf_states = reservoir_states(x if lengths is None else as_sequences(x, lengths)[0], reservoir, config,
                                 lengths=lengths)
    assert ours.shape == (7 * 12, 20) if state_mode == "all" else (7, 20)
    np.testing.assert_allclose(ours, tf_states.reshape(ours.shape), rtol=0, atol=2e-6)
    assert np.max(np.abs(ours)) > 0.1


@pytest.mark.parametrize("algorithm", ["fedavg", "incfed", "fedip", "pfedrr", "partial-incfed"])
def test_a_dp_runs_model_holds_only_the_released_readout_and_public_entries(algorithm, tmp_path):
    """Standardised readout inputs are asked for (FedAvg), but a DP run's model holds no training clients'
    statistics: the released readout, FedIP's released gains and biases, pFedRR's and partial IncFed's locally
    noised global readout."""
    dataset = random_dataset(n_clients=6, steps=12, n_classes=2)
    settings = {**fast_settings(algorithm, dataset, tmp_path / "run"), "dp_epsilon": 8.0}
    if algorithm == "fedavg":
        settings["readout_inputs"] = "standardized"
    elif algorithm in ("incfed", "fedip"):
        settings["backend"] = "tff"
    else:
        settings["dp_model"] = "local"
    record = run_algorithm(resolve_run(algorithm, dataset, units=12, **settings), dataset, default_split(dataset))
    folder = record.model.save(tmp_path / "model")
    assert record.model.members[0].readout.standardization is None and "train" not in record.model.metrics
    assert coverage.undeclared_model(folder) == []
    if algorithm == "fedavg":
        np.testing.assert_array_equal(record.model.members[0].readout.weights, record["extra"]["weights"]["kernel"])
    leaked = record.model.replace(members=(dataclasses.replace(record.model.members[0], readout=Readout(
        "dense", np.zeros((12, 1)), standardization=Standardization(np.zeros(12, np.float32),
                                                                    np.ones(12, np.float32)))),))
    assert coverage.undeclared_model(leaked.save(tmp_path / "leaked")) == [
        "model.arrays.m0.readout.mean (withheld under DP, but written)",
        "model.arrays.m0.readout.scale (withheld under DP, but written)"]
