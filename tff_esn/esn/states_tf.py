"""The reservoir's state equation in TensorFlow (IncFed eq. 1; FedIP eq. 1): one step, the batched time
loop and its statistics; ``gain=None`` is ``tfa.layers.ESN``'s cell."""

from __future__ import annotations

import functools
from collections.abc import Callable

import tensorflow as tf

from tff_esn.esn.ridge import STATS_CHUNK
from tff_esn.esn.ridge_tf import ridge_products


def project_inputs(inputs: tf.Tensor, kernel: tf.Tensor, bias: tf.Tensor, gain: tf.Tensor | None) -> tf.Tensor:
    """Time-major input projection u(t) W_in for all steps in one product (bias folded in when g = 1)."""
    projected = tf.einsum("btf,fu->tbu", inputs, kernel)
    return projected + bias if gain is None else projected


ACTIVATION_FUNCTIONS = {"tanh": tf.tanh, "sigmoid": tf.sigmoid, "sin": tf.sin, "relu": tf.nn.relu,
                        "identity": tf.identity}
"""The nonlinearities f by name (:data:`~tff_esn.esn.hyperparameters.ACTIVATIONS`)."""


def activate(z: tf.Tensor, activation: str | tuple[str, ...]) -> tf.Tensor:
    """f(z) on (batch, units) ``z``: one nonlinearity, or one per unit (each function kept where its mask is 1)."""
    if isinstance(activation, str):
        return ACTIVATION_FUNCTIONS[activation](z)
    return tf.add_n([tf.constant([float(a == name) for a in activation]) * ACTIVATION_FUNCTIONS[name](z)
                     for name in sorted(set(activation))])


def reservoir_step(x: tf.Tensor, projected: tf.Tensor, recurrent: tf.Tensor, bias: tf.Tensor,
                   gain: tf.Tensor | None, leaky: float | tuple[float, ...],
                   layers: tuple[int, ...] = (), activation: str | tuple[str, ...] = "tanh",
                   ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """One update of the state equation (IncFed eq. 1; FedIP eq. 1): ``(net, x̃, state)`` with
    ``net = u(t) W_in + x(t−1) Ŵ``, ``x̃ = f(g ⊙ net + b)`` and ``state = (1 − a)·x(t−1) + a·x̃``."""
    if len(layers) > 1:
        return _deep_step(x, projected, recurrent, bias, gain, leaky, layers, activation)
    net = projected + tf.matmul(x, recurrent)
    new = activate(net if gain is None else gain * net + bias, activation)
    if isinstance(leaky, tuple):  # one rate per unit
        return net, new, x + tf.constant(leaky, tf.float32) * (new - x)
    return net, new, (new if leaky == 1.0 else x + leaky * (new - x))


def _deep_step(x, projected, recurrent, bias, gain, leaky, layers, activation):
    """:func:`reservoir_step` of a deep ESN: layer l's net input adds layer l − 1's new state times W_in^l."""
    rates = tf.broadcast_to(tf.constant(leaky, tf.float32), tf.shape(bias))
    nets, actives, states = [], [], []
    start, below = 0, None
    for size in layers:
        stop = start + size
        net = projected[:, start:stop] + tf.matmul(x[:, start:stop], recurrent[start:stop, start:stop])
        if below is not None:
            net += tf.matmul(states[-1], recurrent[below[0]:below[1], start:stop])
        active = activate(net if gain is None else gain[start:stop] * net + bias[start:stop],
                          activation if isinstance(activation, str) else activation[start:stop])
        old = x[:, start:stop]
        nets.append(net)
        actives.append(active)
        states.append(old + rates[start:stop] * (active - old))
        start, below = stop, (start, stop)
    return tf.concat(nets, 1), tf.concat(actives, 1), tf.concat(states, 1)


def _step_fn(recurrent: tf.Tensor, bias: tf.Tensor, gain: tf.Tensor | None, leaky: float | tuple[float, ...],
             layers: tuple[int, ...] = (), activation: str | tuple[str, ...] = "tanh"):
    """The new state of :func:`reservoir_step` with fixed weights (bias folded in when ``gain`` is None)."""
    def step(x: tf.Tensor, projected: tf.Tensor) -> tf.Tensor:
        return reservoir_step(x, projected, recurrent, bias, gain, leaky, layers, activation)[2]

    return step



UNROLL = 8
"""Time steps per ``tf.while_loop`` iteration (amortises the per-iteration overhead; ``bench/harvest.py``)."""


def _time_loop(start, stop, one, state: tuple) -> tuple:
    """``state = one(t, *state)`` for t in [start, stop), ``UNROLL`` steps per iteration (bit-identical states)."""
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
    leaky: float | tuple[float, ...],
    state_mode: str = "last",
    washout: int = 0,
    lengths: tf.Tensor | None = None,
    layers: tuple[int, ...] = (),
    readout_from: int = 0,
    activation: str | tuple[str, ...] = "tanh",
    with_inputs: bool = False,
) -> tf.Tensor:
    """A batch of sequences' states: ``last``, ``mean`` after ``washout`` or ``all`` (``lengths``: right-padded);
    ``with_inputs``: rows ``[u, x]``, the input read as the state is (:func:`beside_inputs`)."""
    inputs = tf.convert_to_tensor(inputs, tf.float32)
    states = _reservoir_states(inputs, kernel, recurrent, bias, gain, leaky, state_mode, washout, lengths, layers,
                               readout_from, activation)
    return beside_inputs(inputs, states, state_mode, washout, lengths) if with_inputs else states


def beside_inputs(inputs: tf.Tensor, states: tf.Tensor, state_mode: str, washout: int,
                  lengths: tf.Tensor | None) -> tf.Tensor:
    """``[u, x]``: each sequence's input read as ``states`` are (its last valid step, its mean after ``washout``
    or every step after it, zero past its end) before them on the last axis."""
    if lengths is not None:
        lengths = tf.cast(lengths, tf.int32)
        valid = tf.cast(tf.range(tf.shape(inputs)[1])[None, :] < lengths[:, None], tf.float32)[:, :, None]
        inputs = inputs * valid
    if state_mode == "last":
        u = inputs[:, -1] if lengths is None else tf.gather(inputs, lengths - 1, batch_dims=1)
    elif state_mode == "mean":
        count = tf.shape(inputs)[1] - washout if lengths is None else (lengths - washout)[:, None]
        u = tf.reduce_sum(inputs[:, washout:], axis=1) / tf.cast(count, tf.float32)
    else:
        u = inputs[:, washout:]
    return tf.concat([u, states], axis=-1)


def _reservoir_states(inputs, kernel, recurrent, bias, gain, leaky, state_mode, washout, lengths, layers,
                      readout_from, activation) -> tf.Tensor:
    """:func:`run_reservoir`'s states of the reservoir alone."""
    projected = project_inputs(inputs, kernel, bias, gain)
    steps = tf.shape(projected)[0]
    x0 = tf.zeros([tf.shape(projected)[1], tf.shape(kernel)[1]], tf.float32)
    update = _step_fn(recurrent, bias, gain, leaky, layers, activation)
    if lengths is None:
        def step(x, t):
            return update(x, tf.gather(projected, t))
    else:
        lengths = tf.cast(lengths, tf.int32)

        def step(x, t):  # frozen after the sequence's end
            return tf.where(_valid(t, lengths), update(x, tf.gather(projected, t)), x)

    if state_mode == "last":
        return _time_loop(0, steps, lambda t, x: (step(x, t),), (x0,))[0][:, readout_from:]
    if state_mode == "mean":
        def body(t, x, acc):
            x = step(x, t)
            return x, acc + (x if lengths is None else tf.cast(_valid(t, lengths), tf.float32) * x)

        if washout:
            x0 = _time_loop(0, washout, lambda t, x: (step(x, t),), (x0,))[0]
        _, acc = _time_loop(washout, steps, body, (x0, tf.zeros_like(x0)))
        count = steps - washout if lengths is None else (lengths - washout)[:, None]
        return (acc / tf.cast(count, tf.float32))[:, readout_from:]
    states = tf.TensorArray(tf.float32, size=steps, element_shape=x0.shape)

    def body_all(t, x, ta):
        x = step(x, t)
        return x, ta.write(t, x if lengths is None else tf.where(_valid(t, lengths), x, tf.zeros_like(x)))

    _, states = _time_loop(0, steps, body_all, (x0, states))
    return tf.transpose(states.stack()[washout:, :, readout_from:], [1, 0, 2])


run_reservoir_compiled = tf.function(run_reservoir, reduce_retracing=True, autograph=False)
"""Compiled :func:`run_reservoir` for eager callers (weight tensors, not variables; no autograph)."""


@functools.lru_cache(maxsize=64)
def _shapeless(leaky: float | tuple[float, ...], state_mode: str, washout: int, with_gain: bool, masked: bool,
               layers: tuple[int, ...], readout_from: int, activation: str | tuple[str, ...], with_inputs: bool):
    """:func:`run_reservoir` traced once for these static arguments, every tensor of unknown shape."""
    specs = [tf.TensorSpec([None, None, None]), tf.TensorSpec([None, None]), tf.TensorSpec([None, None]),
             tf.TensorSpec([None])] + [tf.TensorSpec([None])] * with_gain + [tf.TensorSpec([None], tf.int32)] * masked

    def states(inputs, kernel, recurrent, bias, *rest):
        gain = rest[0] if with_gain else None
        return run_reservoir(inputs, kernel, recurrent, bias, gain, leaky, state_mode, washout,
                             rest[-1] if masked else None, layers, readout_from, activation, with_inputs)

    return tf.function(states, input_signature=specs, autograph=False)


def run_reservoir_shapeless(inputs, kernel, recurrent, bias, gain, leaky: float | tuple[float, ...], state_mode: str = "last",
                            washout: int = 0, lengths=None, layers: tuple[int, ...] = (),
                            readout_from: int = 0, activation: str | tuple[str, ...] = "tanh",
                            with_inputs: bool = False) -> tf.Tensor:
    """:func:`run_reservoir` for tensors of any batch size and length, sharing one trace."""
    fn = _shapeless(leaky if isinstance(leaky, tuple) else float(leaky), state_mode, int(washout), gain is not None,
                    lengths is not None, tuple(layers), int(readout_from), activation, bool(with_inputs))
    tensors = [inputs, kernel, recurrent, bias] + ([gain] if gain is not None else [])
    return fn(*tensors, *([] if lengths is None else [tf.cast(lengths, tf.int32)]))


@tf.function(reduce_retracing=True, autograph=False)
def accumulate_stats(inputs, targets, lengths, kernel, recurrent, bias, gain, leaky, washout, chunk, add_bias,
                     per_step, clip: Callable[[tf.Tensor], tf.Tensor] | None = None, dtype=tf.float32,
                     layers: tuple[int, ...] = (), readout_from: int = 0, activation: str | tuple[str, ...] = "tanh",
                     with_inputs: bool = False):
    """``(Yᵀ S, Sᵀ S, n)`` in float64 of every state after ``washout`` (IncFed eqs. 6–7), ``chunk`` steps at a
    time; ``with_inputs``: of every row ``[u(t), x(t)]``."""
    projected = project_inputs(inputs, kernel, bias, gain)
    steps = tf.shape(projected)[0]
    batch = tf.shape(projected)[1]
    units = tf.shape(kernel)[1]
    width = units - readout_from + (tf.shape(inputs)[2] if with_inputs else 0)
    features = width + (1 if add_bias else 0)
    targets = tf.ensure_shape(targets, [None, None, None] if per_step else [None, None])
    n_out = tf.shape(targets)[-1]
    step = _step_fn(recurrent, bias, gain, leaky, layers, activation)
    x = tf.zeros([batch, units], tf.float32)
    x = _time_loop(0, washout, lambda t, x: (step(x, projected[t]),), (x,))[0]

    def chunk_body(start, x, sts, yts):
        stop = tf.minimum(start + chunk, steps)
        ta = tf.TensorArray(tf.float32, size=stop - start, element_shape=[None, None])

        def inner(t, x, ta):
            x = step(x, projected[t])
            return x, ta.write(t - start, x)

        x, ta = _time_loop(start, stop, inner, (x, ta))
        rows = ta.stack()[:, :, readout_from:]  # (len, batch, units), time-major
        if with_inputs:
            rows = tf.concat([tf.transpose(inputs[:, start:stop], [1, 0, 2]), rows], axis=2)
        flat = tf.reshape(rows, [-1, width])
        valid = tf.reshape(tf.range(start, stop)[:, None] < lengths[None, :], [-1])
        if per_step:
            y = tf.transpose(targets[:, start - washout:stop - washout], [1, 0, 2])
        else:
            y = tf.broadcast_to(targets[None], [stop - start, batch, n_out])
        a, b = ridge_products(tf.cast(flat, dtype), tf.reshape(y, [-1, n_out]), readout_bias=add_bias, valid=valid,
                              clip=clip)
        return stop, x, sts + b, yts + a

    sts0 = tf.zeros([features, features], tf.float64)
    yts0 = tf.zeros([n_out, features], tf.float64)
    matrix = tf.TensorShape([None, None])
    _, _, sts, yts = tf.while_loop(
        lambda s, *_: s < steps, chunk_body, (washout, x, sts0, yts0),
        shape_invariants=(tf.TensorShape([]), matrix, matrix, matrix),
    )
    return yts, sts, tf.cast(tf.reduce_sum(lengths - washout), tf.float64)


def batch_statistics(inputs, targets, kernel, recurrent, bias, gain, leaky: float | tuple[float, ...], state_mode: str, washout: int,
                     readout_bias: bool, *, lengths=None, clip: Callable[[tf.Tensor], tf.Tensor] | None = None,
                     dtype=tf.float64, layers: tuple[int, ...] = (),
                     readout_from: int = 0, activation: str | tuple[str, ...] = "tanh", with_inputs: bool = False,
                     ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """``(Yᵀ S, Sᵀ S, n)`` of one batch of sequences in float64 (IncFed eqs. 6–7), per ``state_mode``;
    ``with_inputs``: of the rows ``[u, x]``."""
    if state_mode == "all":
        if lengths is None:
            lengths = tf.fill(tf.shape(inputs)[:1], tf.shape(inputs)[1])
        return accumulate_stats(inputs, targets, lengths, kernel, recurrent, bias, gain, leaky, washout, STATS_CHUNK,
                                readout_bias, targets.shape.rank == 3, clip, dtype, layers, readout_from, activation,
                                with_inputs)
    states = run_reservoir(inputs, kernel, recurrent, bias, gain, leaky, state_mode, washout, lengths, layers,
                           readout_from, activation, with_inputs)
    a, b = ridge_products(tf.cast(states, tf.float64), targets, readout_bias=readout_bias, clip=clip)
    return a, b, tf.cast(tf.shape(states)[0], tf.float64)


