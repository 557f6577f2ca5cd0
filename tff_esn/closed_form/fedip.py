"""Intrinsic plasticity (IP) of the reservoir and its federation, FedIP (FedIP §2, Alg. 1).

IP moves each unit's gain g and bias b in ``x̃ = tanh(g·x_net + b)`` toward N(μ, σ²) (eqs. 2–3):
``Δb = −η (−μ/σ² + (x̃/σ²)(2σ² + 1 − x̃² + μ x̃))``, ``Δg = η / g + Δb · x_net``, ``g ← max(g, min_gain)``.
FedIP is FedAvg on (g, b), then IncFed on the adapted reservoir (λ scaled by :func:`state_scaled_l2`).
"""

from __future__ import annotations

import collections
import functools
import hashlib
from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

from tff_esn.closed_form.configs import FedIPConfig, IPConfig, fedip_cost
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.ridge import size_weighted_mean
from tff_esn.esn.weights import ReservoirWeights
from tff_esn.closed_form.incfed import incfed_readout
from tff_esn.closed_form.run import Run
from tff_esn.common.run_warnings import warn
from tff_esn.privacy.aggregation import federated_stats_sum, lower_secure
from tff_esn.privacy.dp_fedip import GaussianUpdates, fedip_privacy
from tff_esn.privacy.closed_form import gaussian_updates
from tff_esn.privacy.secure_sum import FixedPoint
from tff_esn.esn.states_tf import project_inputs, reservoir_step, run_reservoir_compiled
from tff_esn.esn.ridge import RidgeStats
from tff_esn.runtime import load_tff


def ip_updates(net, y, gain, mu: float, sigma: float, eta: float):
    """Per-sample ``(Δg, Δb)`` of FedIP eqs. 2–3 for net inputs ``net`` and activations ``y``."""
    sig2 = sigma * sigma
    delta_b = -eta * (-mu / sig2 + (y / sig2) * (2.0 * sig2 + 1.0 - y * y + mu * y))
    delta_g = eta / gain + delta_b * net
    return delta_g, delta_b


def _ip_batch(x, lengths, kernel, recurrent, gain, bias, leaky: float | tuple[float, ...], cfg: IPConfig,
              layers: tuple[int, ...] = ()):
    """Online IP over right-padded sequences: per step, the mean (g, b) update of those running (FedIP eqs. 2–3)."""
    projected = project_inputs(x, kernel, bias, gain)
    steps = tf.shape(projected)[0]

    def body(t, state, g, b):
        net, y, state = reservoir_step(state, projected[t], recurrent, b, g, leaky, layers)
        dg, db = ip_updates(net, y, g, cfg.mu, cfg.sigma, cfg.eta)
        running = tf.cast(t < lengths, tf.float32)[:, None]
        count = tf.maximum(tf.reduce_sum(running), 1.0)
        g_next = g + tf.reduce_sum(dg * running, 0) / count
        if cfg.min_gain is not None:
            g_next = tf.maximum(g_next, cfg.min_gain)
        return t + 1, state, g_next, b + tf.reduce_sum(db * running, 0) / count

    state0 = tf.zeros([tf.shape(x)[0], tf.shape(kernel)[1]], tf.float32)
    _, _, gain, bias = tf.while_loop(lambda t, *_: t < steps, body, (0, state0, gain, bias))
    return gain, bias


_ip_batch_xla = tf.function(_ip_batch, jit_compile=True)
""":func:`_ip_batch` compiled by XLA (fused elementwise ops; rounding differs from the graph's in the last bits)."""


def _local_ip(dataset: tf.data.Dataset, kernel, recurrent, gain, bias, leaky: float | tuple[float, ...], cfg: IPConfig,
              layers: tuple[int, ...] = (), batch_ip: Callable = _ip_batch):
    """``cfg.epochs`` passes of online IP over a dataset of input batches (FedIP Alg. 1, LocalIPUpdate)."""
    return dataset.repeat(cfg.epochs).reduce(
        (gain, bias), lambda gb, batch: batch_ip(batch[0], batch[1], kernel, recurrent, gb[0], gb[1], leaky, cfg,
                                                     layers))


_local_ip_compiled = tf.function(functools.partial(_local_ip, batch_ip=_ip_batch_xla), reduce_retracing=True)
"""Local IP in this process (:func:`intrinsic_plasticity`): batches through :data:`_ip_batch_xla`. TFF's
client update (:func:`build_fedip_process`) serializes :func:`_local_ip` with the plain graph."""


def _batches(client: ClientSequences, cfg: IPConfig, steps: int | None = None) -> tf.data.Dataset:
    """Batches ``(x, lengths)`` of the client's sequences, right-padded to ``steps`` when given."""
    x = client.x if steps is None else np.pad(client.x, ((0, 0), (0, steps - client.x.shape[1]), (0, 0)))
    return tf.data.Dataset.from_tensor_slices((x, client.steps.astype(np.int32))).batch(cfg.batch_size)


_ADAPTED: collections.OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = collections.OrderedDict()
_ADAPTED_SIZE = 256
"""Local IP results kept by :func:`intrinsic_plasticity` (two ``units`` vectors each)."""


def intrinsic_plasticity(weights: ReservoirWeights, client: ClientSequences, cfg: IPConfig) -> ReservoirWeights:
    """The reservoir with (g, b) after ``cfg.epochs`` epochs of IP on one client (FedIP Alg. 1, LocalIPUpdate)."""
    digest = hashlib.sha1(repr(client.x.shape).encode())  # what IP reads: the inputs and their valid steps
    digest.update(np.ascontiguousarray(client.x, np.float32).tobytes())
    digest.update(np.ascontiguousarray(client.steps, np.int64).tobytes())
    key = (weights.key, digest.hexdigest(), cfg)
    if key in _ADAPTED:
        _ADAPTED.move_to_end(key)
    else:
        gain, bias = _local_ip_compiled(_batches(client, cfg), tf.constant(weights.kernel),
                                        tf.constant(weights.recurrent), tf.constant(weights.gain),
                                        tf.constant(weights.bias), weights.leaky, cfg, weights.layers)
        _ADAPTED[key] = gain.numpy(), bias.numpy()
        if len(_ADAPTED) > _ADAPTED_SIZE:
            _ADAPTED.popitem(last=False)
    gain, bias = _ADAPTED[key]
    return weights.replace(gain=gain, bias=bias)


def fedip_numpy(weights: ReservoirWeights, clients: Sequence[ClientSequences], cfg: IPConfig,
                rounds: int) -> ReservoirWeights:
    """FedIP (Alg. 1) without TFF: the reference the TFF process is checked against."""
    sizes = [len(c) for c in clients]
    for _ in range(rounds):
        local = [intrinsic_plasticity(weights, c, cfg) for c in clients]
        weights = weights.replace(gain=size_weighted_mean([w.gain for w in local], sizes),
                                  bias=size_weighted_mean([w.bias for w in local], sizes))
    return weights


def state_spread(stats: Sequence[RidgeStats]) -> np.ndarray:
    """Per-unit std ``sqrt(B_ii/n − (Σ s_i/n)²)`` of the state features, from the summed statistics' bias row."""
    total = RidgeStats.sum(list(stats))
    n = total.B[-1, -1]
    mean = total.B[-1, :-1] / n
    return np.sqrt(np.maximum(np.diag(total.B)[:-1] / n - mean * mean, 0.0))


def state_scaled_l2(l2: float, initial: Sequence[RidgeStats], adapted: Sequence[RidgeStats]) -> float:
    """``λ · v_adapted / v_initial``, ``v`` the total variance of the state features (:func:`state_spread`)."""
    before = float(np.sum(state_spread(initial) ** 2))
    if not before > 0:
        raise ValueError("state_scaled_l2: the unadapted reservoir's states do not vary (variance 0).")
    return float(l2) * float(np.sum(state_spread(adapted) ** 2)) / before


NEAR_LINEAR_SPREAD = 0.17
"""Median per-step state std below which tanh's cubic term is < 1 % of its linear one (s²/3 < 0.01)."""

FEDIP_PARAMETER_RANGE = 64.0
"""|g|, |b| above which a secure FedIP round clips (and counts) a client's value: beyond it every unit
saturates, so a clip marks a diverged run."""


def step_spread(weights: ReservoirWeights, clients: Sequence[ClientSequences], per_client: int = 32) -> np.ndarray:
    """Per-unit std of the states over every step of each client's first ``per_client`` sequences (IP's target σ)."""
    arrays = [tf.constant(a) for a in (weights.kernel, weights.recurrent, weights.bias, weights.gain)]
    states = []
    for c in clients:
        run = run_reservoir_compiled(tf.constant(c.x[:per_client]), *arrays, weights.leaky, "all", 0, None,
                                     weights.layers).numpy()
        states.append(run[np.arange(run.shape[1]) < c.steps[:per_client, None]])
    return np.concatenate(states).std(axis=0)


def build_fedip_process(weights: ReservoirWeights, steps: int, cfg: IPConfig, secure: FixedPoint | None = None,
                        dp: GaussianUpdates | None = None):
    """FedIP (Alg. 1) as a TFF ``IterativeProcess`` over (g, b): local IP, the sequence-weighted mean."""
    tff = load_tff()

    units, n_inputs = weights.units, weights.n_inputs
    vec = tff.TensorType(np.float32, [units])
    state_type = tff.StructWithPythonType([vec, vec], tuple)
    data_type = tff.SequenceType(tff.StructWithPythonType(
        [tff.TensorType(np.float32, [None, steps, n_inputs]), tff.TensorType(np.int32, [None])], tuple))
    kernel, recurrent, leaky = weights.kernel, weights.recurrent, weights.leaky
    gain0, bias0 = weights.gain, weights.bias

    @tff.tensorflow.computation
    def server_init():
        return tf.constant(gain0), tf.constant(bias0)

    @tff.tensorflow.computation(data_type, state_type)
    def client_update(dataset, state):
        gain, bias = _local_ip(dataset, tf.constant(kernel), tf.constant(recurrent), state[0], state[1], leaky, cfg,
                               weights.layers)
        size = dataset.reduce(tf.constant(0.0, tf.float32),
                              lambda n, batch: n + tf.cast(tf.shape(batch[0])[0], tf.float32))
        return (gain, bias), size

    @tff.federated_computation
    def initialize():
        return tff.federated_eval(server_init, tff.SERVER)

    @tff.tensorflow.computation(client_update.type_signature.result)
    def weighted(update):
        (gain, bias), size = update
        n = tf.cast(size, tf.float64)
        return n * tf.cast(gain, tf.float64), n * tf.cast(bias, tf.float64), n

    @tff.tensorflow.computation(weighted.type_signature.result)
    def server_mean(total):
        gain, bias, n = total
        return tf.cast(gain / n, tf.float32), tf.cast(bias / n, tf.float32)

    if dp is not None:
        return _dp_process(initialize, client_update, state_type, data_type, units, cfg, secure, dp)

    @tff.federated_computation(tff.FederatedType(state_type, tff.SERVER), tff.FederatedType(data_type, tff.CLIENTS))
    def next_fn(state, datasets):
        local, sizes = tff.federated_map(client_update, (datasets, tff.federated_broadcast(state)))
        if secure is None:
            return tff.federated_mean(local, weight=sizes)
        total, clipped = federated_stats_sum(tff.federated_map(weighted, (local, sizes)), secure)
        return tff.federated_map(server_mean, total), clipped

    return tff.templates.IterativeProcess(initialize, lower_secure(next_fn, secure))


def _dp_process(initialize, client_update, state_type, data_type, units: int, cfg: IPConfig,
                secure: FixedPoint | None, dp: GaussianUpdates):
    """:func:`build_fedip_process`'s process with DP on the (g, b) updates."""
    tff = load_tff()

    @tff.tensorflow.computation(client_update.type_signature.result, state_type)
    def clipped_update(update, state):
        (gain, bias), _ = update
        clipped = dp.clip_update(tf.cast(tf.concat([gain - state[0], bias - state[1]], 0), tf.float64))
        return clipped[:units], clipped[units:]

    @tff.tensorflow.computation(state_type, clipped_update.type_signature.result, np.int64)
    def apply_mean(state, total, round_index):
        mean = tf.cast(dp.noisy_mean(tf.concat(total, 0), round_index), tf.float32)
        gain = state[0] + mean[:units]
        if cfg.min_gain is not None:
            gain = tf.maximum(gain, tf.constant(cfg.min_gain, tf.float32))
        return gain, state[1] + mean[units:]

    @tff.federated_computation(tff.FederatedType(state_type, tff.SERVER), tff.FederatedType(data_type, tff.CLIENTS),
                               tff.FederatedType(np.int64, tff.SERVER))
    def next_fn(state, datasets, round_index):
        at_clients = tff.federated_broadcast(state)
        updates = tff.federated_map(client_update, (datasets, at_clients))
        total, clipped = federated_stats_sum(tff.federated_map(clipped_update, (updates, at_clients)), secure)
        return tff.federated_map(apply_mean, (state, total, round_index)), clipped

    return tff.templates.IterativeProcess(initialize, lower_secure(next_fn, secure))


def fedip_tff(weights: ReservoirWeights, clients: Sequence[ClientSequences], cfg: IPConfig, rounds: int,
              secure: FixedPoint | None = None, dp: GaussianUpdates | None = None) -> tuple[ReservoirWeights, int]:
    """``rounds`` FedIP rounds through TFF (Alg. 1): the federated reservoir and the values the secure sum clipped."""
    steps = max(c.x.shape[1] for c in clients)  # shorter clients are padded; each sequence runs its own steps
    process = build_fedip_process(weights, steps, cfg, secure, dp)
    datasets = [_batches(c, cfg, steps) for c in clients]
    state, clipped = process.initialize(), 0
    for r in range(rounds):
        state = process.next(state, datasets) if dp is None else process.next(state, datasets, np.int64(r))
        if secure is not None or dp is not None:
            state, round_clipped = state
            clipped += int(round_clipped)
    return weights.replace(gain=np.asarray(state[0]), bias=np.asarray(state[1])), clipped


# --------------------------------------------------------------------------- the registry's run function
def run_fedip(dataset: SequenceDataset, split: Split, config: FedIPConfig) -> dict:
    """FedIP rounds on (g, b), then the IncFed readout on the adapted reservoir (FedIP Alg. 1)."""
    run = Run(dataset, split, config, "fedip")
    clients = list(dataset.select(run.train_ids).values())
    ip_dp = gaussian_updates(config.privacy, clients=len(clients), rounds=config.rounds)
    secure_range = max(len(c) for c in clients) * FEDIP_PARAMETER_RANGE if ip_dp is None else ip_dp.clip
    secure = (FixedPoint(config.privacy.secure_bits, secure_range, len(clients))
              if config.privacy.secure_aggregation else None)
    if config.backend == "tff":
        adapted, rounds_clipped = fedip_tff(run.weights, clients, config.ip, config.rounds, secure, ip_dp)
    else:
        adapted, rounds_clipped = fedip_numpy(run.weights, clients, config.ip, config.rounds), 0
    dp = config.privacy.dp_requested
    if dp and config.l2_scale == "state":
        warn("DP: λ is not rescaled to the adapted states' scale (--l2-scale state reads the training clients' "
             "un-noised statistics); the stated λ is used as it is")
    scale = state_scaled_l2(1.0, run.stats(scored=False), run.stats(adapted)) if config.l2_scale == "state" and not dp \
        else 1.0
    l2 = scale * run.choose_l2(lambda grid: run.exact_sweep(run.stats(adapted), adapted, scale=scale)(grid))
    readout, _, privacy = incfed_readout(run, adapted, False, l2, releases=config.rounds + 1)
    if ip_dp is not None:
        privacy["privacy"] = fedip_privacy(privacy["privacy"], ip_dp, config.rounds)
    if secure is not None:
        privacy["secure_aggregation"]["rounds"] = secure.to_dict(rounds_clipped)
    cost = fedip_cost(config.rounds, run.reservoir.total_units, run.n_features, run.n_outputs)
    report = dict(backend=config.backend, l2_effective=l2, gain_mean=float(adapted.gain.mean()),
                  gain_min=float(adapted.gain.min()), bias_mean=float(adapted.bias.mean()))
    if dp:  # the diagnostics below read the training clients' data outside the mechanism
        return {**run.report(run.model(readout, adapted), cost, notes=[], **report), **privacy}
    spread = float(np.median(step_spread(adapted, clients)))
    notes = [f"FedIP left the states nearly linear (median state std {spread:.3f} < {NEAR_LINEAR_SPREAD}): the "
             f"readout sees only linear functionals of the input; raise --ip-sigma or --ip-mu if classes differ "
             f"in frequency or power"] if spread < NEAR_LINEAR_SPREAD else []
    return {**run.report(run.model(readout, adapted), cost, notes=notes, state_std_median=spread, **report),
            **privacy}
