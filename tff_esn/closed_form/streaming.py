"""IncFed and pFedRR over very many clients in streaming subrounds (memory ∝ statistics).

IncFed's server needs only the sums ``A = Σ A_c`` and ``B = Σ B_c`` (IncFed eqs. 8–9), and
sums can be formed piece by piece. The drivers here take the clients in subrounds of
``subround_size``: each subround's clients are generated (or selected), reduced to their
subround sum, added to the running server sum, and dropped. Memory is one subround's data
plus the statistics ``N_Y·N_F + N_F²`` floats, whatever the number of clients; the readout
``W = A (B + λI)⁻¹`` (IncFed eq. 10) is solved once at the end and equals the one of all
clients at once (:func:`tff_esn.closed_form.incfed.fit_incfed`) up to the order of the float64 sums.

* :func:`stream_incfed` — each subround is one TFF computation: the clients' statistics
  computation of :mod:`tff_esn.closed_form.incfed` under ``federated_map`` and a ``federated_sum``;
  with ``--workers`` the subround's clients are split across the TFF workers.
* :func:`stream_pfedrr` — each client's statistics are sparsified locally (pFedRR eq. 2,
  I- and R- selections, :mod:`tff_esn.closed_form.pfedrr`) and the exact, I- and R- sums run side by
  side (numpy client path, like :func:`tff_esn.closed_form.pfedrr.fit_pfedrr`, which it equals).

With ``checkpoint=FILE`` the running sums are saved atomically after every subround; a
run given the same file continues after the last completed subround (a run whose worker
died stops with :class:`tff_esn.runtime.WorkerError` and resumes this way).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from tqdm.auto import tqdm

from tff_esn.lazy import LazyModule
from tff_esn.data.sequences import SequenceDataset
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.incfed import _client_arrays, build_client_stats_computation
from tff_esn.io import atomic_write
from tff_esn.closed_form.pfedrr import Reading, check_tau, client_parts, n_units
from tff_esn.privacy.aggregation import federated_stats_sum
from tff_esn.esn.ridge import RidgeStats

tf = LazyModule("tensorflow")


class ClientSource(Protocol):
    """Clients delivered in consecutive subrounds (e.g. :class:`~tff_esn.data.simulated.SimulatedClients`)."""

    n_clients: int

    def subrounds(self, size: int, *, start: int = 0) -> Iterator[SequenceDataset]: ...


@dataclasses.dataclass(frozen=True)
class DatasetClients:
    """A :class:`SequenceDataset`'s clients ``ids`` (default: all) as a :class:`ClientSource`."""

    dataset: SequenceDataset
    ids: tuple[str, ...] | None = None

    @property
    def n_clients(self) -> int:
        return len(self.ids if self.ids is not None else self.dataset.clients)

    def subrounds(self, size: int, *, start: int = 0) -> Iterator[SequenceDataset]:
        ids = list(self.ids if self.ids is not None else self.dataset.client_ids)
        for first in range(start * size, len(ids), size):
            chunk = self.dataset.select(ids[first:first + size])
            groups = {c: g for c, g in self.dataset.groups.items() if c in chunk}
            yield dataclasses.replace(self.dataset, clients=chunk, groups=groups)


@dataclasses.dataclass(frozen=True, eq=False)
class StreamedIncFed:
    """IncFed over a stream: the readout (N_Y, N_F), the summed statistics, subrounds run."""

    readout: np.ndarray
    stats: RidgeStats
    subrounds: int


@dataclasses.dataclass(frozen=True, eq=False)
class StreamedPFedRR:
    """pFedRR over a stream: FedRR, I-pFedRR and R-pFedRR readouts and the mean % of units."""

    exact: np.ndarray
    important: np.ndarray
    random: np.ndarray
    percent_units: float
    subrounds: int
    selected: dict[int, int] = dataclasses.field(default_factory=dict)  # units kept by I-pFedRR → clients

    @property
    def important_sizes(self) -> list[int]:
        """Units each client kept (I-pFedRR), in no particular order (for :func:`tff_esn.communication.pfedrr`)."""
        return [size for size, count in sorted(self.selected.items()) for _ in range(count)]


# (subround clients, index of its first client) -> (partial sums, partial counters)
SubroundFn = Callable[[SequenceDataset, int], tuple[Sequence[RidgeStats], dict[str, float]]]


class _Checkpoint:
    """Running sums after each completed subround in one ``.npz``, replaced atomically."""

    def __init__(self, path: str | os.PathLike | None, identity: dict[str, float | str]):
        self.path = None if path is None else Path(path)
        self.identity = identity

    def load(self) -> tuple[int, list[RidgeStats], dict[str, float]] | None:
        if self.path is None or not self.path.exists():
            return None
        with np.load(self.path, allow_pickle=False) as z:
            saved = {k[len("id_"):]: z[k].item() for k in z.files if k.startswith("id_")}
            if saved != self.identity:
                raise ValueError(f"checkpoint: {self.path} belongs to another run ({saved}); this run is "
                                 f"{self.identity}. Remove it or choose another file.")
            parts = [RidgeStats(z[f"A{i}"], z[f"B{i}"], int(z[f"n{i}"]), int(z[f"clients{i}"]), bool(z["bias"]))
                     for i in range(int(z["parts"]))]
            counters = {k[len("count_"):]: float(z[k]) for k in z.files if k.startswith("count_")}
            return int(z["done"]), parts, counters

    def save(self, done: int, parts: Sequence[RidgeStats], counters: dict[str, float]) -> None:
        if self.path is None:
            return
        arrays = {"done": done, "parts": len(parts), "bias": parts[0].bias}
        for i, p in enumerate(parts):
            arrays.update({f"A{i}": p.A, f"B{i}": p.B, f"n{i}": p.n, f"clients{i}": p.clients})
        arrays.update({f"count_{k}": v for k, v in counters.items()})
        arrays.update({f"id_{k}": v for k, v in self.identity.items()})
        with atomic_write(self.path) as fh:
            np.savez(fh, **arrays)


def _check_size(subround_size: int) -> None:
    if not isinstance(subround_size, int) or isinstance(subround_size, bool) or subround_size < 1:
        raise ValueError(f"subround_size: expected an integer ≥ 1, got {subround_size!r}.")


def _drive(source: ClientSource, subround_size: int, fn: SubroundFn, checkpoint: _Checkpoint,
           progress: bool, desc: str) -> tuple[list[RidgeStats], dict[str, float], int]:
    """Runs ``fn`` on every subround and keeps the running sums (IncFed eqs. 8–9)."""
    _check_size(subround_size)
    total_subrounds = -(-source.n_clients // subround_size)
    state = checkpoint.load()
    done, parts, counters = state if state is not None else (0, None, {})
    bar = tqdm(total=total_subrounds, initial=done, desc=desc, unit="subround", disable=not progress)
    try:
        for clients in source.subrounds(subround_size, start=done):  # no enumerate: it would keep the last item
            new_parts, new_counters = fn(clients, done * subround_size)
            del clients  # not held while the next subround is generated
            parts = list(new_parts) if parts is None else [p + q for p, q in zip(parts, new_parts)]
            for key, value in new_counters.items():
                counters[key] = counters.get(key, 0.0) + value
            done += 1
            checkpoint.save(done, parts, counters)
            bar.update(1)
    finally:
        bar.close()
    if parts is None:
        raise ValueError("clients: the source delivered no clients.")
    return parts, counters, done


@functools.lru_cache(maxsize=16)
def build_subround_computation(n_inputs: int, steps: int, units: int, n_classes: int, leaky: float,
                               spec: StateSpec, per_step_targets: bool):
    """``(reservoir@SERVER, datasets@CLIENTS) -> Σ_c (A_c, B_c, n_c, 1)@SERVER`` (IncFed eqs. 6–9).

    The client computation is :func:`tff_esn.closed_form.incfed.build_client_stats_computation`; the sum is
    :func:`tff_esn.privacy.aggregation.federated_stats_sum` without privacy (subrounds refuse the
    privacy flags).
    """
    import tensorflow_federated as tff

    client_stats = build_client_stats_computation(n_inputs, steps, units, n_classes, leaky, spec, per_step_targets)
    dataset_type, reservoir_type = client_stats.type_signature.parameter

    @tff.federated_computation(tff.FederatedType(reservoir_type, tff.SERVER), tff.FederatedType(dataset_type, tff.CLIENTS))
    def subround_sum(reservoir, datasets):
        local = tff.federated_map(client_stats, (datasets, tff.federated_broadcast(reservoir)))
        total, _ = federated_stats_sum(local, None)  # the one aggregation point (plain sum here)
        return total

    return subround_sum


def stream_incfed(weights: ReservoirWeights, source: ClientSource | SequenceDataset, spec: StateSpec, l2: float, *,
                  subround_size: int = 500, clients_per_call: int = 100, per_client: bool = False,
                  batch_size: int = 256, checkpoint: str | os.PathLike | None = None,
                  progress: bool = False) -> StreamedIncFed:
    """IncFed (IncFed eqs. 6–10) over ``source`` in TFF subrounds of ``subround_size`` clients.

    Each TFF client of a subround carries a block of ``clients_per_call`` consecutive
    clients: their sequences form one dataset, whose statistics are the sum of theirs
    (IncFed eqs. 8–9 — the sum is associative), so the driver builds and serialises one
    ``tf.data`` dataset per block instead of one per client. The client count (for λ per
    client) is that of the source's clients, not of the blocks. ``clients_per_call=1`` is
    one TFF client per client. FedAvg cannot be blocked this way: its server averages
    per-client *models* trained from the same start, and a block trained as one client
    is another model than the average of its members' (thesis Alg. 2).

    Every client must have sequences of the same (T, F) (one computation shape). Raises
    ``ValueError`` for bad arguments or shapes, :class:`~tff_esn.esn.ridge.SingularSystemError` (at ``l2 = 0``)
    for a singular system and :class:`~tff_esn.runtime.WorkerError` when a worker is lost.
    """
    if not isinstance(clients_per_call, int) or isinstance(clients_per_call, bool) or clients_per_call < 1:
        raise ValueError(f"clients_per_call: expected an integer ≥ 1, got {clients_per_call!r}.")
    source = DatasetClients(source) if isinstance(source, SequenceDataset) else source
    reservoir = (weights.kernel, weights.recurrent, weights.bias, weights.gain)
    shape: dict[str, tuple] = {}

    def subround(clients: SequenceDataset, first: int):
        arrays = [_client_arrays(c, clients.n_classes, spec) for c in clients.clients.values()]
        key = (arrays[0][0].shape[1:], arrays[0][1].ndim == 3, clients.n_classes)
        if {(x.shape[1:], t.ndim == 3, clients.n_classes) for x, t in arrays} != {shape.setdefault("key", key)}:
            raise ValueError(f"clients: every client needs sequences of the first one's (T, F) {key[0]} and "
                             f"labels of the same kind; subround from client {first} differs.")
        (steps, n_inputs), per_step, n_classes = key
        if n_inputs != weights.n_inputs:
            raise ValueError(f"reservoir: has {weights.n_inputs} inputs, the clients' data has {n_inputs} features.")
        comp = build_subround_computation(n_inputs, steps, weights.units, n_classes, float(weights.leaky), spec,
                                          per_step)
        blocks = [arrays[i:i + clients_per_call] for i in range(0, len(arrays), clients_per_call)]
        datasets = [tf.data.Dataset.from_tensor_slices(tuple(np.concatenate(part) for part in zip(*block)))
                    .batch(batch_size) for block in blocks]
        a, b, n, _ = comp(reservoir, datasets)
        return [RidgeStats(np.asarray(a), np.asarray(b), int(n), len(arrays), spec.readout_bias)], {}

    identity = {"algorithm": "incfed", "n_clients": source.n_clients, "subround_size": subround_size,
                "reservoir": weights.key}
    (total,), _, done = _drive(source, subround_size, subround, _Checkpoint(checkpoint, identity), progress,
                               "incfed subrounds")
    return StreamedIncFed(total.solve(l2, per_client=per_client), total, done)


def stream_pfedrr(weights: ReservoirWeights, source: ClientSource | SequenceDataset, spec: StateSpec, tau: float,
                  l2: float, *, seed: int = 0, subround_size: int = 500, per_client: bool = False,
                  batch_size: int = 256, checkpoint: str | os.PathLike | None = None,
                  progress: bool = False, reading: Reading = "consistent") -> StreamedPFedRR:
    """FedRR, I-pFedRR and R-pFedRR (pFedRR eqs. 2–5) over ``source`` in subrounds.

    Client number ``i`` of the stream draws its R- units with seed ``(seed, i)``, as in
    :func:`tff_esn.closed_form.pfedrr.fit_pfedrr`, so both give the same readouts on the same clients.
    """
    check_tau(tau)
    source = DatasetClients(source) if isinstance(source, SequenceDataset) else source

    def subround(clients: SequenceDataset, first: int):
        harvester = Harvester(clients, spec, batch_size=batch_size)
        exact, important, random = [], [], []
        counters: dict[str, float] = {"units": 0}
        for i, cid in enumerate(clients.client_ids):
            stats = harvester.stats(weights, cid)
            parts = client_parts(stats, tau, seed, first + i, reading)
            exact.append(stats)
            important.append(parts.important)
            random.append(parts.random)
            size = int(parts.important_units.size)
            counters["units"] += size
            counters[f"size{size}"] = counters.get(f"size{size}", 0) + 1
        return [RidgeStats.sum(exact), RidgeStats.sum(important), RidgeStats.sum(random)], counters

    identity = {"algorithm": "pfedrr", "n_clients": source.n_clients, "subround_size": subround_size,
                "reservoir": weights.key, "tau": float(tau), "seed": seed, "reading": reading}
    parts, counters, done = _drive(source, subround_size, subround, _Checkpoint(checkpoint, identity), progress,
                                   "pfedrr subrounds")
    exact, important, random = (p.solve(l2, per_client=per_client) for p in parts)
    percent = counters["units"] / (parts[0].clients * n_units(parts[0])) * 100
    selected = {int(k[len("size"):]): int(v) for k, v in counters.items() if k.startswith("size")}
    return StreamedPFedRR(exact, important, random, float(percent), done, selected)
