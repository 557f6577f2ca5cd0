"""The thesis model: a fixed reservoir and a sigmoid ``Dense`` readout (thesis §6.1, Fig. 6.1).

The reservoir (thesis eq. 2.1, :class:`tff_esn.Reservoir`) is fixed; only the readout
``y(t) = sigmoid(x(t) w + b)`` (thesis Alg. 2 line 18) is trained, with Adam and a binary
cross-entropy weighted by ``class_weight={0: 12, 1: 88}`` (thesis §6.1) against the ≈ 11.5 %
positive (stress) labels. Table 6.2 gives the best model: 200 units, leaky 1.0, ρ = 0.99,
η = 0.1, batch 20, one epoch.

Two forms share the readout, so their trainable weights have the same structure
(``[kernel (U, 1), bias (1,)]``) and can be federated interchangeably:

* the full model — ``Input(T, F) → Reservoir → Dense(1, sigmoid)`` — as in the thesis;
* the readout-only model — ``Input(T, U) → Dense(1, sigmoid)`` — trained on cached
  reservoir states (the reservoir is fixed, so its states are harvested once).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from tff_esn.config import ReservoirConfig
from tff_esn.federated.configs import THESIS_RESERVOIR, ThesisModelConfig, check_class_weight
from tff_esn.reservoir import Reservoir

__all__ = ["THESIS_RESERVOIR", "ThesisModelConfig", "WeightedBinaryCrossentropy", "build_thesis_model",
           "compile_thesis_model", "readout_layer", "thesis_loss"]

@tf.keras.utils.register_keras_serializable(package="tff_esn")
class WeightedBinaryCrossentropy(tf.keras.losses.Loss):
    """Binary cross-entropy with per-class weights (thesis §6.1, ``class_weight={0: 12, 1: 88}``).

    ``mean(w[y] · BCE(y, p))`` over every prediction — exactly what ``model.fit(...,
    class_weight=...)`` computes for (batch, 1) targets, and it also applies to per-step
    (batch, T, 1) targets, where Keras' ``class_weight`` is not supported.
    """

    def __init__(self, class_weight: Any = (12.0, 88.0), name: str = "weighted_binary_crossentropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.class_weight = check_class_weight(class_weight)

    def call(self, y_true, y_pred):
        y_true = tf.cast(y_true, y_pred.dtype)
        w0, w1 = self.class_weight
        weights = w0 + (w1 - w0) * y_true
        return tf.reduce_mean(weights * tf.keras.backend.binary_crossentropy(y_true, y_pred), axis=-1)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "class_weight": list(self.class_weight)}


def readout_layer(seed: int) -> tf.keras.layers.Dense:
    """The sigmoid readout ``Dense(1)`` (thesis Alg. 2 line 18), Glorot-uniform with a seed."""
    return tf.keras.layers.Dense(
        1, activation="sigmoid", name="readout",
        kernel_initializer=tf.keras.initializers.GlorotUniform(seed=seed),
    )


def build_thesis_model(n_inputs: int, config: ThesisModelConfig, *, readout_only: bool = False,
                       reservoir: ReservoirConfig | None = None) -> tf.keras.Model:
    """The (uncompiled) thesis ESN.

    Args:
        n_inputs: input features F (thesis: pEDA, tEDA, HR, HRV), or — with
            ``readout_only`` — the reservoir units whose cached states are the input.
        config: model configuration; the readout's initial weights are seeded by
            ``config.reservoir.seed``, so every build gives the same initial model.
        readout_only: the readout alone on (cached) states.
        reservoir: the reservoir of this model when it differs from ``config.reservoir``
            (a client with its own reservoir, thesis Table 6.5).

    Returns:
        ``(batch, T, F) → (batch, T − washout, 1)`` when ``config.per_step``, else
        ``(batch, T, F) → (batch, 1)``; the readout-only model maps states of the same
        layout ((batch, T', U) or (batch, U)).
    """
    if not isinstance(n_inputs, int) or n_inputs < 1:
        raise ValueError(f"build_thesis_model: n_inputs must be an integer ≥ 1, got {n_inputs!r}.")
    res = reservoir or config.reservoir
    if readout_only:
        if n_inputs != res.units:
            raise ValueError(f"build_thesis_model: cached states have {n_inputs} units, the reservoir {res.units}.")
        inputs = tf.keras.Input((None, n_inputs) if config.per_step else (n_inputs,), name="states")
        states = inputs
    else:
        inputs = tf.keras.Input((None, n_inputs), name="inputs")
        states = Reservoir(res, state_mode=config.state_mode, washout=config.washout, name="reservoir")(inputs)
    outputs = readout_layer(config.reservoir.seed)(states)
    return tf.keras.Model(inputs, outputs, name="thesis_esn_readout" if readout_only else "thesis_esn")


def thesis_loss(config: ThesisModelConfig) -> WeightedBinaryCrossentropy:
    """The thesis' class-weighted binary cross-entropy."""
    return WeightedBinaryCrossentropy(config.class_weight)


def compile_thesis_model(model: tf.keras.Model, config: ThesisModelConfig) -> tf.keras.Model:
    """Compiles with Adam(η), the weighted BCE, binary accuracy and AUC (thesis §6.1)."""
    model.compile(
        optimizer=tf.keras.optimizers.Adam(config.learning_rate),
        loss=thesis_loss(config),
        metrics=[tf.keras.metrics.BinaryAccuracy(name="accuracy"), tf.keras.metrics.AUC(name="auc")],
    )
    return model
