"""The thesis hypermodel: reservoir + sigmoid readout searched on validation F1 (thesis §6.1).

:class:`ThesisHyperModel` builds, for one point of Table 6.1's space, the thesis model
(:class:`~tff_esn.Reservoir` with ρ = 0.99 and a ``Dense(1, "sigmoid")`` readout,
Adam + binary cross-entropy, ``class_weight={0: 12, 1: 88}``) and trains it for the trial's
epochs and batch size on the trial's feature subset of the data preprocessed with the
trial's window. The objective is ``val_f1``: the validation F1 score of the stress class
(:class:`BinaryF1`, a Keras metric), maximised.

The thesis' "F1" is ambiguous: Table 6.3's "F1 (micro)" equals its accuracy (micro F1 of a
single-label task always does), while the selection criterion is motivated as suited to the
unbalanced labels — which micro F1 is not. We select on the F1 of the positive (stress)
class, the usual reading; ``tff-esn run`` reports both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import keras_tuner as kt
import numpy as np
import tensorflow as tf

from tff_esn.config import ReservoirConfig
from tff_esn.data.sequences import ClientSequences
from tff_esn.reservoir import Reservoir

CLASS_WEIGHT = {0: 12.0, 1: 88.0}
"""Thesis §6.1: ``class_weight={0: 12, 1: 88}`` against ≈ 11.5 % stress labels."""

ThesisData = Callable[[int], tuple[ClientSequences, ClientSequences, tuple[str, ...]]]
"""``window (samples at 64 Hz) → (train, validation, feature names)`` of the thesis pipeline."""


@tf.keras.utils.register_keras_serializable(package="tuning")
class BinaryF1(tf.keras.metrics.F1Score):
    """F1 of the positive class of a sigmoid output of any shape (per sequence or per step).

    ``tf.keras.metrics.F1Score`` with one column and ``average="micro"`` is exactly the
    binary F1; this metric flattens labels and probabilities to one column first, so
    per-step outputs (batch, time, 1) are scored over every step.
    """

    def __init__(self, threshold: float = 0.5, name: str = "f1", dtype=None, **kwargs):
        kwargs.pop("average", None)
        super().__init__(average="micro", threshold=threshold, name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = tf.reshape(tf.cast(y_true, self.dtype), [-1, 1])
        y_pred = tf.reshape(tf.cast(y_pred, self.dtype), [-1, 1])
        if sample_weight is not None:
            sample_weight = tf.reshape(sample_weight, [-1])
        return super().update_state(y_true, y_pred, sample_weight)


def thesis_model(config: ReservoirConfig, n_features: int, *, learning_rate: float, per_step: bool) -> tf.keras.Model:
    """Reservoir + ``Dense(1, sigmoid)`` compiled with Adam and binary cross-entropy (thesis §6.1).

    ``per_step`` readouts score every state (outputs (batch, time, 1)); otherwise the last
    state (outputs (batch, 1)).
    """
    inputs = tf.keras.Input((None, n_features))
    states = Reservoir(config, state_mode="all" if per_step else "last")(inputs)
    outputs = tf.keras.layers.Dense(1, activation="sigmoid", name="readout")(states)
    model = tf.keras.Model(inputs, outputs, name="thesis_esn")
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate), loss=tf.keras.losses.BinaryCrossentropy(),
                  metrics=[BinaryF1(), tf.keras.metrics.BinaryAccuracy(name="accuracy")])
    return model


def class_sample_weight(y: np.ndarray, class_weight: Mapping[int, float]) -> np.ndarray:
    """Per-label weights (Keras' ``class_weight`` does not accept per-step targets)."""
    table = np.array([class_weight[c] for c in range(2)], np.float32)
    return table[y]


class ThesisHyperModel(kt.HyperModel):
    """Thesis Table 6.1 hypermodel (see the module docstring).

    Args:
        data: ``window → (train, validation, feature names)``; called once per trial with
            the trial's window (cache it: windows repeat).
        seed: reservoir seed and Keras seed (readout initialisation, shuffling) of every trial.
        class_weight: loss weight per class.
    """

    def __init__(self, data: ThesisData, *, seed: int = 0, class_weight: Mapping[int, float] = CLASS_WEIGHT):
        super().__init__(name="thesis")
        self.data = data
        self.seed = seed
        self.class_weight = dict(class_weight)

    def _columns(self, hp: kt.HyperParameters, names: tuple[str, ...]) -> list[int]:
        wanted = hp.get("features").split(",")
        missing = [f for f in wanted if f not in names]
        if missing:
            raise ValueError(f"ThesisHyperModel: features {missing} not in the data's features {list(names)}.")
        return [names.index(f) for f in wanted]

    def build(self, hp: kt.HyperParameters) -> tf.keras.Model:
        tf.keras.utils.set_random_seed(self.seed)
        config = ReservoirConfig(units=hp.get("units"), spectral_radius=hp.get("spectral_radius"),
                                 leaky=hp.get("leaky"), seed=self.seed)
        n_features = len(hp.get("features").split(","))
        per_step = self.data(hp.get("window"))[0].per_step
        return thesis_model(config, n_features, learning_rate=hp.get("learning_rate"), per_step=per_step)

    def fit(self, hp: kt.HyperParameters, model: tf.keras.Model, *args, **kwargs):
        """Trains on the training clients, validates on the validation clients (``val_f1``)."""
        train, val, names = self.data(hp.get("window"))
        cols = self._columns(hp, names)
        tf.keras.utils.set_random_seed(self.seed)
        return model.fit(
            train.x[..., cols], train.y[..., None].astype(np.float32),
            sample_weight=class_sample_weight(train.y, self.class_weight),
            batch_size=hp.get("batch_size"), epochs=hp.get("epochs"),
            validation_data=(val.x[..., cols], val.y[..., None].astype(np.float32)), **kwargs,
        )
