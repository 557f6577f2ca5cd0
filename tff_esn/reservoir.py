"""The leaky-integrator reservoir as a Keras layer with a fast batched harvest.

Equation (IncFed eq. 1; thesis eq. 2.1; FedIP eq. 1 with gain and bias)::

    x(0) = 0
    x(t) = (1 − a)·x(t−1) + a·tanh(g ⊙ (u(t) W_in + x(t−1) Ŵ) + b)

in Keras row-vector layout: ``kernel`` W_in is (features, units), ``recurrent_kernel`` Ŵ is
(units, units), ``bias`` b is (units,) and the optional intrinsic-plasticity ``gain`` g is
(units,), ones by default. With ``g = 1`` this is exactly ``tfa.layers.ESN``'s cell, so
``layer.set_weights([esn_kernel, esn_recurrent_kernel, esn_bias])`` reproduces its states.

The harvest is one ``tf.while_loop`` over time (``UNROLL`` steps per iteration) batched over
sequences, with the input projection done once as a single matrix product; no per-sample
Python.

Sequences of unequal length run in one padded batch with their ``lengths`` (sequence i is
``inputs[i, :lengths[i]]``): a sequence's state is frozen after its last step, ``"mean"``
averages its own steps after the washout, ``"all"`` zeroes the steps past its end and the
ridge statistics count only its valid steps — the same numbers as harvesting each
sequence alone (tested against ``tfa.layers.ESN`` per sequence).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import tensorflow as tf

from tff_esn.config import STATE_MODES, ReservoirConfig
from tff_esn.draw import bias_weights, input_weights, recurrent_weights


@tf.keras.utils.register_keras_serializable(package="tff_esn")
class ReservoirInitializer(tf.keras.initializers.Initializer):
    """Initializer drawing one part of a reservoir from a :class:`ReservoirConfig`.

    ``part`` is ``"kernel"``, ``"recurrent_kernel"`` or ``"bias"``; the draw is a pure
    function of the config (seeded), so a model clones and reloads identically.
    """

    def __init__(self, part: str, config: dict[str, Any]):
        if part not in ("kernel", "recurrent_kernel", "bias"):
            raise ValueError(f"ReservoirInitializer: unknown part {part!r}.")
        self.part = part
        self.config = dict(config)

    def __call__(self, shape, dtype=None, **kwargs):
        cfg = ReservoirConfig.from_dict(self.config)
        if self.part == "kernel":
            value = input_weights(cfg, int(shape[0]))
        elif self.part == "recurrent_kernel":
            value = recurrent_weights(cfg)
        else:
            value = bias_weights(cfg)
        if tuple(value.shape) != tuple(shape):
            raise ValueError(f"ReservoirInitializer({self.part}): config gives {value.shape}, layer asks {tuple(shape)}.")
        return tf.constant(value, dtype=dtype or tf.float32)

    def get_config(self) -> dict[str, Any]:
        return {"part": self.part, "config": self.config}


def _check_inputs(inputs: tf.Tensor) -> tf.Tensor:
    if inputs.shape.rank is not None and inputs.shape.rank != 3:
        raise ValueError(
            f"Reservoir: inputs must be 3-D (batch, time, features), got shape {inputs.shape}; "
            "add a batch axis with x[None] or a feature axis with x[..., None]."
        )
    return tf.debugging.assert_all_finite(inputs, "Reservoir: inputs contain NaN or inf.")


def project_inputs(inputs: tf.Tensor, kernel: tf.Tensor, bias: tf.Tensor, gain: tf.Tensor | None) -> tf.Tensor:
    """Time-major input projection u(t) W_in for all steps in one product (bias folded in when g = 1)."""
    projected = tf.einsum("btf,fu->tbu", inputs, kernel)
    return projected + bias if gain is None else projected


def reservoir_step(x: tf.Tensor, projected: tf.Tensor, recurrent: tf.Tensor, bias: tf.Tensor,
                   gain: tf.Tensor | None, leaky: float) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """One update of the module's equation on a :func:`project_inputs` step.

    Returns ``(net, activation, state)``: the net input ``u(t) W_in + x(t−1) Ŵ`` (FedIP's
    x_net, before gain and bias; with ``gain`` None the bias is already folded in), the
    activation ``x̃ = tanh(g ⊙ net + b)`` and the new state ``(1 − a)·x(t−1) + a·x̃``.
    Intrinsic plasticity (:mod:`tff_esn.closed_form.fedip`) updates g and b from ``net``
    and ``activation``.
    """
    net = projected + tf.matmul(x, recurrent)
    new = tf.tanh(net) if gain is None else tf.tanh(gain * net + bias)
    return net, new, (new if leaky == 1.0 else x + leaky * (new - x))


def _step_fn(recurrent: tf.Tensor, bias: tf.Tensor, gain: tf.Tensor | None, leaky: float):
    """The new state of :func:`reservoir_step` with fixed weights (bias folded in when ``gain`` is None)."""
    def step(x: tf.Tensor, projected: tf.Tensor) -> tf.Tensor:
        return reservoir_step(x, projected, recurrent, bias, gain, leaky)[2]

    return step


UNROLL = 8
"""Time steps per ``tf.while_loop`` iteration: for small batches the per-iteration overhead,
not the arithmetic, sets the harvest time (1.2–1.5× on 15 × 6000 × 1 → 200 units
measured on a shared machine; no measurable change on 1500 × 350 × 8 → 500)."""


def _time_loop(start, stop, one, state: tuple) -> tuple:
    """``state = one(t, *state)`` for t in [start, stop), ``UNROLL`` steps per loop iteration.

    The same operations in the same order as a one-step loop (bit-identical states); the
    steps that do not fill a last unrolled block run one at a time.
    """
    def block(t, *s):
        for i in range(UNROLL):
            s = one(t + i, *s)
        return (t + UNROLL, *s)

    full = stop - (stop - start) % UNROLL
    t, *s = tf.while_loop(lambda t, *s: t < full, block, (start, *state))
    _, *s = tf.while_loop(lambda t, *s: t < stop, lambda t, *s: (t + 1, *one(t, *s)), (t, *s))
    return tuple(s)


def _valid(t: tf.Tensor, lengths: tf.Tensor) -> tf.Tensor:
    """(batch, 1) bool: whether step ``t`` lies inside each sequence."""
    return (t < lengths)[:, None]


def run_reservoir(
    inputs: tf.Tensor,
    kernel: tf.Tensor,
    recurrent: tf.Tensor,
    bias: tf.Tensor,
    gain: tf.Tensor | None,
    leaky: float,
    state_mode: str = "last",
    washout: int = 0,
    lengths: tf.Tensor | None = None,
) -> tf.Tensor:
    """States of the reservoir for a batch of sequences.

    Args:
        inputs: (batch, time, features).
        state_mode: ``"last"`` → (batch, units) state at the last step; ``"mean"`` →
            (batch, units) mean of the states after ``washout``; ``"all"`` →
            (batch, time − washout, units).
        washout: number of initial steps dropped by ``"mean"`` and ``"all"``.
        lengths: ``None`` (every sequence has ``time`` steps) or (batch,) int32 valid
            steps of each right-padded sequence, each > ``washout`` for ``"mean"``: the
            last state is the one at a sequence's own end, the mean runs over its own
            steps, and ``"all"`` holds zeros past its end.
    """
    inputs = tf.convert_to_tensor(inputs, tf.float32)
    projected = project_inputs(inputs, kernel, bias, gain)
    steps = tf.shape(projected)[0]
    x0 = tf.zeros([tf.shape(projected)[1], tf.shape(kernel)[1]], tf.float32)
    update = _step_fn(recurrent, bias, gain, leaky)
    if lengths is None:
        def step(x, t):
            return update(x, tf.gather(projected, t))
    else:
        lengths = tf.cast(lengths, tf.int32)

        def step(x, t):  # frozen after the sequence's end
            return tf.where(_valid(t, lengths), update(x, tf.gather(projected, t)), x)

    if state_mode == "last":
        return _time_loop(0, steps, lambda t, x: (step(x, t),), (x0,))[0]
    if state_mode == "mean":
        def body(t, x, acc):
            x = step(x, t)
            return x, acc + (x if lengths is None else tf.cast(_valid(t, lengths), tf.float32) * x)

        if washout:
            x0 = _time_loop(0, washout, lambda t, x: (step(x, t),), (x0,))[0]
        _, acc = _time_loop(washout, steps, body, (x0, tf.zeros_like(x0)))
        count = steps - washout if lengths is None else (lengths - washout)[:, None]
        return acc / tf.cast(count, tf.float32)
    states = tf.TensorArray(tf.float32, size=steps, element_shape=x0.shape)

    def body_all(t, x, ta):
        x = step(x, t)
        return x, ta.write(t, x if lengths is None else tf.where(_valid(t, lengths), x, tf.zeros_like(x)))

    _, states = _time_loop(0, steps, body_all, (x0, states))
    return tf.transpose(states.stack()[washout:], [1, 0, 2])


run_reservoir_compiled = tf.function(run_reservoir, reduce_retracing=True, autograph=False)
"""Compiled :func:`run_reservoir` for eager callers; pass weight *tensors*, never variables.

The loops are explicit ``tf.while_loop``s and every branch is on a Python value, so autograph
(≈0.5 s of AST rewriting per trace) is off."""


@functools.lru_cache(maxsize=64)
def _shapeless(leaky: float, state_mode: str, washout: int, with_gain: bool, masked: bool):
    """:func:`run_reservoir` traced once for these static arguments, every tensor of unknown shape."""
    specs = [tf.TensorSpec([None, None, None]), tf.TensorSpec([None, None]), tf.TensorSpec([None, None]),
             tf.TensorSpec([None])] + [tf.TensorSpec([None])] * with_gain + [tf.TensorSpec([None], tf.int32)] * masked

    def harvest(inputs, kernel, recurrent, bias, *rest):
        gain = rest[0] if with_gain else None
        return run_reservoir(inputs, kernel, recurrent, bias, gain, leaky, state_mode, washout,
                             rest[-1] if masked else None)

    return tf.function(harvest, input_signature=specs, autograph=False)


def run_reservoir_shapeless(inputs, kernel, recurrent, bias, gain, leaky: float, state_mode: str = "last",
                            washout: int = 0, lengths=None) -> tf.Tensor:
    """:func:`run_reservoir` for tensors, traced once per (leaky, mode, washout, gain, mask).

    Batches of any size and length (a client's sorted ragged batches, every client of a
    federation) share one trace; :data:`run_reservoir_compiled` traces the first shape
    exactly and then once more per axis that varies (no retracing per client).
    """
    fn = _shapeless(float(leaky), state_mode, int(washout), gain is not None, lengths is not None)
    tensors = [inputs, kernel, recurrent, bias] + ([gain] if gain is not None else [])
    return fn(*tensors, *([] if lengths is None else [tf.cast(lengths, tf.int32)]))


def state_stats(states: tf.Tensor, targets: tf.Tensor, *, readout_bias: bool, valid: tf.Tensor | None = None,
                clip: float | None = None) -> tuple[tf.Tensor, tf.Tensor]:
    """Ridge statistics ``(Yᵀ S, Sᵀ S)`` of a block of states (IncFed eqs. 6–7), float64.

    The one computation of the statistics: every reservoir harvest (:func:`accumulate_stats`,
    :func:`harvest_stats`, the IncFed client inside TFF) sums its blocks through it.

    Args:
        states: (m, units) rows of states S; the products are taken in their dtype
            (float32: a 3–5× faster Gram than float64, for the harvest; float64 for the
            exact TFF client) and returned as float64, so callers accumulate in float64.
        targets: (m, n_out) the rows' targets Y.
        readout_bias: append the constant-1 readout-bias input to every row.
        valid: ``None`` or (m,) bool; invalid rows (padding past a sequence's end)
            contribute nothing, bias input included.
        clip: ``None`` or a bound on each row's norm (bias input included), applied by
            :func:`tff_esn.privacy.dp_stats.clip_rows` (rows within it stay bit-identical).
    """
    s = states
    if readout_bias:
        s = tf.concat([s, tf.ones_like(s[:, :1])], axis=1)
    if valid is not None:
        s *= tf.cast(valid, s.dtype)[:, None]
    if clip is not None:
        from tff_esn.privacy.dp_stats import clip_rows

        s = clip_rows(s, clip)
    y = tf.cast(targets, s.dtype)
    return (tf.cast(tf.matmul(y, s, transpose_a=True), tf.float64),
            tf.cast(tf.matmul(s, s, transpose_a=True), tf.float64))


@tf.function(reduce_retracing=True, autograph=False)
def accumulate_stats(inputs, targets, lengths, kernel, recurrent, bias, gain, leaky, washout, chunk, add_bias,
                     per_step, clip=None, dtype=tf.float32):
    """``(Yᵀ S, Sᵀ S, n, Σ x)`` over every step after ``washout`` and before each sequence's length.

    ``targets`` are (batch, n_out) per sequence or (batch, time − washout, n_out) per step;
    ``n`` counts the states; the statistics are float64. States are never all materialised:
    each chunk of ``chunk`` steps × batch states is stacked once and reduced by
    :func:`state_stats` in ``dtype`` (steps past a sequence's end masked, rows clipped to
    ``clip``) into float64 accumulators — memory O(chunk · batch · units). ``Σ x`` is each
    sequence's float32 sum of its valid states (batch, units), summed step by step in the order
    of :func:`run_reservoir`'s ``"mean"`` mode, so ``Σ x / (length − washout)`` is that mode's
    mean state to float32 rounding (TF may fuse a step's operations differently in the two
    graphs): one pass gives a client's statistics and its mean states.
    """
    projected = project_inputs(inputs, kernel, bias, gain)
    steps = tf.shape(projected)[0]
    batch = tf.shape(projected)[1]
    units = tf.shape(kernel)[1]
    features = units + (1 if add_bias else 0)
    targets = tf.ensure_shape(targets, [None, None, None] if per_step else [None, None])
    n_out = tf.shape(targets)[-1]
    step = _step_fn(recurrent, bias, gain, leaky)
    x = tf.zeros([batch, units], tf.float32)
    x = _time_loop(0, washout, lambda t, x: (step(x, projected[t]),), (x,))[0]

    def chunk_body(start, x, sts, yts, total):
        stop = tf.minimum(start + chunk, steps)
        ta = tf.TensorArray(tf.float32, size=stop - start, element_shape=[None, None])

        def inner(t, x, ta, total):
            x = step(x, projected[t])
            return x, ta.write(t - start, x), total + tf.cast(_valid(t, lengths), tf.float32) * x

        x, ta, total = _time_loop(start, stop, inner, (x, ta, total))
        flat = tf.reshape(ta.stack(), [-1, units])  # (len · batch, units), time-major
        valid = tf.reshape(tf.range(start, stop)[:, None] < lengths[None, :], [-1])
        if per_step:
            y = tf.transpose(targets[:, start - washout:stop - washout], [1, 0, 2])
        else:
            y = tf.broadcast_to(targets[None], [stop - start, batch, n_out])
        a, b = state_stats(tf.cast(flat, dtype), tf.reshape(y, [-1, n_out]), readout_bias=add_bias, valid=valid,
                           clip=clip)
        return stop, x, sts + b, yts + a, total

    sts0 = tf.zeros([features, features], tf.float64)
    yts0 = tf.zeros([n_out, features], tf.float64)
    matrix = tf.TensorShape([None, None])
    _, _, sts, yts, total = tf.while_loop(
        lambda s, *_: s < steps, chunk_body, (washout, x, sts0, yts0, tf.zeros_like(x)),
        shape_invariants=(tf.TensorShape([]), matrix, matrix, matrix, matrix),
    )
    return yts, sts, tf.cast(tf.reduce_sum(lengths - washout), tf.float64), total


def _check_washout(steps: int | None, state_mode: str, washout: int) -> None:
    if state_mode != "last" and steps is not None and washout >= steps:
        raise ValueError(f"Reservoir: washout ({washout}) must be shorter than the sequences ({steps} steps).")


def _check_lengths(lengths, batch: int, steps: int, state_mode: str, washout: int) -> np.ndarray | None:
    """``lengths`` as (batch,) int32 in [1, steps], each longer than ``washout`` unless ``"last"``."""
    if lengths is None:
        return None
    lengths = np.asarray(lengths)
    if lengths.shape != (batch,) or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"lengths: expected ({batch},) integers, got {lengths.shape} {lengths.dtype}.")
    if batch and (lengths.min() < 1 or lengths.max() > steps):
        raise ValueError(f"lengths: must lie in [1, {steps}] (the padded time axis), got "
                         f"[{lengths.min()}, {lengths.max()}].")
    if batch:
        _check_washout(int(lengths.min()), state_mode, washout)
    return lengths.astype(np.int32)


STATS_CHUNK = 64
"""Default time steps per block of :func:`accumulate_stats`."""


def harvest_stats(inputs, targets, weights, leaky: float, state_mode: str = "last", washout: int = 0, *,
                  bias: bool = False, chunk: int = STATS_CHUNK, lengths=None, with_states: bool = False):
    """Ridge statistics (IncFed eqs. 6–7, ``tff_esn.ridge.RidgeStats``) of a reservoir's states.

    With ``with_states`` it returns ``(stats, states)`` from the same pass: the float32
    states a linear readout scores — ``"last"``/``"mean"``: (batch, units) as
    :func:`run_reservoir`; ``"all"`` with per-sequence targets: (batch, units) mean states
    (IncFed eq. 2 averaged over the steps); ``"all"`` with per-step targets:
    (batch, time − washout, units), every state (the statistics are then taken from them,
    in the same ``chunk`` blocks and order as without ``with_states``).

    Args:
        inputs: (batch, time, features) sequences.
        targets: for ``state_mode="all"`` (batch, n_out) — one target per sequence,
            repeated at each step — or (batch, time, n_out) per step; for ``"last"`` and
            ``"mean"`` (one state per sequence) (batch, n_out).
        weights: ``[kernel, recurrent_kernel, bias, gain]`` arrays or tensors in the
            layer's order (``gain`` may be ``None``).
        leaky, state_mode, washout: as :class:`Reservoir`.
        bias: add the constant readout-bias column to the states.
        chunk: for ``"all"``, steps per accumulation block — every state after
            ``washout`` is a sample, accumulated inside the time loop without
            materialising all states (memory O(chunk · batch · units)).
        lengths: ``None`` or (batch,) valid steps of right-padded sequences (each longer
            than ``washout`` unless ``"last"``; per-sequence targets only): each sequence
            contributes exactly the states it would alone.
    """
    from tff_esn.ridge import RidgeStats

    inputs = _check_inputs(tf.convert_to_tensor(inputs, tf.float32))
    targets = np.asarray(targets, np.float32)
    _check_washout(inputs.shape[1], state_mode, washout)
    tensors = [None if w is None else tf.convert_to_tensor(w, tf.float32) for w in weights]
    batch, steps = int(inputs.shape[0]), int(inputs.shape[1])
    lengths = _check_lengths(lengths, batch, steps, state_mode, washout)
    if lengths is not None and targets.ndim == 3:
        raise ValueError("harvest_stats: per-step targets need equal-length sequences (lengths=None).")
    expected = [(batch, None)] + ([(batch, steps, None)] if state_mode == "all" else [])
    if not any(targets.ndim == len(e) and targets.shape[:-1] == e[:-1] for e in expected):
        shapes = " or ".join(str(e).replace("None", "n_out") for e in expected)
        raise ValueError(f"harvest_stats: targets must be {shapes} for state_mode={state_mode!r}, got {targets.shape}.")
    if not np.all(np.isfinite(targets)):
        raise ValueError("harvest_stats: targets contain NaN or inf.")
    if state_mode != "all":
        if batch == 0:
            raise ValueError("harvest_stats: no sequences; a client needs at least one state.")
        states = run_reservoir_shapeless(inputs, *tensors, leaky, state_mode, washout,
                                         None if lengths is None else tf.constant(lengths))
        yts, sts = state_stats(tf.cast(states, tf.float64), targets, readout_bias=bias)
        stats = RidgeStats(yts.numpy(), sts.numpy(), batch, 1, bias)
        return (stats, states.numpy()) if with_states else stats
    if chunk < 1:
        raise ValueError(f"harvest_stats: chunk must be ≥ 1, got {chunk}.")
    if targets.ndim == 3 and with_states:
        states = run_reservoir_shapeless(inputs, *tensors, leaky, "all", washout)
        return _stats_of_states(states, targets[:, washout:], bias, chunk), states.numpy()
    full = np.full(batch, steps, np.int32) if lengths is None else lengths
    yts, sts, n, total = accumulate_stats(
        inputs, tf.constant(targets[:, washout:] if targets.ndim == 3 else targets), tf.constant(full), *tensors,
        leaky, tf.constant(washout), tf.constant(chunk), bias, targets.ndim == 3,
    )
    stats = RidgeStats(yts.numpy(), sts.numpy(), int(n), 1, bias)
    return (stats, total.numpy() / (full - washout)[:, None].astype(np.float32)) if with_states else stats


def _stats_of_states(states: tf.Tensor, targets: np.ndarray, bias: bool, chunk: int):
    """:class:`~tff_esn.ridge.RidgeStats` of every state in ``states`` (batch, steps, units) with
    per-step ``targets`` (batch, steps, n_out), reduced in time-major blocks of ``chunk`` steps
    exactly as :func:`accumulate_stats` reduces them."""
    from tff_esn.ridge import RidgeStats

    yts = sts = 0
    units, n_out = int(states.shape[2]), targets.shape[2]
    for start in range(0, int(states.shape[1]), chunk):
        block = tf.reshape(tf.transpose(states[:, start:start + chunk], [1, 0, 2]), [-1, units])
        y = np.transpose(targets[:, start:start + chunk], [1, 0, 2]).reshape(-1, n_out)
        a, b = state_stats(block, y, readout_bias=bias)
        yts, sts = yts + a.numpy(), sts + b.numpy()
    return RidgeStats(yts, sts, int(states.shape[0] * states.shape[1]), 1, bias)


@tf.keras.utils.register_keras_serializable(package="tff_esn")
class Reservoir(tf.keras.layers.Layer):
    """Fixed (non-trainable) leaky-integrator ESN reservoir (IncFed eq. 1; thesis eq. 2.1).

    Args:
        config: a :class:`ReservoirConfig`, or ``None`` to build one from ``**hparams``
            (``units``, ``spectral_radius``, ``leaky``, ``input_scaling``,
            ``input_connectivity``, ``recurrent_connectivity``, ``bias_scaling``, ``seed``).
        state_mode: which states the layer returns — ``"last"`` (default, (batch, units)),
            ``"mean"`` over the steps after ``washout`` ((batch, units)), or ``"all"``
            ((batch, time − washout, units)).
        return_sequences: Keras spelling of ``state_mode="all"``.
        washout: initial steps ignored by the ``"mean"`` and ``"all"`` modes (≥ 0).
        use_gain: adds the intrinsic-plasticity gain g (ones) as a fourth weight (FedIP eq. 1).

    Weights (in this order): ``kernel`` (features, units), ``recurrent_kernel``
    (units, units), ``bias`` (units,), and ``gain`` (units,) when ``use_gain``.
    """

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
        if return_sequences:
            state_mode = "all"
        if state_mode not in STATE_MODES:
            raise ValueError(f"Reservoir: state_mode must be one of {STATE_MODES}, got {state_mode!r}.")
        if not isinstance(washout, int) or washout < 0:
            raise ValueError(f"Reservoir: washout must be an integer ≥ 0, got {washout!r}.")
        self.reservoir_config = config
        self.state_mode = state_mode
        self.washout = washout
        self.use_gain = bool(use_gain)
        self.supports_masking = False

    @property
    def units(self) -> int:
        return self.reservoir_config.units

    @property
    def leaky(self) -> float:
        return float(self.reservoir_config.leaky)

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
        inputs = _check_inputs(tf.convert_to_tensor(inputs, tf.float32))
        _check_washout(inputs.shape[1], self.state_mode, self.washout)
        if tf.executing_eagerly():
            # Values, not variables: a relaxed trace would otherwise keep another layer's variables.
            weights = [None if w is None else tf.convert_to_tensor(w) for w in self._weight_list()]
            return run_reservoir_compiled(inputs, *weights, self.leaky, self.state_mode, self.washout)
        return run_reservoir(inputs, *self._weight_list(), self.leaky, self.state_mode, self.washout)

    def _weight_list(self) -> list:
        return [self.kernel, self.recurrent_kernel, self.bias, self.gain]

    def harvest_stats(self, inputs, targets, *, bias: bool = False, chunk: int = STATS_CHUNK):
        """Ridge statistics of this reservoir's states (module :func:`harvest_stats`); builds the layer on first use."""
        inputs = _check_inputs(tf.convert_to_tensor(inputs, tf.float32))
        if not self.built:
            self.build(inputs.shape)
        return harvest_stats(inputs, targets, self._weight_list(), self.leaky, self.state_mode, self.washout,
                             bias=bias, chunk=chunk)

    def compute_output_shape(self, input_shape):
        shape = tf.TensorShape(input_shape)
        if self.state_mode == "all":
            steps = None if shape[1] is None else shape[1] - self.washout
            return tf.TensorShape([shape[0], steps, self.units])
        return tf.TensorShape([shape[0], self.units])

    def get_config(self) -> dict[str, Any]:
        base = super().get_config()
        base.update(self.reservoir_config.to_dict())
        base.update({"state_mode": self.state_mode, "washout": self.washout, "use_gain": self.use_gain})
        return base
