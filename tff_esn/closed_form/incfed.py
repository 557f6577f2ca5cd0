"""IncFed / FedRR: exact federated ridge readout (IncFed §III, eqs. 6–12; thesis §B.1).
Clients send ``A_c = Y_cᵀ S_c``, ``B_c = S_cᵀ S_c`` (eqs. 6–7); the server sums (eqs. 8–9) and solves
``W = A (B + λI)⁻¹`` (eq. 10), the centralized readout (eq. 3) for any partition."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from tff_esn.common.lazy import LazyModule
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.registry.algorithms import get_algorithm
from tff_esn.closed_form import extend
from tff_esn.closed_form.configs import IncFedConfig, incfed_cost
from tff_esn.closed_form.harvest import readout_targets
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.private_sum import plain_sections, tff_aggregation
from tff_esn.closed_form.run import Run
from tff_esn.closed_form.streaming import Checkpoint, ClientSource, DatasetClients, drive, stream_identity
from tff_esn.privacy.aggregation import StatsAggregation, client_noise, federated_stats_sum, lower_secure, server_noise
from tff_esn.privacy.dp_stats import clip_rows, floor_eigenvalues
from tff_esn.privacy.closed_form import stats_sections
from tff_esn.esn.ridge import RidgeStats, SingularSystemError, singular_message
from tff_esn.common.run_warnings import warn
from tff_esn.common.validation import is_count
from tff_esn.runtime import load_tff

tf = LazyModule("tensorflow")
states_tf = LazyModule("tff_esn.esn.states_tf")


def fit_incfed(stats: Sequence[RidgeStats], l2: float, *, per_client: bool = False) -> np.ndarray:
    """IncFed readout ``W = (Σ A_c)(Σ B_c + λI)⁻¹`` (IncFed eqs. 8–10) from the clients' statistics."""
    return RidgeStats.sum(stats).solve(l2, per_client=per_client)


# --------------------------------------------------------------------------- TFF path
def _client_arrays(client: ClientSequences, n_classes: int, spec: StateSpec,
                   steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A client's inputs (right-padded to ``steps`` when given) and its targets shaped for the state mode."""
    spec.check(client.shortest, client.per_step)
    targets = readout_targets(client, n_classes, spec.state_mode)
    if targets.ndim == 3:
        targets = targets[:, spec.washout:]
    x = client.x if steps in (None, client.x.shape[1]) else np.pad(client.x, ((0, 0), (0, steps - client.x.shape[1]),
                                                                            (0, 0)))
    return x, targets.astype(np.float32)


def _server_solve(a, b, l2, clients, per_client: bool):
    """``W = A (B + λI)⁻¹`` in float64 and a singularity flag (:func:`tff_esn.esn.ridge.solve_symmetric`'s rule)."""
    size = tf.shape(b)[0]
    scale = l2 * clients if per_client else l2
    matrix = b + scale * tf.eye(size, dtype=tf.float64)
    eigenvalues, vectors = tf.linalg.eigh(matrix)
    eps = tf.constant(np.finfo(np.float64).eps, tf.float64)
    tolerance = tf.cast(size, tf.float64) * eps * tf.reduce_max(tf.abs(eigenvalues))
    singular = eigenvalues[0] <= tolerance

    def pseudo_inverse():
        inverse = tf.where(eigenvalues > tolerance, 1.0 / tf.where(eigenvalues > tolerance, eigenvalues, 1.0),
                           tf.zeros_like(eigenvalues))
        return tf.matmul(tf.matmul(a, vectors) * inverse, vectors, transpose_b=True)

    w = tf.cond(
        singular,
        pseudo_inverse,
        lambda: tf.transpose(tf.linalg.cholesky_solve(tf.linalg.cholesky(matrix), tf.transpose(a))),
    )
    return w, singular


@functools.lru_cache(maxsize=32)
def build_client_stats_computation(n_inputs: int, steps: int, units: int, n_classes: int, leaky: float | tuple[float, ...],
                                   spec: StateSpec, per_step_targets: bool, ragged: bool = False,
                                   clip: float | None = None, layers: tuple[int, ...] = (), readout_from: int = 0,
                                   activation: str | tuple[str, ...] = "tanh"):
    """A client's ``(A_c, B_c, n_c, 1.0)`` in float64 as a TFF computation (IncFed eqs. 6–7), cached per shape."""
    tff = load_tff()

    f32 = np.float32
    reservoir_type = tff.StructWithPythonType(
        [tff.TensorType(f32, [n_inputs, units]), tff.TensorType(f32, [units, units]),
         tff.TensorType(f32, [units]), tff.TensorType(f32, [units])], tuple)
    target_shape = [None, steps - spec.washout, n_classes] if per_step_targets else [None, n_classes]
    element_type = tff.StructWithPythonType(
        [tff.TensorType(f32, [None, steps, n_inputs]), tff.TensorType(f32, target_shape)]
        + ([tff.TensorType(np.int32, [None])] if ragged else []), tuple)
    features = units - readout_from + (n_inputs if spec.raw_inputs else 0) + int(spec.readout_bias)
    clip_fn = None if clip is None else functools.partial(clip_rows, clip=clip)

    def add_batch(acc, batch, reservoir):  # one batch's (Yᵀ S, Sᵀ S, n) in float64, rows [u, x, 1] clipped (DP)
        part = states_tf.batch_statistics(batch[0], batch[1], *reservoir, leaky, spec.state_mode,
                                          spec.washout, spec.readout_bias, lengths=batch[2] if ragged else None,
                                          clip=clip_fn, dtype=tf.float64, layers=layers, readout_from=readout_from,
                                          activation=activation, with_inputs=spec.raw_inputs)
        return tuple(x + y for x, y in zip(acc, part))

    @tff.tensorflow.computation(tff.SequenceType(element_type), reservoir_type)
    def client_stats(dataset, reservoir):
        init = (tf.zeros([n_classes, features], tf.float64), tf.zeros([features, features], tf.float64),
                tf.constant(0.0, tf.float64))
        a, b, n = dataset.reduce(init, lambda acc, batch: add_batch(acc, batch, reservoir))
        # clipped rows lose the static output count in the reduction; the federation's types state it
        return tf.ensure_shape(a, [n_classes, features]), b, n, tf.constant(1.0, tf.float64)

    return client_stats


@functools.lru_cache(maxsize=32)
def build_incfed_computation(n_inputs: int, steps: int, units: int, n_classes: int, leaky: float | tuple[float, ...],
                             spec: StateSpec, per_step_targets: bool, per_client: bool = False,
                             ragged: bool = False, aggregation: StatsAggregation | None = None,
                             layers: tuple[int, ...] = (), readout_from: int = 0,
                             activation: str | tuple[str, ...] = "tanh", sum_only: bool = False):
    """IncFed as one TFF computation (eqs. 6–10), cached per shape; ``sum_only``: Σ_c (A_c, B_c, n_c) (eqs. 6–9)."""
    tff = load_tff()

    client_stats = build_client_stats_computation(n_inputs, steps, units, n_classes, leaky, spec, per_step_targets,
                                                  ragged, None if aggregation is None else aggregation.clip, layers,
                                                  readout_from, activation)
    dataset_type, reservoir_type = client_stats.type_signature.parameter
    placed = (tff.FederatedType(reservoir_type, tff.SERVER), tff.FederatedType(dataset_type, tff.CLIENTS))
    if sum_only:
        @tff.federated_computation(*placed)
        def subround_sum(reservoir, datasets):
            local = tff.federated_map(client_stats, (datasets, tff.federated_broadcast(reservoir)))
            return federated_stats_sum(local, None)[0]

        return subround_sum
    n_features = client_stats.type_signature.result[0].shape[1]
    federate = build_incfed_stats_computation(n_classes, n_features, per_client, aggregation)
    _, l2_type, seed_type, prior_type = federate.type_signature.parameter

    @tff.federated_computation(*placed, l2_type, seed_type, prior_type)
    def incfed(reservoir, datasets, l2, seeds, prior):
        local = tff.federated_map(client_stats, (datasets, tff.federated_broadcast(reservoir)))
        return federate(local, l2, seeds, prior)

    return lower_secure(incfed, None if aggregation is None else aggregation.secure)


@functools.lru_cache(maxsize=32)
def build_incfed_stats_computation(n_outputs: int, n_features: int, per_client: bool = False,
                                   aggregation: StatsAggregation | None = None):
    """IncFed's federation of client statistics (eqs. 8–10), with :func:`build_incfed_computation`'s result: the
    readout solved from the released sum plus the server's ``prior`` statistics (zeros, or a kept model's), the
    release itself ``(A, B, n, clients)`` (noised under DP, before the eigenvalue floor), the singularity flag, the
    secure sum's clipped count and the eigenvalues the floor raised."""
    tff = load_tff()

    agg = aggregation
    f64 = np.float64
    stats_type = tff.StructWithPythonType(
        [tff.TensorType(f64, [n_outputs, n_features]), tff.TensorType(f64, [n_features, n_features]),
         tff.TensorType(f64), tff.TensorType(f64)], tuple)
    seed_type = tff.TensorType(np.int64, [2])
    secure = None if agg is None else agg.secure
    noisy = agg is not None and agg.noisy
    floor = agg.floor() if noisy else 0.0

    @tff.tensorflow.computation(stats_type, tff.TensorType(f64), stats_type)
    def server_solve(total, l2, prior):
        released = server_noise(total, agg) if noisy else total
        a, b, _, clients = (x + y for x, y in zip(released, prior))
        raised = tf.constant(0, tf.int32)
        if noisy:
            b, raised = floor_eigenvalues(b, floor)
        w, singular = _server_solve(a, b, l2, clients, per_client)
        return w, singular, released, raised

    @tff.federated_computation(
        tff.FederatedType(stats_type, tff.CLIENTS),
        tff.FederatedType(tff.TensorType(f64), tff.SERVER),
        tff.FederatedType(seed_type, tff.CLIENTS),
        tff.FederatedType(stats_type, tff.SERVER),
    )
    def federate(local, l2, seeds, prior):
        if noisy:
            release = tff.tensorflow.computation(lambda stats, seed: client_noise(stats, seed, agg),
                                                 stats_type, seed_type)
            local = tff.federated_map(release, (local, seeds))
        total, clipped = federated_stats_sum(local, secure)
        w, singular, released, raised = tff.federated_map(server_solve, (total, l2, prior))
        return w, tff.federated_broadcast(w), singular, released, clipped, raised

    return federate


@dataclasses.dataclass(frozen=True)
class IncFedOutcome:
    """The readout of :func:`federate_tff`, the summed statistics the server released (noised under DP) and what the
    privacy steps did to them."""

    readout: np.ndarray
    released: RidgeStats | None = None
    clipped_values: int = 0
    eigenvalues_raised: int = 0


def _prior_values(prior: RidgeStats | None, n_outputs: int, n_features: int) -> tuple:
    """The server's ``prior`` statistics as the computation's float64 ``(A, B, n, clients)`` (zeros: none)."""
    if prior is None:
        return (np.zeros((n_outputs, n_features)), np.zeros((n_features, n_features)), np.float64(0), np.float64(0))
    return (np.asarray(prior.A, np.float64), np.asarray(prior.B, np.float64), np.float64(prior.n),
            np.float64(prior.clients))


def _received_readout(w_clients, singular, l2: float) -> np.ndarray:
    """The readout the clients received (singular: raises at ``l2 = 0``, else warns)."""
    if singular and l2 == 0:
        raise SingularSystemError(singular_message(l2))
    if singular:
        warn(singular_message(l2))
    return np.asarray(w_clients)


def federate_tff(weights: ReservoirWeights, clients: Sequence[ClientSequences], n_classes: int, spec: StateSpec,
                 l2: float, *, per_client: bool = False, batch_size: int = 256,
                 aggregation: StatsAggregation | None = None, prior: RidgeStats | None = None) -> IncFedOutcome:
    """IncFed through TFF with the clients harvesting inside the computation: the readout the clients received,
    solved from the clients' released sum plus ``prior`` (a kept model's statistics), and that release."""
    n_inputs = clients[0].x.shape[2]
    steps = max(c.x.shape[1] for c in clients)
    ragged = any(c.ragged or c.x.shape[1] != steps for c in clients)
    arrays = [_client_arrays(c, n_classes, spec, steps) + ((c.steps.astype(np.int32),) if ragged else ())
              for c in clients]
    per_step = arrays[0][1].ndim == 3
    comp = build_incfed_computation(n_inputs, steps, weights.units, n_classes, weights.leaky, spec,
                                    per_step, per_client, ragged, aggregation, weights.layers, weights.readout_from,
                                    weights.activation)
    datasets = [tf.data.Dataset.from_tensor_slices(a).batch(batch_size) for a in arrays]
    reservoir = (weights.kernel, weights.recurrent, weights.bias, weights.gain)
    seed = aggregation.dp.seed if aggregation is not None and aggregation.dp is not None else 0
    seeds = [np.array([seed, i], np.int64) for i in range(len(clients))]
    n_features = spec.width(weights) + int(spec.readout_bias)
    _, w_clients, singular, released, clipped, raised = comp(reservoir, datasets, np.float64(l2), seeds,
                                                             _prior_values(prior, n_classes, n_features))
    a, b, n, count = (np.asarray(v) for v in released)
    return IncFedOutcome(_received_readout(w_clients, singular, l2),
                         RidgeStats(a, b, float(n), float(count), spec.readout_bias), int(clipped), int(raised))


def federate_stats_tff(stats: Sequence[RidgeStats], l2: float, *, per_client: bool = False,
                       prior: RidgeStats | None = None) -> np.ndarray:
    """IncFed through TFF from per-client statistics (e.g. the ``Harvester``'s) and the server's ``prior`` (a kept
    model's): the readout of IncFed eq. 10."""
    n_outputs, n_features = stats[0].A.shape
    comp = build_incfed_stats_computation(n_outputs, n_features, per_client)
    values = [(s.A, s.B, np.float64(s.n), np.float64(s.clients)) for s in stats]
    seeds = [np.zeros(2, np.int64)] * len(stats)
    _, w_clients, singular, _, _, _ = comp(values, np.float64(l2), seeds, _prior_values(prior, n_outputs, n_features))
    return _received_readout(w_clients, singular, l2)


# --------------------------------------------------------------------------- streaming subrounds
@dataclasses.dataclass(frozen=True, eq=False)
class StreamedIncFed:
    """IncFed over a stream: the readout (N_Y, N_F), the summed statistics, subrounds run."""

    readout: np.ndarray
    stats: RidgeStats
    subrounds: int


def stream_incfed(weights: ReservoirWeights, source: ClientSource | SequenceDataset, spec: StateSpec, l2: float, *,
                  subround_size: int = 500, clients_per_call: int = 100, per_client: bool = False,
                  batch_size: int = 256, checkpoint: str | os.PathLike | None = None,
                  progress: bool = False) -> StreamedIncFed:
    """IncFed (eqs. 6–10) over ``source`` in TFF subrounds of ``subround_size`` clients; sequences of unequal
    length are right-padded to their subround's longest and harvested over their own steps (per-step labels need
    one length)."""
    if not is_count(clients_per_call, 1):
        raise ValueError(f"clients_per_call: expected an integer ≥ 1, got {clients_per_call!r}.")
    source = DatasetClients(source) if isinstance(source, SequenceDataset) else source
    reservoir = (weights.kernel, weights.recurrent, weights.bias, weights.gain)
    shape: dict[str, tuple] = {}

    def subround(clients: SequenceDataset, first: int):
        members = list(clients.clients.values())
        steps = max(c.x.shape[1] for c in members)
        ragged = any(c.ragged or c.x.shape[1] != steps for c in members)
        arrays = [_client_arrays(c, clients.n_classes, spec, steps) + ((c.steps.astype(np.int32),) if ragged else ())
                  for c in members]
        key = (arrays[0][0].shape[2], arrays[0][1].ndim == 3, clients.n_classes)
        if {(a[0].shape[2], a[1].ndim == 3, clients.n_classes) for a in arrays} != {shape.setdefault("key", key)}:
            raise ValueError(f"clients: every client needs sequences of the first one's {key[0]} features and labels "
                             f"of the same kind; subround from client {first} differs.")
        n_inputs, per_step, n_classes = key
        if per_step and ragged:
            raise ValueError(f"clients: per-step labels of sequences of unequal length (subround from client {first}); "
                             "cut them to one length (--ragged crop) or drop --subround-size.")
        comp = build_incfed_computation(n_inputs, steps, weights.units, n_classes, weights.leaky, spec, per_step,
                                        ragged=ragged, layers=weights.layers, readout_from=weights.readout_from,
                                        activation=weights.activation, sum_only=True)
        blocks = [arrays[i:i + clients_per_call] for i in range(0, len(arrays), clients_per_call)]
        datasets = [tf.data.Dataset.from_tensor_slices(tuple(np.concatenate(part) for part in zip(*block)))
                    .batch(batch_size) for block in blocks]
        a, b, n, _ = comp(reservoir, datasets)
        return [RidgeStats(np.asarray(a), np.asarray(b), int(n), len(arrays), spec.readout_bias)], {}

    identity = stream_identity("incfed", source, subround_size, weights, spec)
    (total,), _, done = drive(source, subround_size, subround, Checkpoint(checkpoint, identity), progress,
                              "incfed subrounds")
    return StreamedIncFed(total.solve(l2, per_client=per_client), total, done)


# --------------------------------------------------------------------------- the registry's run function
def incfed_readout(run: Run, weights: ReservoirWeights, per_client: bool, l2: float, *, releases: int = 1,
                   prior: RidgeStats | None = None) -> tuple[np.ndarray, RidgeStats, dict[str, Any]]:
    """The IncFed readout of ``run``'s training clients plus the server's ``prior`` statistics at λ = ``l2``, the
    aggregate statistics it is solved from (what the mechanism released under privacy settings, plus ``prior``)
    and its privacy sections."""
    config = run.config
    subrounds = subround_size_of(config, len(run.train_ids))
    if subrounds is not None:  # IncFedConfig checks backend and privacy
        streamed = stream_incfed(weights, run.training_clients(), run.spec, l2, subround_size=subrounds,
                                 per_client=per_client, progress=True)
        if prior is None:
            return streamed.readout, streamed.stats, plain_sections(run)
        total = streamed.stats + prior
        return total.solve(l2, per_client=per_client), total, plain_sections(run)
    backend = getattr(config, "resolved_backend", config.backend)
    if backend == "tff" and not config.privacy.requested:  # fixed reservoir: TFF only sums
        stats = run.stats(weights)
        total = RidgeStats.sum([*stats, *([prior] if prior is not None else [])])
        return federate_stats_tff(stats, l2, per_client=per_client, prior=prior), total, plain_sections(run)
    if backend == "tff":  # clients harvest, clip and add noise inside TFF
        agg = tff_aggregation(run, releases)
        clients = list(run.dataset.select(run.train_ids).values())
        out = federate_tff(weights, clients, run.n_outputs, run.spec, l2, per_client=per_client, aggregation=agg,
                           prior=prior)
        total = out.released if prior is None else out.released + prior
        return out.readout, total, stats_sections(agg, out.clipped_values, out.eigenvalues_raised,
                                                  get_algorithm(run.name).privacy)
    total = run.total_stats(weights)
    total = total if prior is None else total + prior
    return total.solve(l2, per_client=per_client), total, plain_sections(run)


TFF_AT_ONCE = 100
"""Training clients a TFF run without privacy settings federates in one computation (TFF copies every client's
statistics, megabytes each); above, it streams them in subrounds of :data:`TFF_SUBROUND` clients."""

TFF_SUBROUND = 500
"""Clients per subround of a TFF run that streams by default (:data:`TFF_AT_ONCE`)."""


def subround_size_of(config: IncFedConfig, clients: int) -> int | None:
    """The subround size IncFed streams ``clients`` training clients in: ``config.subround_size``, else
    :data:`TFF_SUBROUND` on TFF without privacy settings above :data:`TFF_AT_ONCE` clients; ``None``: at once."""
    size = getattr(config, "subround_size", None)
    if size is not None:
        return size
    backend = getattr(config, "resolved_backend", config.backend)
    return TFF_SUBROUND if backend == "tff" and not config.privacy.requested and clients > TFF_AT_ONCE else None


def run_incfed(dataset: SequenceDataset, split: Split, config: IncFedConfig) -> dict:
    """IncFed / FedRR (IncFed eqs. 6–10); with ``add_to``, the saved model's kept statistics added to the training
    clients' before eq. 10 (:mod:`tff_esn.closed_form.extend`)."""
    extension = None if config.add_to is None else extend.load_extension(config.add_to)
    if extension is not None:
        run = Run(dataset, split, extend.extension_config(config, extension), "incfed")
        extend.check_extends(extension, dataset, split, run.weights, dp=config.privacy.dp_requested)
        run.l2_choice = extend.l2_choice(config, extension)
    else:
        run = Run(dataset, split, config, "incfed")
    l2 = run.choose_exact_l2(per_client=config.l2_per_client)  # no harvest under privacy settings
    readout, stats, privacy = incfed_readout(run, run.weights, config.l2_per_client, l2,
                                             prior=None if extension is None else extension.model.stats)
    model = run.model(readout)
    if config.keep_stats or extension is not None:
        model = model.replace(stats=stats)
    result = {**run.report(model, incfed_cost(run.n_features, run.n_outputs), backend=config.resolved_backend,
                           subround_size=subround_size_of(config, len(run.train_ids))), **privacy}
    if extension is not None:
        result["extends"] = extension.record()
    return result
