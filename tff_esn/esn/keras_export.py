"""A :class:`~tff_esn.esn.model.Model` as a ``tf.keras.Model``: input standardisation, the
:class:`~tff_esn.esn.layer.Reservoir` layer with the model's exact weights (IP gains with ``use_gain``), and its
readout on the states, or on the inputs beside them (``[u, x]``) when the model's readout sees them (ridge
``[s, 1] Wᵀ``, IncFed eq. 2, in float64; or the dense readout with its state standardisation); an
ensemble's members averaged with their size weights (IncFed eq. 4). The custom layers are Keras-serializable, so the
model ``.keras``-saves and :func:`load_keras` reloads it in another process."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import tensorflow as tf

from tff_esn.esn.draws import activations, leak_rates
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.layer import Reservoir
from tff_esn.esn.states_tf import beside_inputs

if TYPE_CHECKING:
    from tff_esn.esn.model import Member, Model


@tf.keras.utils.register_keras_serializable(package="tff_esn")
class Standardize(tf.keras.layers.Layer):
    """``(x − μ) / σ`` over the last axis, float32 (:class:`~tff_esn.esn.standardization.Standardization`)."""

    def __init__(self, features: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.features = int(features)
        self.mean = self.add_weight(name="mean", shape=(self.features,), initializer="zeros", trainable=False)
        self.scale = self.add_weight(name="scale", shape=(self.features,), initializer="ones", trainable=False)

    def call(self, inputs: tf.Tensor) -> tf.Tensor:
        return (tf.cast(inputs, tf.float32) - self.mean) / self.scale

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "features": self.features}


@tf.keras.utils.register_keras_serializable(package="tff_esn")
class BesideInputs(tf.keras.layers.Layer):
    """``[u, x]``: the (standardised) inputs read as the states are (the last step, the mean after ``washout`` or
    every step after it) before the states on the last axis (:class:`~tff_esn.esn.weights.StateSpec` ``inputs``)."""

    def __init__(self, state_mode: str, washout: int = 0, **kwargs: Any):
        super().__init__(**kwargs)
        self.state_mode, self.washout = state_mode, int(washout)

    def call(self, inputs: list[tf.Tensor]) -> tf.Tensor:
        sequences, states = inputs
        return beside_inputs(tf.cast(sequences, tf.float32), states, self.state_mode, self.washout, None)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "state_mode": self.state_mode, "washout": self.washout}


@tf.keras.utils.register_keras_serializable(package="tff_esn")
class RidgeReadout(tf.keras.layers.Layer):
    """The ridge readout ``[s, 1] Wᵀ`` (IncFed eq. 2) on the last axis, float64: ``weights`` (N_Y, N_features)."""

    def __init__(self, outputs: int, features: int, bias: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.outputs, self.features, self.use_bias = int(outputs), int(features), bool(bias)
        self.readout = self.add_weight(name="readout", shape=(self.outputs, self.features), dtype=tf.float64,
                                       initializer="zeros", trainable=False)

    def call(self, states: tf.Tensor) -> tf.Tensor:
        s = tf.cast(states, tf.float64)
        units = self.features - 1 if self.use_bias else self.features
        out = tf.tensordot(s, tf.transpose(self.readout[:, :units]), axes=1)
        return out + self.readout[:, units] if self.use_bias else out

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "outputs": self.outputs, "features": self.features, "bias": self.use_bias}


@tf.keras.utils.register_keras_serializable(package="tff_esn")
class WeightedMean(tf.keras.layers.Layer):
    """``Σ_c (n_c / n) v_c`` of the members' outputs, float64 (IncFed eq. 4)."""

    def __init__(self, sizes: list[float], **kwargs: Any):
        super().__init__(**kwargs)
        self.sizes = [float(s) for s in sizes]

    def call(self, outputs: list[tf.Tensor]) -> tf.Tensor:
        total = sum(self.sizes)
        return tf.add_n([tf.cast(v, tf.float64) * (s / total) for v, s in zip(outputs, self.sizes)])

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "sizes": self.sizes}


def reservoir_config(member: "Member") -> ReservoirConfig:
    """The configuration a :class:`~tff_esn.esn.layer.Reservoir` layer of ``member`` is built from: its own, or (a
    model built from arrays) one of its units, leaking rates and nonlinearity; ``ValueError`` when it does not give
    the member's leaking rates, nonlinearities and layers."""
    weights = member.reservoir
    config = member.config
    if config is None and not weights.layers and isinstance(weights.activation, str):
        rates = np.atleast_1d(np.asarray(weights.leaky, np.float64))
        config = ReservoirConfig(units=weights.units, leaky=float(rates.max()), activation=weights.activation,
                                 leak_values=tuple(rates.tolist()) if rates.size > 1 else ())
    same = (config is not None and config.total_units == weights.units
            and np.array_equal(np.asarray(leak_rates(config), np.float32), np.asarray(weights.leaky, np.float32))
            and activations(config) == weights.activation
            and (config.layer_sizes if config.layers > 1 else ()) == weights.layers)
    if not same:
        raise ValueError("to_keras: the model's reservoir has no configuration that gives its leaking rates, "
                         "nonlinearities and layers; a Reservoir layer cannot hold it.")
    return config


def _member_outputs(model: "Model", member: "Member", inputs: tf.Tensor, index: int) -> tf.Tensor:
    spec, weights, readout = model.spec, member.reservoir, member.readout
    per_step = model.per_step and spec.state_mode == "all"
    mode = "all" if per_step else ("mean" if spec.state_mode == "all" else spec.state_mode)
    use_gain = bool(np.any(weights.gain != 1))
    layer = Reservoir(reservoir_config(member), state_mode=mode, washout=spec.washout, use_gain=use_gain,
                      name=f"reservoir_{index}")
    states = layer(inputs)
    layer.set_weights(weights.layer_weights() if use_gain else weights.layer_weights()[:3])
    if spec.raw_inputs:
        states = BesideInputs(mode, spec.washout, name=f"beside_inputs_{index}")([inputs, states])
    if readout.kind == "ridge":
        head = RidgeReadout(*readout.weights.shape, bias=spec.readout_bias, name=f"ridge_{index}")
        out = head(states)
        head.set_weights([readout.weights])
        return out
    if readout.standardization is not None:
        scaler = Standardize(spec.width(weights), name=f"state_standardize_{index}")
        states = scaler(states)
        scaler.set_weights([readout.standardization.mean, readout.standardization.scale])
    activation = "linear" if readout.activation == "identity" else readout.activation
    dense = tf.keras.layers.Dense(readout.weights.shape[1], activation=activation, name=f"dense_{index}")
    out = dense(states)
    dense.set_weights([readout.weights, readout.bias])
    return out


def to_keras(model: "Model") -> tf.keras.Model:
    """``model`` as a ``tf.keras.Model`` of (batch, T, F) sequences of equal length: its outputs are
    ``model.decision_function``'s (per step with ``per_step``: (batch, T − washout, ·)), to float32 precision."""
    inputs = tf.keras.Input(shape=(None, len(model.feature_names)), name="sequences")
    x = inputs
    if model.inputs is not None:
        scaler = Standardize(len(model.feature_names), name="input_standardize")
        x = scaler(x)
        scaler.set_weights([model.inputs.mean, model.inputs.scale])
    outputs = [_member_outputs(model, m, x, i) for i, m in enumerate(model.members)]
    out = outputs[0] if len(outputs) == 1 else WeightedMean([m.size for m in model.members], name="ensemble")(outputs)
    return tf.keras.Model(inputs, out, name=f"tff_esn_{model.provenance.get('algorithm', 'model')}".replace("-", "_"))


def load_keras(path: str) -> tf.keras.Model:
    """A model :func:`to_keras` made and Keras saved (``.keras``), its custom layers registered."""
    return tf.keras.models.load_model(path, compile=False)

