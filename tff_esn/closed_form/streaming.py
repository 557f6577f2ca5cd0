"""Clients in streaming subrounds: :func:`drive` adds each subround's sums to ``A = Σ A_c``,
``B = Σ B_c`` (IncFed eqs. 8–9); a :class:`Checkpoint` saves them after every subround for a resumed rerun."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from tff_esn.data.sequences import SequenceDataset
from tff_esn.common.io import atomic_write
from tff_esn.common.progress import progress_bar
from tff_esn.esn.ridge import RidgeStats
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.runs.identity import differences


class ClientSource(Protocol):
    """Clients delivered in consecutive subrounds (e.g. :class:`~tff_esn.data.seed_sources.simulated.SimulatedClients`)."""

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


# (subround clients, index of its first client) -> (partial sums, partial counters)
SubroundFn = Callable[[SequenceDataset, int], tuple[Sequence[RidgeStats], dict[str, float]]]


def stream_identity(algorithm: str, source: ClientSource, subround_size: int, weights: ReservoirWeights,
                    spec: StateSpec, **settings: float | str) -> dict[str, float | str]:
    """A streamed run's :class:`Checkpoint` identity: algorithm, clients, subround size, reservoir, states read."""
    return {"algorithm": algorithm, "n_clients": source.n_clients, "subround_size": subround_size,
            "reservoir": weights.key, "state_mode": spec.state_mode, "washout": spec.washout,
            "readout_bias": spec.readout_bias, **settings}


class Checkpoint:
    """Running sums after each completed subround in one atomically replaced ``.npz`` of the run ``identity``."""

    def __init__(self, path: str | os.PathLike | None, identity: dict[str, float | str]):
        self.path = None if path is None else Path(path)
        self.identity = identity

    def load(self) -> tuple[int, list[RidgeStats], dict[str, float]] | None:
        if self.path is None or not self.path.exists():
            return None
        with np.load(self.path, allow_pickle=False) as z:
            saved = {k[len("id_"):]: z[k].item() for k in z.files if k.startswith("id_")}
            if saved != self.identity:
                raise ValueError(f"checkpoint: {self.path} belongs to another run: "
                                 f"{', '.join(differences(saved, self.identity))}; remove it or choose another file.")
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


def drive(source: ClientSource, subround_size: int, fn: SubroundFn, checkpoint: Checkpoint,
           progress: bool, desc: str) -> tuple[list[RidgeStats], dict[str, float], int]:
    """Runs ``fn`` on every subround and keeps the running sums (IncFed eqs. 8–9)."""
    total_subrounds = -(-source.n_clients // subround_size)
    state = checkpoint.load()
    done, parts, counters = state if state is not None else (0, None, {})
    bar = progress_bar(wanted=progress, total=total_subrounds, initial=done, desc=desc, unit="subround")
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


