"""Exports of a trained :class:`~tff_esn.esn.model.Model`: a Keras model that ``.keras``-saves and reloads in a fresh
process with the model's outputs, and reservoirpy nodes (slow, with the ``reservoirpy`` extra) computing them."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tff_esn import resolve_run, run_algorithm
from tff_esn.common.tasks import Task
from tff_esn.data.cache import cache_root
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.model import Member, Model, Readout, model_of
from tff_esn.esn.standardization import Standardization
from tff_esn.esn.weights import ReservoirWeights, StateSpec

from closed_form_data import default_split, random_dataset

TOLERANCE = 1e-5


def _trained(algorithm, per_step=False, **settings):
    dataset = random_dataset(n_clients=6, steps=12, n_classes=3 if not per_step else 2, per_step=per_step)
    split = default_split(dataset)
    model = run_algorithm(resolve_run(algorithm, dataset, units=16, **settings), dataset, split).model
    return model, dataset.pooled(split.test).x


def _dense(rng):
    """A softmax readout on standardised states of a reservoir fed standardised inputs, per-unit leaks."""
    config = ReservoirConfig(units=12, leak_distribution="uniform", leak_low=0.3, leaky=0.9, seed=4)
    weights = ReservoirWeights.from_config(config, 3)
    readout = Readout("dense", rng.normal(size=(12, 3)), rng.normal(size=3), "softmax",
                      Standardization(rng.normal(size=12).astype(np.float32), rng.uniform(0.5, 2, 12).astype(np.float32)))
    inputs = Standardization(rng.normal(size=3).astype(np.float32), rng.uniform(0.5, 2, 3).astype(np.float32))
    model = model_of(weights, readout, StateSpec("mean", 2), Task(), ("a", "b", "c"), ("x", "y", "z"),
                     config=config, inputs=inputs)
    return model, rng.normal(size=(5, 10, 3)).astype(np.float32)


def _dense_inputs(rng):
    """:func:`_dense`'s model with the inputs beside the states, read at the last step."""
    model, x = _dense(rng)
    scale = Standardization(rng.normal(size=15).astype(np.float32), rng.uniform(0.5, 2, 15).astype(np.float32))
    readout = Readout("dense", rng.normal(size=(15, 3)), rng.normal(size=3), "softmax", scale)
    member = model.members[0]
    return model.replace(members=(Member(member.reservoir, readout, 1.0, member.config),),
                         spec=StateSpec("last", 0, raw_inputs=True)), x


def _standardised_inputs_leaks(rng):
    """IncFed's readout on a per-unit-leak reservoir fed standardised inputs (both fold into reservoirpy's nodes)."""
    model, x = _trained("incfed", backend="numpy", state_mode="mean")
    config = ReservoirConfig(units=16, leak_distribution="uniform", leak_low=0.3, leaky=0.9, seed=4)
    member = model.members[0]
    inputs = Standardization(rng.normal(size=3).astype(np.float32), rng.uniform(0.5, 2, 3).astype(np.float32))
    return model.replace(members=(Member(ReservoirWeights.from_config(config, 3), member.readout, 1.0, config),),
                         inputs=inputs), x


MODELS = {
    "incfed": lambda rng: _trained("incfed", backend="numpy", state_mode="mean"),
    "inputs-mean": lambda rng: _trained("incfed", backend="numpy", state_mode="mean", washout=3, raw_inputs=True),
    "inputs-per-step": lambda rng: _trained("centralized", per_step=True, state_mode="all", washout=2,
                                            raw_inputs=True),
    "inputs-dense-last": _dense_inputs,
    "fedip-gains": lambda rng: _trained("fedip", backend="numpy", ip_epochs=1),
    "ensemble": lambda rng: _trained("ensemble", state_mode="last"),
    "per-step": lambda rng: _trained("centralized", per_step=True, state_mode="all", washout=2),
    "dense-standardised": _dense,
    "deep": lambda rng: _trained("incfed", backend="numpy", state_mode="mean", layers=2),
    "mixed-activation": lambda rng: _trained("incfed", backend="numpy", state_mode="mean", activation="mixed"),
    "small-world": lambda rng: _trained("incfed", backend="numpy", state_mode="last", raw_inputs=False,
                                        topology="small-world", neighbours=4),
    "per-unit-leaks": lambda rng: _trained("incfed", backend="numpy", state_mode="mean", leak_distribution="uniform",
                                           leak_low=0.3, leaky=0.9),
    "standardised-inputs-leaks": _standardised_inputs_leaks,
}


def test_keras_export_reloads_in_a_fresh_process_with_the_models_outputs(tmp_path):
    rng = np.random.default_rng(0)
    names = sorted(MODELS)
    for name in names:
        model, x = MODELS[name](rng)
        if name == "fedip-gains":
            assert np.any(model.members[0].reservoir.gain != 1)
        keras_model = model.to_keras()
        expected = model.decision_function(x)
        assert np.abs(keras_model.predict(x, verbose=0).reshape(expected.shape) - expected).max() < TOLERANCE
        keras_model.save(tmp_path / f"{name}.keras")
        np.save(tmp_path / f"{name}.x.npy", x)
        np.save(tmp_path / f"{name}.y.npy", expected)
    code = ("import sys, numpy as np; from tff_esn.esn.keras_export import load_keras\n"
            f"for name in {names!r}:\n"
            f"    m = load_keras({str(tmp_path)!r} + f'/{{name}}.keras')\n"
            f"    x, y = (np.load({str(tmp_path)!r} + f'/{{name}}.{{k}}.npy') for k in 'xy')\n"
            "    print(name, float(np.abs(m.predict(x, verbose=0).reshape(y.shape) - y).max()))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    errors = dict(line.split() for line in done.stdout.strip().splitlines())
    assert sorted(errors) == names, done.stderr[-2000:]
    assert all(float(e) < TOLERANCE for e in errors.values()), errors


def test_loading_a_model_imports_no_tensorflow_until_to_keras():
    code = ("import sys; from tff_esn.esn.model import Model; import tff_esn.esn.reservoirpy_nodes; "
            "print('tensorflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["False"], done.stderr


def test_reservoirpy_refuses_what_it_has_no_node_of():
    rng = np.random.default_rng(0)
    model, _ = _dense(rng)
    with pytest.raises(ValueError, match="a dense .* readout has no reservoirpy Ridge node"):
        model.to_reservoirpy()
    ensemble, _ = _trained("ensemble")
    with pytest.raises(ValueError, match="an ensemble has several reservoirs"):
        ensemble.to_reservoirpy()
    deep = ReservoirWeights.from_config(ReservoirConfig(units=8, layers=2, seed=1), 3)
    model = model_of(deep, Readout("ridge", rng.normal(size=(1, 17))), StateSpec("last"), Task("regress"),
                     ("a", "b", "c"), ("y",))
    with pytest.raises(ValueError, match="a deep reservoir's layers"):
        model.to_reservoirpy()
    mixed, _ = MODELS["mixed-activation"](rng)
    with pytest.raises(ValueError, match="reservoirpy's Reservoir takes one of tanh"):
        mixed.to_reservoirpy()
    beside, _ = _trained("centralized", raw_inputs=True, state_mode="last")
    with pytest.raises(ValueError, match="sees the inputs beside the states"):
        beside.to_reservoirpy()


RESERVOIRPY = ("incfed", "fedip-gains", "per-step", "small-world", "per-unit-leaks", "standardised-inputs-leaks")
"""The models reservoirpy has nodes of."""

RESERVOIRPY_04 = ("numpy", "scipy>=1.11", "scikit-learn", "reservoirpy==0.4.2")
"""A TensorFlow-free environment's packages: what loading a model takes (numpy, scikit-learn's metrics) and
reservoirpy 0.4 (which needs a newer scipy than TFF's stack takes)."""

ROUND_TRIP = """
import importlib.util, json, sys
import numpy as np, reservoirpy
if hasattr(reservoirpy, "verbosity"):  # 0.3's progress bars; 0.4 has none
    reservoirpy.verbosity(0)
from tff_esn.esn.model import Model
folder, names = sys.argv[1], sys.argv[2:]
report = {"reservoirpy": reservoirpy.__version__,
          "tensorflow installed": importlib.util.find_spec("tensorflow") is not None}
for name in names:
    model = Model.load(f"{folder}/{name}")
    x, y, p = (np.load(f"{folder}/{name}.{k}.npy") for k in "xyp")
    esn = model.to_reservoirpy()
    nodes = esn.run(x)  # 0.3's nodes draw their given weights when first run
    back = Model.from_reservoirpy(esn.reservoir, esn.readout, state_mode=esn.state_mode, washout=esn.washout,
                                  label_names=model.label_names)
    report[name] = {"loaded": float(np.abs(model.decision_function(x) - y).max()),
                    "nodes": float(np.abs(nodes - y).max()),
                    "read back": float(np.abs(back.decision_function(x) - y).max()),
                    "same predictions": bool(np.array_equal(back.predict(x).reshape(-1), p.reshape(-1)))}
report["tensorflow imported"] = "tensorflow" in sys.modules
print(json.dumps(report))
"""
"""``python -c ROUND_TRIP FOLDER NAME…``: each model FOLDER/NAME loaded, run as reservoirpy nodes and read back from
them, against the outputs and predictions saved beside it (NAME.x/y/p.npy); one JSON line of the largest errors."""


def _reservoirpy_04_python() -> Path:
    """The interpreter of a venv with :data:`RESERVOIRPY_04` and no TensorFlow, made once under the cache root (this
    package's source is put on its ``PYTHONPATH``); the test is skipped when the packages cannot be fetched."""
    venv = cache_root() / "reservoirpy-0.4.2-venv"
    python, ready = venv / "bin" / "python", venv / ".installed"
    if not ready.exists() or ready.read_text() != " ".join(RESERVOIRPY_04):
        shutil.rmtree(venv, ignore_errors=True)
        for step in ([sys.executable, "-m", "venv", str(venv)],
                     [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *RESERVOIRPY_04]):
            done = subprocess.run(step, capture_output=True, text=True, timeout=1200)
            if done.returncode:
                shutil.rmtree(venv, ignore_errors=True)
                pytest.skip(f"no reservoirpy 0.4.2 venv: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
        ready.write_text(" ".join(RESERVOIRPY_04))
    return python


@pytest.mark.slow
@pytest.mark.parametrize("environment", ["this venv", "reservoirpy 0.4.2 without tensorflow"])
def test_reservoirpy_nodes_compute_the_models_outputs_and_read_back(environment, tmp_path):
    """A saved model loads, runs as reservoirpy nodes and reads back from them with its outputs (within 1e-5) and
    predictions, here (the ``reservoirpy`` extra, 0.3.13) and in a venv of reservoirpy 0.4.2 and no TensorFlow."""
    if environment == "this venv":
        python = Path(sys.executable)
        pytest.importorskip("reservoirpy")
    else:
        python = _reservoirpy_04_python()
    rng = np.random.default_rng(1)
    for name in RESERVOIRPY:
        model, x = MODELS[name](rng)
        model.save(tmp_path / name)
        for key, array in zip("xyp", (x, model.decision_function(x), model.predict(x))):
            np.save(tmp_path / f"{name}.{key}.npy", array)
    assert isinstance(Model.load(tmp_path / "standardised-inputs-leaks").members[0].reservoir.leaky, tuple)
    environ = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PYTHONNOUSERSITE": "1"}
    done = subprocess.run([str(python), "-c", ROUND_TRIP, str(tmp_path), *RESERVOIRPY], capture_output=True,
                          text=True, timeout=600, env=environ)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert not report.pop("tensorflow imported")
    version, installed = report.pop("reservoirpy"), report.pop("tensorflow installed")
    if environment != "this venv":
        assert version == "0.4.2" and not installed
    assert sorted(report) == sorted(RESERVOIRPY)
    for name, errors in report.items():
        assert errors.pop("same predictions"), name
        assert max(errors.values()) < TOLERANCE, (name, errors)
