"""The discriminator network, its training, and saving/loading with Keras (thesis §6.1, Fig. 6.2).

``Normalization → Dense → Dropout → Dense → Dropout → Dense(1, sigmoid)`` = P(real), trained with binary
cross-entropy and Adam (1e-3), 5 epochs, batch 64, validation split 0.2. A saved discriminator is a
folder: ``model.keras`` and ``discriminator.json`` (input size, configuration, provenance, metrics).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
from sklearn.metrics import f1_score

from tff_esn.common import streams
from discriminator.configs import DiscriminatorConfig
from discriminator.deltas import DeltaSet
from tff_esn.data.errors import DataError
from tff_esn.federated.clients import seeded_fit_data
from tff_esn.common.io import write_json_atomic

FORMAT = "tff_esn.discriminator/1"
MODEL_FILE = "model.keras"
META_FILE = "discriminator.json"


class DiscriminatorFileError(DataError):
    """A discriminator folder that cannot be used: missing, corrupted or of another shape (bad
    input from files: the command line reports it in one line with exit code 2)."""


def _integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def build_discriminator(n_inputs: int, config: DiscriminatorConfig, adapt_to: np.ndarray) -> tf.keras.Model:
    """The compiled discriminator (thesis Fig. 6.2) for deltas of ``n_inputs`` values.

    Args:
        n_inputs: delta length, (readout units + 1)·C (thesis: 201; U·K + K for K > 2 classes).
        config: architecture and optimiser.
        adapt_to: (n, n_inputs) training deltas whose mean and variance the
            ``Normalization`` layer takes.
    """
    if not (_integer(n_inputs) and n_inputs >= 2):
        raise ValueError(f"build_discriminator: n_inputs must be an integer ≥ 2 (units + bias), got {n_inputs!r}.")
    adapt_to = np.asarray(adapt_to, np.float32)
    if adapt_to.ndim != 2 or adapt_to.shape[1] != n_inputs or len(adapt_to) == 0:
        raise ValueError(f"build_discriminator: adapt_to must be (n ≥ 1, {n_inputs}) deltas, got {adapt_to.shape}.")
    norm = tf.keras.layers.Normalization(name="standardize")
    norm.adapt(adapt_to)

    def dense(units: int, activation: str, i: int) -> tf.keras.layers.Dense:
        return tf.keras.layers.Dense(units, activation=activation, name=f"dense_{i}",
                                     kernel_initializer=tf.keras.initializers.GlorotUniform(seed=config.seed + i))

    def dropout(rate: float, i: int) -> tf.keras.layers.Dropout:
        # a tf.random.Generator from the seed: Keras' default (legacy) dropout mixes TF's global seed in
        return tf.keras.layers.Dropout(rate, seed=config.seed + 10 + i, rng_type="stateful", name=f"dropout_{i}")

    model = tf.keras.Sequential([
        tf.keras.Input((n_inputs,), name="delta"),
        norm,
        dense(config.hidden[0], config.activation, 1),
        dropout(config.dropout[0], 1),
        dense(config.hidden[1], config.activation, 2),
        dropout(config.dropout[1], 2),
        dense(1, "sigmoid", 3),
    ], name="discriminator")
    model.compile(optimizer=tf.keras.optimizers.Adam(config.learning_rate), loss="binary_crossentropy",
                  metrics=[tf.keras.metrics.BinaryAccuracy(name="accuracy")])
    return model


@dataclasses.dataclass(eq=False)
class Discriminator:
    """A trained discriminator: the Keras model, its metrics and where it came from.

    Attributes:
        model: ``(n, (U + 1)·C) deltas → (n, 1) P(real)``.
        metrics: ``val_binary_accuracy``, ``train_f1``, ``test_f1``, ``train_accuracy``,
            ``test_accuracy`` (F1 of the "real" class at threshold 0.5) and the real/fake
            ESNs' test scores (``real_esn_test_f1``, ``fake_esn_test_f1``) when known.
        info: provenance (configurations, data) — stored in ``discriminator.json``.
    """

    model: tf.keras.Model
    metrics: dict[str, Any] = dataclasses.field(default_factory=dict)
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def n_inputs(self) -> int:
        """Delta length the model accepts ((readout units + 1)·C)."""
        return int(self.model.input_shape[-1])

    def predict(self, deltas: np.ndarray) -> np.ndarray:
        """P(real) of each (n, (U + 1)·C) delta, shape (n,)."""
        deltas = np.asarray(deltas, np.float32)
        if deltas.ndim != 2 or deltas.shape[1] != self.n_inputs:
            raise ValueError(f"Discriminator.predict: expected deltas of shape (n, {self.n_inputs}), "
                             f"got {deltas.shape}.")
        return self.model.predict(deltas, batch_size=1024, verbose=0).reshape(-1)

    def save(self, path: str | os.PathLike) -> Path:
        """Writes the folder ``path`` (``model.keras`` + ``discriminator.json``), replacing it whole."""
        return save_discriminator(self, path)


def _binary_scores(y: np.ndarray, p: np.ndarray, threshold: float = 0.5) -> tuple[float, float]:
    pred = (p > threshold).astype(np.int64)
    return float(np.mean(pred == y)), float(f1_score(y, pred, zero_division=0))


def evaluate(discriminator: Discriminator, deltas: np.ndarray, labels: np.ndarray, *,
             threshold: float = 0.5) -> dict[str, float]:
    """Accuracy and F1 of the "real" class of the discriminator on labelled deltas."""
    acc, f1 = _binary_scores(np.asarray(labels), discriminator.predict(deltas), threshold)
    return {"accuracy": acc, "f1": f1}


def train_discriminator(deltas: DeltaSet, config: DiscriminatorConfig = DiscriminatorConfig(), *,
                        info: Mapping[str, Any] | None = None) -> Discriminator:
    """Trains the discriminator on ``deltas.x_train`` (thesis §6.1).

    The training deltas are shuffled (seeded) before the last ``validation_split`` of them
    are held out for validation, so both classes are validated. Every draw (initialisation,
    dropout, epoch orders) comes from ``config.seed``; no global RNG is read or set.

    Returns:
        The :class:`Discriminator` with its metrics (see there); ``info`` is stored as
        provenance next to the configuration.
    """
    if not isinstance(deltas, DeltaSet):
        raise TypeError(f"train_discriminator: expected a DeltaSet, got {type(deltas).__name__}.")
    if len(np.unique(deltas.y_train)) != 2:
        raise ValueError(f"train_discriminator: the training deltas need both labels (real and fake), got "
                         f"{sorted(set(deltas.y_train.tolist()))}.")
    order = streams.DISCRIMINATOR_ORDER.generator(config.seed).permutation(len(deltas.y_train))
    x, y = deltas.x_train[order], deltas.y_train[order].astype(np.float32)
    n_fit = len(x) - int(len(x) * config.validation_split)
    model = build_discriminator(deltas.n_inputs, config, x[:n_fit])
    batches, steps = seeded_fit_data(x[:n_fit], y[:n_fit], batch_size=config.batch_size, epochs=config.epochs,
                                     seed=config.seed)
    history = model.fit(batches, epochs=config.epochs, steps_per_epoch=steps, verbose=0,
                        validation_data=(x[n_fit:], y[n_fit:]) if n_fit < len(x) else None)
    disc = Discriminator(model, info={"discriminator_config": config.to_dict(), **(info or {})})
    train_acc, train_f1 = _binary_scores(deltas.y_train, disc.predict(deltas.x_train))
    test_acc, test_f1 = _binary_scores(deltas.y_test, disc.predict(deltas.x_test))
    metrics: dict[str, Any] = {"train_accuracy": train_acc, "train_f1": train_f1,
                               "test_accuracy": test_acc, "test_f1": test_f1,
                               "n_train": int(len(deltas.y_train)), "n_test": int(len(deltas.y_test))}
    if n_fit < len(x):
        metrics["val_binary_accuracy"] = float(history.history["val_accuracy"][-1])
    for name, scores in deltas.esn_metrics.items():
        metrics[f"{name}_esn_test_f1"] = float(scores["f1_micro"])
        metrics[f"{name}_esn_test_accuracy"] = float(scores["accuracy"])
    disc.metrics = metrics
    return disc


def save_discriminator(discriminator: Discriminator, path: str | os.PathLike) -> Path:
    """Writes ``path/model.keras`` and ``path/discriminator.json``; an existing folder is replaced whole.

    Both files are written into a temporary sibling folder first, so a failure leaves any
    previous discriminator at ``path`` intact.
    """
    path = Path(path)
    if path.exists() and not (path / META_FILE).exists():
        raise DiscriminatorFileError(f"save_discriminator: {path} exists and is not a discriminator folder "
                                     f"(no {META_FILE}); refusing to replace it.")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        discriminator.model.save(tmp / MODEL_FILE)
        write_json_atomic(tmp / META_FILE, {"format": FORMAT, "n_inputs": discriminator.n_inputs,
                                            "metrics": discriminator.metrics, "info": discriminator.info})
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def load_discriminator(path: str | os.PathLike, *, n_inputs: int | None = None) -> Discriminator:
    """Reads a discriminator folder written by :func:`save_discriminator`.

    Args:
        path: the folder.
        n_inputs: when given, the delta length the caller will feed ((units + 1)·C);
            a discriminator trained for another size is rejected.

    Raises:
        FileNotFoundError: no such folder.
        DiscriminatorFileError: not a discriminator folder, unreadable or corrupted files,
            a model whose input size disagrees with its metadata or with ``n_inputs``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"discriminator {path}: no such file or folder.")
    meta_path, model_path = path / META_FILE, path / MODEL_FILE
    if not path.is_dir() or not meta_path.exists() or not model_path.exists():
        raise DiscriminatorFileError(f"discriminator {path}: expected a folder with {MODEL_FILE} and {META_FILE} "
                                     "(written by `tff-esn discriminator train`).")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DiscriminatorFileError(f"discriminator {path}: {META_FILE} is not valid JSON: {err}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not _integer(meta.get("n_inputs")):
        raise DiscriminatorFileError(f"discriminator {path}: {META_FILE} is not a {FORMAT} description.")
    try:
        model = tf.keras.models.load_model(model_path, compile=False)
    except Exception as err:  # Keras raises many kinds of errors on a damaged archive
        raise DiscriminatorFileError(f"discriminator {path}: cannot load {MODEL_FILE} (corrupted?): "
                                     f"{type(err).__name__}: {err}") from None
    disc = Discriminator(model, metrics=meta.get("metrics", {}), info=meta.get("info", {}))
    if model.input_shape != (None, meta["n_inputs"]) or model.output_shape != (None, 1):
        raise DiscriminatorFileError(f"discriminator {path}: the model maps {model.input_shape} → "
                                     f"{model.output_shape}, expected (None, {meta['n_inputs']}) → (None, 1).")
    if n_inputs is not None and n_inputs != disc.n_inputs:
        raise DiscriminatorFileError(
            f"discriminator {path} takes deltas of {disc.n_inputs} values, but this model's readout (kernel and bias) "
            f"has {n_inputs} values — train a discriminator for this reservoir size and number of classes.")
    return disc
