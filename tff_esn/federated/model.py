"""The thesis model (thesis §6.1, Fig. 6.1): a fixed reservoir and a ``Dense`` readout ``[kernel (U, C), bias (C,)]``.

Two classes: ``sigmoid(x(t) w + b)``, class-weighted binary cross-entropy (thesis Alg. 2 line 18); K > 2:
``softmax(x(t) W + b)``, weighted categorical cross-entropy; real targets: ``x(t) w + b`` on the mean squared error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import tensorflow as tf

from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.federated.configs import ThesisModelConfig, check_class_weight
from tff_esn.esn.layer import Reservoir
from tff_esn.esn.model import Model, Readout, model_of
from tff_esn.esn.standardization import Standardization
from tff_esn.esn.weights import ReservoirWeights, StateSpec

if TYPE_CHECKING:
    from tff_esn.data.sequences import SequenceDataset


@tf.keras.utils.register_keras_serializable(package="tff_esn")
class WeightedBinaryCrossentropy(tf.keras.losses.Loss):
    """``mean(w[y] · BCE(y, p))`` over every prediction (thesis §6.1, ``class_weight={0: 12, 1: 88}``): Keras'
    ``fit(class_weight=...)`` on (batch, 1) targets, also on per-step (batch, T, 1) targets."""

    def __init__(self, class_weight: Any = (12.0, 88.0), name: str = "weighted_binary_crossentropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.class_weight = _weights(class_weight, 2)

    def call(self, y_true, y_pred):
        y_true = tf.cast(y_true, y_pred.dtype)
        w0, w1 = self.class_weight
        weights = w0 + (w1 - w0) * y_true
        return tf.reduce_mean(weights * tf.keras.backend.binary_crossentropy(y_true, y_pred), axis=-1)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "class_weight": list(self.class_weight)}


@tf.keras.utils.register_keras_serializable(package="tff_esn")
class WeightedCategoricalCrossentropy(tf.keras.losses.Loss):
    """``mean(w[y] · (−log p_y))`` over every one-hot prediction: Keras' ``CategoricalCrossentropy`` with ``w[y]``."""

    def __init__(self, class_weight: Any, name: str = "weighted_categorical_crossentropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.class_weight = _weights(class_weight, None)

    def call(self, y_true, y_pred):
        y_true = tf.cast(y_true, y_pred.dtype)
        weights = tf.reduce_sum(y_true * tf.constant(self.class_weight, y_pred.dtype), axis=-1)
        return weights * tf.keras.backend.categorical_crossentropy(y_true, y_pred)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "class_weight": list(self.class_weight)}


def _weights(class_weight: Any, k: int | None) -> tuple[float, ...]:
    weights = check_class_weight(class_weight)
    if isinstance(weights, str) or (k is not None and len(weights) != k):
        raise ValueError(f"class_weight: expected {k or 'K'} numbers, got {class_weight!r}.")
    return weights


def readout_layer(seed: int, n_outputs: int = 1, *, linear: bool = False) -> tf.keras.layers.Dense:
    """The seeded readout: ``Dense(1, sigmoid)`` (thesis Alg. 2 line 18), ``Dense(K, softmax)`` or ``Dense(1)``."""
    activation = None if linear else "sigmoid" if n_outputs == 1 else "softmax"
    return tf.keras.layers.Dense(
        n_outputs, activation=activation, name="readout",
        kernel_initializer=tf.keras.initializers.GlorotUniform(seed=seed),
    )


def build_thesis_model(n_inputs: int, config: ThesisModelConfig, *, readout_only: bool = False,
                       reservoir: ReservoirConfig | None = None) -> tf.keras.Model:
    """The (uncompiled) thesis ESN on ``n_inputs`` features (``readout_only``: on cached states)."""
    res = reservoir or config.reservoir
    if readout_only:
        if n_inputs != res.readout_units:
            raise ValueError(f"build_thesis_model: cached states have {n_inputs} units, the reservoir "
                             f"{res.readout_units}.")
        states = inputs = tf.keras.Input((None, n_inputs) if config.per_step else (n_inputs,), name="states")
    else:
        inputs = tf.keras.Input((None, n_inputs), name="inputs")
        states = Reservoir(res, state_mode=config.state_mode, washout=config.washout, name="reservoir")(inputs)
    outputs = readout_layer(config.reservoir.seed, config.n_outputs, linear=config.real)(states)
    return tf.keras.Model(inputs, outputs, name="thesis_esn_readout" if readout_only else "thesis_esn")


def thesis_loss(config: ThesisModelConfig) -> tf.keras.losses.Loss:
    """The class-weighted cross-entropy (the thesis' binary one, else categorical); MSE for real targets."""
    if config.real:
        return tf.keras.losses.MeanSquaredError()
    if config.n_classes == 2:
        return WeightedBinaryCrossentropy(config.class_weight)
    return WeightedCategoricalCrossentropy(config.class_weight)


def keras_optimizer(config: ThesisModelConfig) -> tf.keras.optimizers.Optimizer:
    """Keras' ``Adam(η)`` (thesis Table 6.2) or plain ``SGD(η)``, as ``config.optimizer`` says."""
    if config.optimizer == "sgd":
        return tf.keras.optimizers.SGD(config.learning_rate)
    return tf.keras.optimizers.Adam(config.learning_rate)


def compile_thesis_model(model: tf.keras.Model, config: ThesisModelConfig) -> tf.keras.Model:
    """Compiles with the optimizer (thesis: Adam(η)), the weighted cross-entropy, accuracy and AUC (thesis §6.1)."""
    accuracy = (tf.keras.metrics.BinaryAccuracy(name="accuracy") if config.n_classes == 2
                else tf.keras.metrics.CategoricalAccuracy(name="accuracy"))
    model.compile(optimizer=keras_optimizer(config), loss=thesis_loss(config),
                  metrics=[accuracy, tf.keras.metrics.AUC(name="auc")])
    return model


def thesis_model(dataset: SequenceDataset, config: ThesisModelConfig, kernel: np.ndarray | None = None,
                 bias: np.ndarray | None = None, standardization: Standardization | None = None, *,
                 seed: int = 0) -> Model:
    """The trained thesis ESN as a :class:`~tff_esn.esn.model.Model`: the reservoir ``config`` draws for the data's
    features, the dense readout ``(kernel (U, C), bias (C,))`` (sigmoid, softmax or linear, as the resolved ``config``
    says; zeros if not given) on the states ``standardization`` scales, and the states of ``config``'s state mode."""
    weights = ReservoirWeights.from_config(config.reservoir, len(dataset.feature_names))
    shape = (config.reservoir.readout_units, config.n_outputs)
    activation = "identity" if config.real else "sigmoid" if config.n_outputs == 1 else "softmax"
    readout = Readout("dense", np.zeros(shape, np.float32) if kernel is None else kernel,
                      np.zeros(shape[1], np.float32) if bias is None else bias, activation, standardization)
    return model_of(weights, readout, StateSpec(config.state_mode, config.washout, readout_bias=False), dataset.task,
                    dataset.feature_names, dataset.label_names, config=config.reservoir, per_step=config.per_step,
                    seed=seed)


def group_reports(model: Model, dataset: SequenceDataset, groups: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Each group's ``metrics.json`` section as ``model`` scores its pooled sequences (``None``: no clients)."""
    reports = {}
    for name, ids in groups.items():
        pooled = dataset.pooled(ids) if ids else None
        reports[name] = None if pooled is None else model.score(pooled.x, pooled.y, pooled.lengths)
    return reports
