"""The ridge statistics of a block of reservoir states in TensorFlow (IncFed eqs. 6–7): the
TF twin of :func:`tff_esn.esn.ridge.ridge_products`."""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf


def ridge_products(states: tf.Tensor, targets: tf.Tensor, *, readout_bias: bool, valid: tf.Tensor | None = None,
                   clip: Callable[[tf.Tensor], tf.Tensor] | None = None) -> tuple[tf.Tensor, tf.Tensor]:
    """Ridge statistics ``(Yᵀ S, Sᵀ S)`` of a block of states (IncFed eqs. 6–7), float64.

    Every TensorFlow harvest (:func:`tff_esn.esn.states_tf.accumulate_stats`, the IncFed
    client inside TFF) sums its blocks through it.

    Args:
        states: (m, units) rows of states S; the products are taken in their dtype
            (float32 for the chunked harvest, float64 for the exact TFF client) and returned
            as float64, so callers accumulate in float64.
        targets: (m, n_out) the rows' targets Y.
        readout_bias: append the constant-1 readout-bias input to every row.
        valid: ``None`` or (m,) bool; invalid rows (padding past a sequence's end)
            contribute nothing, bias input included.
        clip: ``None`` or a function applied to the rows (bias input included) after the
            mask and before the products: the caller's per-row norm clip for differential
            privacy.
    """
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
