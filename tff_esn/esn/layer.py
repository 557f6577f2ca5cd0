"""The leaky-integrator reservoir as a Keras layer (IncFed eq. 1; thesis eq. 2.1; FedIP eq. 1): W_in, Ŵ, b
and the optional IP gain g; with g = 1 it is ``tfa.layers.ESN``'s cell (same weights, same states)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from tff_esn.esn.draws import activations, bias_weights, input_weights, leak_rates, recurrent_weights
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.states_tf import run_reservoir, run_reservoir_compiled
from tff_esn.esn.weights import ReservoirWeights, StateSpec


@tf.keras.utils.register_keras_serializable(package="tff_esn")
class ReservoirInitializer(tf.keras.initializers.Initializer):
    """Draws one ``part`` of a reservoir from its config (seeded: a model clones and reloads identically)."""

    def __init__(self, part: str, config: dict[str, Any]):
        self.part = part
        self.config = dict(config)

    def __call__(self, shape, dtype=None, **kwargs):
        cfg = ReservoirConfig.from_dict(self.config)
        if cfg.layers > 1:  # a deep ESN's block matrices
            drawn = ReservoirWeights.from_config(cfg, int(shape[0]) if self.part == "kernel" else 1)
            value = {"kernel": drawn.kernel, "recurrent_kernel": drawn.recurrent, "bias": drawn.bias}[self.part]
        elif self.part == "kernel":
            value = input_weights(cfg, int(shape[0]))
        elif self.part == "recurrent_kernel":
            value = recurrent_weights(cfg)
        else:
            value = bias_weights(cfg)
        return tf.constant(value, dtype=dtype or tf.float32)

    def get_config(self) -> dict[str, Any]:
        return {"part": self.part, "config": self.config}


@tf.keras.utils.register_keras_serializable(package="tff_esn")
class Reservoir(tf.keras.layers.Layer):
    """Fixed leaky-integrator reservoir (IncFed eq. 1; thesis eq. 2.1); ``use_gain``: IP gain g (FedIP eq. 1)."""

    def __init__(
        self,
        config: ReservoirConfig | dict[str, Any] | None = None,
        *,
        state_mode: str = "last",
        return_sequences: bool = False,
        washout: int = 0,
        use_gain: bool = False,
        **kwargs: Any,
    ):
        hparam_names = set(ReservoirConfig.__dataclass_fields__)
        hparams = {k: kwargs.pop(k) for k in list(kwargs) if k in hparam_names}
        super().__init__(**kwargs)
        if config is None:
            config = ReservoirConfig(**hparams)
        elif hparams:
            raise ValueError(f"Reservoir: pass either config or hyperparameters, not both (got {sorted(hparams)}).")
        elif isinstance(config, dict):
            config = ReservoirConfig.from_dict(config)
        elif not isinstance(config, ReservoirConfig):
            raise TypeError(f"Reservoir: config must be a ReservoirConfig, got {type(config).__name__}.")
        self.spec = StateSpec("all" if return_sequences else state_mode, washout, readout_bias=False)
        self.state_mode, self.washout = self.spec.state_mode, washout
        self.reservoir_config = config
        self.use_gain = bool(use_gain)
        self.supports_masking = False

    @property
    def units(self) -> int:
        """Every layer's units together (the state's width)."""
        return self.reservoir_config.total_units

    @property
    def leaky(self) -> float | tuple[float, ...]:
        """The leaking rate, or one per unit (:func:`~tff_esn.esn.draws.leak_rates`)."""
        return leak_rates(self.reservoir_config)

    @property
    def activation(self) -> str | tuple[str, ...]:
        """The nonlinearity f, or one per unit (:func:`~tff_esn.esn.draws.activations`)."""
        return activations(self.reservoir_config)

    def build(self, input_shape) -> None:
        features = tf.TensorShape(input_shape)[-1]
        if features is None:
            raise ValueError(f"Reservoir: the feature axis of the input must be known, got shape {input_shape}.")
        cfg = self.reservoir_config.to_dict()
        self.kernel = self.add_weight(
            name="kernel", shape=(int(features), self.units),
            initializer=ReservoirInitializer("kernel", cfg), trainable=False)
        self.recurrent_kernel = self.add_weight(
            name="recurrent_kernel", shape=(self.units, self.units),
            initializer=ReservoirInitializer("recurrent_kernel", cfg), trainable=False)
        self.bias = self.add_weight(
            name="bias", shape=(self.units,), initializer=ReservoirInitializer("bias", cfg), trainable=False)
        self.gain = (
            self.add_weight(name="gain", shape=(self.units,), initializer="ones", trainable=False)
            if self.use_gain else None
        )
        super().build(input_shape)

    def call(self, inputs: tf.Tensor) -> tf.Tensor:
        inputs = tf.convert_to_tensor(inputs, tf.float32)
        if inputs.shape.rank is not None and inputs.shape.rank != 3:
            raise ValueError(f"Reservoir: inputs must be 3-D (batch, time, features), got shape {inputs.shape}; "
                             "add a batch axis with x[None] or a feature axis with x[..., None].")
        inputs = tf.debugging.assert_all_finite(inputs, "Reservoir: inputs contain NaN or inf.")
        if inputs.shape[1] is not None:
            self.spec.check(inputs.shape[1], per_step=False)
        if tf.executing_eagerly():
            # Values, not variables: a relaxed trace would otherwise keep another layer's variables.
            weights = [None if w is None else tf.convert_to_tensor(w) for w in self._weight_list()]
            return run_reservoir_compiled(inputs, *weights, self.leaky, self.state_mode, self.washout, None,
                                          self.reservoir_config.layer_sizes, self.reservoir_config.readout_from,
                                          self.activation)
        return run_reservoir(inputs, *self._weight_list(), self.leaky, self.state_mode, self.washout, None,
                             self.reservoir_config.layer_sizes, self.reservoir_config.readout_from, self.activation)

    def _weight_list(self) -> list:
        return [self.kernel, self.recurrent_kernel, self.bias, self.gain]

    def compute_output_shape(self, input_shape):
        shape = tf.TensorShape(input_shape)
        if self.state_mode == "all":
            steps = None if shape[1] is None else shape[1] - self.washout
            return tf.TensorShape([shape[0], steps, self.reservoir_config.readout_units])
        return tf.TensorShape([shape[0], self.reservoir_config.readout_units])

    def get_config(self) -> dict[str, Any]:
        base = super().get_config()
        base.update(self.reservoir_config.to_dict())
        base.update({"state_mode": self.state_mode, "washout": self.washout, "use_gain": self.use_gain})
        return base

