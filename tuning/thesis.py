"""The thesis hypermodel: reservoir + readout searched on validation F1 (thesis §6.1).

:class:`ThesisHyperModel` trains the thesis model of one Table 6.1 point on ``val_f1``, the stress class's
F1 (macro F1 on K > 2 classes). With ``cached_states`` a trial trains the readout-only model on states
harvested once per reservoir point (the same loss, batches and readout bit for bit as the whole model).
"""

from __future__ import annotations

import collections
from collections.abc import Callable

import keras_tuner as kt
import numpy as np
import tensorflow as tf

from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.sequences import ClientSequences
from tff_esn.federated.clients import client_states, seeded_fit_data, targets
from tff_esn.federated.configs import loss_labels, resolve_class_weight
from tff_esn.federated.model import ThesisModelConfig, build_thesis_model, thesis_loss
from tff_esn.common.validation import is_count

STATE_KEYS = ("window", "features", "units", "leaky", "spectral_radius")
"""The hyperparameters a trial's reservoir states depend on (with the hypermodel's seed)."""

ThesisData = Callable[[int], tuple[ClientSequences, ClientSequences, tuple[str, ...]]]
"""``window (samples at 64 Hz) → (train, validation, feature names)`` of the thesis pipeline."""


@tf.keras.utils.register_keras_serializable(package="tuning")
class BinaryF1(tf.keras.metrics.F1Score):
    """F1 of the positive class of a sigmoid output of any shape (per sequence or per step).

    ``tf.keras.metrics.F1Score`` with one column and ``average="micro"`` is exactly the
    binary F1; this metric flattens labels and probabilities to one column first, so
    per-step outputs (batch, time, 1) are scored over every step.
    """

    def __init__(self, threshold: float = 0.5, name: str = "f1", dtype=None, average: str = "micro"):
        if average != "micro":
            raise ValueError(f"BinaryF1: average must be 'micro' (one column: the binary F1), got {average!r}.")
        super().__init__(average="micro", threshold=threshold, name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = tf.reshape(tf.cast(y_true, self.dtype), [-1, 1])
        y_pred = tf.reshape(tf.cast(y_pred, self.dtype), [-1, 1])
        if sample_weight is not None:
            sample_weight = tf.reshape(sample_weight, [-1])
        return super().update_state(y_true, y_pred, sample_weight)


@tf.keras.utils.register_keras_serializable(package="tuning")
class MacroF1(tf.keras.metrics.F1Score):
    """Macro F1 over K classes of softmax outputs of any shape (per sequence or per step):
    ``tf.keras.metrics.F1Score(average="macro")`` on one-hot labels and probabilities
    flattened to K columns, the prediction being the most probable class."""

    def __init__(self, name: str = "f1", dtype=None, average: str = "macro", threshold=None):
        if average != "macro" or threshold is not None:
            raise ValueError("MacroF1: the macro F1 of the most probable class (average 'macro', no threshold).")
        super().__init__(average="macro", name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        k = y_pred.shape[-1]
        y_true = tf.reshape(tf.cast(y_true, self.dtype), [-1, k])
        y_pred = tf.reshape(tf.cast(y_pred, self.dtype), [-1, k])
        if sample_weight is not None:
            sample_weight = tf.reshape(sample_weight, [-1])
        return super().update_state(y_true, y_pred, sample_weight)


def compile_for_search(model: tf.keras.Model, config: ThesisModelConfig) -> tf.keras.Model:
    """Compiles like :func:`tff_esn.federated.model.compile_thesis_model`, adding :class:`BinaryF1`
    (two classes) or :class:`MacroF1` as ``f1``."""
    binary = config.n_classes == 2
    model.compile(optimizer=tf.keras.optimizers.Adam(config.learning_rate), loss=thesis_loss(config),
                  metrics=[BinaryF1() if binary else MacroF1(),
                           tf.keras.metrics.BinaryAccuracy(name="accuracy") if binary
                           else tf.keras.metrics.CategoricalAccuracy(name="accuracy"),
                           tf.keras.metrics.AUC(name="auc")])
    return model


def _nbytes(tensor: tf.Tensor) -> int:
    """Bytes a tensor's values hold."""
    return tensor.shape.num_elements() * tensor.dtype.size


class ThesisHyperModel(kt.HyperModel):
    """Thesis Table 6.1 hypermodel (see the module docstring).

    Args:
        data: ``window → (train, validation, feature names)``; called once per trial with
            the trial's window (cache it: windows repeat).
        seed: seed of every trial's reservoir, readout initialisation and epoch orders
            (:func:`tff_esn.federated.clients.seeded_fit_data`); no global RNG is read or set.
        class_weight: loss weight per class, or ``"balanced"`` (from each trial's training labels).
        n_classes: K, the classes of the data (labels in [0, K)); more than two train a
            softmax readout.
        cached_states: train the readout on harvested states (``False``: the whole model on
            the inputs, the reservoir in the graph).
        cache_bytes: bound of the kept states (training and validation, float32); the least
            recently used reservoir point is dropped first, the newest is always kept.
    """

    def __init__(self, data: ThesisData, *, seed: int = 0, class_weight: tuple[float, ...] | str = (12.0, 88.0),
                 n_classes: int = 2, cached_states: bool = True, cache_bytes: int = 2**30):
        super().__init__(name="thesis")
        if not is_count(cache_bytes, 0):
            raise ValueError(f"ThesisHyperModel: cache_bytes must be an integer ≥ 0, got {cache_bytes!r}.")
        self.data = data
        self.seed = seed
        self.class_weight = class_weight
        self.n_classes = n_classes
        self.cached_states = cached_states
        self.cache_bytes = cache_bytes
        self.harvests = 0
        self._models: dict[tuple, tuple[tf.keras.Model, list[np.ndarray]]] = {}
        self._states: collections.OrderedDict[tuple, tuple[tf.Tensor, tf.Tensor]] = collections.OrderedDict()

    def model_config(self, hp: kt.HyperParameters) -> ThesisModelConfig:
        """The thesis model configuration of one point of the space."""
        reservoir = ReservoirConfig(units=hp.get("units"), spectral_radius=hp.get("spectral_radius"),
                                    leaky=hp.get("leaky"), seed=self.seed)
        train = self.data(hp.get("window"))[0]
        config = ThesisModelConfig(reservoir=reservoir, learning_rate=hp.get("learning_rate"),
                                   batch_size=hp.get("batch_size"), epochs=hp.get("epochs"),
                                   class_weight=self.class_weight, state_mode="all" if train.per_step else "last")
        return config.replace(class_weight=resolve_class_weight(self.class_weight, loss_labels([train], config),
                                                                self.n_classes))

    def _columns(self, hp: kt.HyperParameters, names: tuple[str, ...]) -> list[int]:
        wanted = hp.get("features").split(",")
        missing = [f for f in wanted if f not in names]
        if missing:
            raise ValueError(f"ThesisHyperModel: features {missing} not in the data's features {list(names)}.")
        return [names.index(f) for f in wanted]

    def build(self, hp: kt.HyperParameters) -> tf.keras.Model:
        """The compiled model a trial trains: the readout alone (cached states) or the whole model."""
        config = self.model_config(hp)
        if not self.cached_states:
            return compile_for_search(build_thesis_model(len(hp.get("features").split(",")), config), config)
        return self._readout_model(config)

    def _readout_model(self, config: ThesisModelConfig) -> tf.keras.Model:
        """The compiled readout-only model of ``config``, built once per shape and loss and reset
        to what a fresh build holds (initial weights, zero Adam state, the trial's learning rate),
        so its traced ``train_function`` and ``test_function`` serve every trial of that shape."""
        key = (config.reservoir.units, config.reservoir.seed, config.n_outputs, config.per_step,
               tuple(config.class_weight))
        if key not in self._models:
            model = compile_for_search(build_thesis_model(config.reservoir.units, config, readout_only=True), config)
            self._models[key] = (model, model.get_weights())
        model, initial = self._models[key]
        model.set_weights(initial)
        for variable in model.optimizer.variables:
            variable.assign(tf.zeros_like(variable))
        model.optimizer.learning_rate = config.learning_rate
        return model

    def full_model(self, hp: kt.HyperParameters, trained: tf.keras.Model) -> tf.keras.Model:
        """The whole thesis model (reservoir + readout, on the inputs) with ``trained``'s readout."""
        config = self.model_config(hp)
        model = compile_for_search(build_thesis_model(len(hp.get("features").split(",")), config), config)
        model.get_layer("readout").set_weights(trained.get_layer("readout").get_weights())
        return model

    def states(self, hp: kt.HyperParameters) -> tuple[tf.Tensor, tf.Tensor]:
        """Training and validation reservoir states of ``hp``'s point, harvested once and kept as
        tensors (a trial's datasets slice them without a copy)."""
        key = tuple(hp.get(k) for k in STATE_KEYS)
        if key in self._states:
            self._states.move_to_end(key)
            return self._states[key]
        train, val, names = self.data(hp.get("window"))
        cols = self._columns(hp, names)
        config = self.model_config(hp)
        pair = tuple(tf.constant(client_states(ClientSequences(c.x[..., cols], c.y, c.lengths), config.reservoir,
                                               config)) for c in (train, val))
        self.harvests += 1
        self._states[key] = pair
        while len(self._states) > 1 and sum(map(_nbytes, sum(self._states.values(), ()))) > self.cache_bytes:
            self._states.popitem(last=False)
        return pair

    def fit(self, hp: kt.HyperParameters, model: tf.keras.Model, *args, **kwargs):
        """Trains on the training clients, validates on the validation clients (``val_f1``)."""
        train, val, names = self.data(hp.get("window"))
        config = self.model_config(hp)
        if self.cached_states:
            x_train, x_val = self.states(hp)
        else:
            cols = self._columns(hp, names)
            x_train, x_val = train.x[..., cols], val.x[..., cols]
        batches, steps = seeded_fit_data(x_train, targets(train, config), batch_size=config.batch_size,
                                         epochs=config.epochs, seed=self.seed)
        return model.fit(batches, epochs=config.epochs, steps_per_epoch=steps,
                         validation_data=(x_val, targets(val, config)), **kwargs)
