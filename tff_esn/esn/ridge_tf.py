"""The ridge statistics of a block of reservoir states in TensorFlow (IncFed eqs. 6–7): the
TF twin of :func:`tff_esn.esn.ridge.ridge_products`."""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf


def ridge_products(states: tf.Tensor, targets: tf.Tensor, *, readout_bias: bool, valid: tf.Tensor | None = None,
                   clip: Callable[[tf.Tensor], tf.Tensor] | None = None) -> tuple[tf.Tensor, tf.Tensor]:
    """``(Yᵀ S, Sᵀ S)`` of a block of states (IncFed eqs. 6–7) in float64, invalid rows dropped, rows ``clip``-ped."""
    s = states
    if readout_bias:
        s = tf.concat([s, tf.ones_like(s[:, :1])], axis=1)
    if valid is not None:
        s *= tf.cast(valid, s.dtype)[:, None]
    if clip is not None:
        s = clip(s)
    y = tf.cast(targets, s.dtype)
    return (tf.cast(tf.matmul(y, s, transpose_a=True), tf.float64),
            tf.cast(tf.matmul(s, s, transpose_a=True), tf.float64))
