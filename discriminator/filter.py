"""The discriminator as the client filter of the federated processes (thesis Alg. 3–4).

:class:`DiscriminatorFilter` maps a client's readout delta to ``P(real) > threshold``; a rejected
client contributes no update. The Keras layers become TensorFlow ops on constants (no variables inside
the client computation). :func:`load_filter` is the ``tff_esn.client_filters`` entry point.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from discriminator.model import Discriminator, DiscriminatorFileError, load_discriminator
from tff_esn.common.validation import is_finite

Op = Callable[[tf.Tensor], tf.Tensor]


def _layer_op(layer: tf.keras.layers.Layer) -> Op | None:
    """The inference computation of one layer on constants (``None`` for identity layers)."""
    if isinstance(layer, (tf.keras.layers.Dropout, tf.keras.layers.InputLayer)):
        return None
    if isinstance(layer, tf.keras.layers.Normalization):
        if layer.invert:
            raise DiscriminatorFileError(f"discriminator layer {layer.name!r}: an inverting Normalization is not "
                                         "supported.")
        mean = np.asarray(layer.mean, np.float32).reshape(-1)
        scale = np.maximum(np.sqrt(np.asarray(layer.variance, np.float32).reshape(-1)), tf.keras.backend.epsilon())
        return lambda x: (x - mean) / scale
    if isinstance(layer, tf.keras.layers.Dense):
        kernel, bias = (np.asarray(w, np.float32) for w in (layer.kernel, layer.bias))
        activation = layer.activation
        return lambda x: activation(tf.matmul(x, kernel) + bias)
    raise DiscriminatorFileError(f"discriminator layer {layer.name!r} of type {type(layer).__name__} is not supported "
                                 "by the client filter (supported: Normalization, Dense, Dropout).")


class DiscriminatorFilter:
    """Accepts a client when the discriminator finds its readout delta real (thesis Alg. 3–4).

    Args:
        discriminator: a :class:`~discriminator.model.Discriminator` (or its Keras model).
        threshold: a client is accepted when P(real) > threshold, in [0, 1] (default 0.5;
            1.0 rejects every client).
    """

    def __init__(self, discriminator: Discriminator | tf.keras.Model, *, threshold: float = 0.5):
        model = discriminator.model if isinstance(discriminator, Discriminator) else discriminator
        if not isinstance(model, tf.keras.Model):
            raise TypeError(f"DiscriminatorFilter: expected a Discriminator or a Keras model, got "
                            f"{type(discriminator).__name__}.")
        if not (is_finite(threshold) and 0 <= threshold <= 1):
            raise ValueError(f"DiscriminatorFilter.threshold: expected a number in [0, 1], got {threshold!r}.")
        if len(model.input_shape) != 2 or model.output_shape != (None, 1):
            raise DiscriminatorFileError(f"DiscriminatorFilter: the model maps {model.input_shape} → "
                                         f"{model.output_shape}; expected (None, (U + 1)·C) → (None, 1).")
        self.n_inputs = int(model.input_shape[-1])
        self.threshold = float(threshold)
        self._ops = [op for op in map(_layer_op, model.layers) if op is not None]

    def probability(self, deltas: tf.Tensor | np.ndarray) -> tf.Tensor:
        """P(real) of (n, (U + 1)·C) deltas (kernel, then bias), shape (n,)."""
        x = tf.convert_to_tensor(deltas, tf.float32)
        if x.shape.rank != 2 or x.shape[-1] != self.n_inputs:
            raise ValueError(f"DiscriminatorFilter.probability: expected deltas of shape (n, {self.n_inputs}), "
                             f"got {tuple(x.shape)}.")
        for op in self._ops:
            x = op(x)
        return tf.reshape(x, [-1])

    def __call__(self, kernel_delta: tf.Tensor, bias_delta: tf.Tensor) -> tf.Tensor:
        """``valid`` (scalar bool) for one client's readout delta ``(kernel (U, C), bias (C,))``."""
        kernel_delta = tf.convert_to_tensor(kernel_delta, tf.float32)
        bias_delta = tf.convert_to_tensor(bias_delta, tf.float32)
        size = kernel_delta.shape.num_elements(), bias_delta.shape.num_elements()
        if None in size or sum(size) != self.n_inputs:
            raise ValueError(
                f"DiscriminatorFilter: the discriminator takes deltas of {self.n_inputs} values (kernel and bias), "
                f"but the client's readout has kernel {tuple(kernel_delta.shape)} and bias {tuple(bias_delta.shape)} — train a "
                "discriminator for this reservoir size and number of classes.")
        delta = tf.concat([tf.reshape(kernel_delta, [-1]), tf.reshape(bias_delta, [-1])], axis=0)
        return self.probability(delta[None, :])[0] > self.threshold


def load_filter(path: str | os.PathLike, *, threshold: float = 0.5, units: int | None = None,
                outputs: int = 1) -> DiscriminatorFilter:
    """The client filter of the discriminator saved in ``path`` (``tff_esn.client_filters`` entry point).

    Args:
        path: a folder written by ``tff-esn discriminator train`` / :func:`save_discriminator`.
        threshold: accept when P(real) > threshold.
        units: the federated model's reservoir units; a discriminator trained for another
            readout size is rejected here, before any federated computation is built.
        outputs: the readout's units C (1 for two classes, else K).
    """
    disc = load_discriminator(path, n_inputs=None if units is None else (units + 1) * outputs)
    return DiscriminatorFilter(disc, threshold=threshold)
