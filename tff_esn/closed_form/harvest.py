"""Per-client reservoir states and ridge statistics (IncFed eqs. 6–7), computed once and reused:
a :class:`Harvester` caches them per (reservoir, client)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

import numpy as np

from tff_esn.data.sequences import ClientSequences, SequenceDataset
from tff_esn.esn.ridge import RidgeStats, predict
from tff_esn.esn.states_numpy import HARVEST_BATCH, ragged_batches, states_and_statistics
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.common.tasks import CLASSIFY, Task

REAL = Task("regress")
"""The targets of float labels: real values (forecast and regress encode alike)."""


def readout_targets(client: ClientSequences, n_outputs: int, state_mode: str) -> np.ndarray:
    """Training targets for the state mode: (n, N_Y), or (n, T, N_Y) for per-step labels with ``all``."""
    y = client.y
    if client.per_step and state_mode == "last":
        y = y[:, -1]
    return (REAL if client.real else CLASSIFY).encode(y, n_outputs)


@dataclasses.dataclass(frozen=True, eq=False)
class Features:
    """State rows scored by a readout (m, :meth:`StateSpec.width`), their labels (m,) and, beside the mean, each
    sequence's ``last`` state."""

    states: np.ndarray
    labels: np.ndarray
    last: np.ndarray | None = None


class Harvester:
    """Caches each client's training statistics and evaluation states, per reservoir."""

    def __init__(self, dataset: SequenceDataset, spec: StateSpec, *, batch_size: int = HARVEST_BATCH):
        self.dataset = dataset
        self.spec = spec
        self.batch_size = batch_size
        self._stats: dict[tuple[str, str], RidgeStats] = {}
        self._features: dict[tuple[str, str], Features] = {}

    def n_features(self, weights: ReservoirWeights) -> int:
        """Columns of the readout: the inputs and units it sees (:meth:`StateSpec.width`; +1 with the bias input)."""
        return self.spec.width(weights) + int(self.spec.readout_bias)

    def batches(self, *parts: ClientSequences) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
        """``(rows, x, lengths)`` batches of the pooled sequences of ``parts`` (length-sorted when ragged)."""
        steps = np.concatenate([p.steps for p in parts])
        starts = np.cumsum([0] + [len(p) for p in parts])
        ragged = len({p.x.shape[1] for p in parts}) > 1 or any(p.ragged for p in parts)
        blocks = ragged_batches(steps, parts[0].x.shape[2], self.batch_size) if ragged else \
            [np.arange(i, min(i + self.batch_size, steps.size)) for i in range(0, steps.size, self.batch_size)]
        for rows in blocks:
            owner = np.searchsorted(starts, rows, side="right") - 1
            longest = int(steps[rows].max())
            if not ragged and owner[0] == owner[-1]:  # consecutive rows of one part: a view
                x = parts[owner[0]].x[rows[0] - starts[owner[0]]:rows[-1] + 1 - starts[owner[0]]]
            else:
                x = np.zeros((rows.size, longest, parts[0].x.shape[2]), np.float32)
                for k in np.unique(owner):
                    mine = owner == k
                    held = parts[k].x[rows[mine] - starts[k], :longest]
                    x[mine, :held.shape[1]] = held
            yield rows, x, steps[rows] if ragged else None

    def targets(self, client: ClientSequences) -> np.ndarray:
        """Training targets matching the state mode (:func:`readout_targets`)."""
        return readout_targets(client, self.dataset.n_classes, self.spec.state_mode)

    def stats(self, weights: ReservoirWeights, cid: str) -> RidgeStats:
        """Ridge statistics of client ``cid``'s states (IncFed eqs. 6–7), cached (see :meth:`cache`)."""
        self.cache(weights, [cid])
        return self._stats[(weights.key, cid)]

    def features(self, weights: ReservoirWeights, cid: str) -> Features:
        """Client ``cid``'s evaluation states and labels (as its ``StateSpec`` scores them), cached."""
        self.cache(weights, [cid], stats=())
        return self._features[(weights.key, cid)]

    def cache(self, weights: ReservoirWeights, ids: Iterable[str], *, stats: Iterable[str] | None = None) -> None:
        """Caches the evaluation states of ``ids`` and the statistics of ``stats`` (default ``ids``) in one pass."""
        ids = list(ids)
        with_stats = ids if stats is None else list(stats)
        wanted = set(with_stats)
        todo = []
        for cid in dict.fromkeys([*ids, *with_stats]):  # first-seen order: the same pooled batches every run
            key = (weights.key, cid)
            needs_stats = cid in wanted and key not in self._stats
            if key in self._features and not needs_stats:
                continue
            client = self.dataset.select([cid])[cid]
            self.spec.check(client.shortest, client.per_step)
            if key in self._features and self.spec.state_mode != "all":
                self._stats[key] = RidgeStats.from_states(self._features[key].states, self.targets(client),
                                                          bias=self.spec.readout_bias)
            else:
                todo.append((cid, client, needs_stats))
        if todo:
            results = self._pass(weights, [c for _, c, _ in todo], [n for _, _, n in todo])
            for (cid, _, _), (part, features) in zip(todo, results):
                key = (weights.key, cid)
                self._features.setdefault(key, features)
                if part is not None:
                    self._stats[key] = part

    def adopt(self, weights: ReservoirWeights, source: "Harvester", ids: Iterable[str]) -> None:
        """Caches the ``mean``/``last`` states of ``ids`` from ``source``, an ``all`` harvester of the same data."""
        for cid in ids:
            features = source.features(weights, cid)
            self._features.setdefault((weights.key, cid), Features(
                features.last if self.spec.state_mode == "last" else features.states, features.labels))

    def stats_of(self, weights: ReservoirWeights, client: ClientSequences) -> RidgeStats:
        """Statistics of any sequences (not cached), accumulated over batches of sequences."""
        self.spec.check(client.shortest, client.per_step)
        return self._pass(weights, [client], [True])[0][0]

    def _pass(self, weights: ReservoirWeights, clients: list[ClientSequences],
              with_stats: list[bool]) -> list[tuple[RidgeStats | None, Features]]:
        """One pass of the pooled ``clients`` through the reservoir: :class:`Features` and, asked, statistics."""
        if weights.n_inputs != len(self.dataset.feature_names):
            raise ValueError(f"reservoir: has {weights.n_inputs} inputs, the data has "
                             f"{len(self.dataset.feature_names)} features.")
        pools: dict[int, list[int]] = {}
        for i, c in enumerate(clients):
            pools.setdefault(c.x.shape[1] if c.per_step else -1, []).append(i)
        out: list = [None] * len(clients)
        for members in pools.values():
            results = self._pooled_pass(weights, [clients[i] for i in members], [with_stats[i] for i in members])
            for i, result in zip(members, results):
                out[i] = result
        return out

    def _pooled_pass(self, weights: ReservoirWeights, clients: list[ClientSequences],
                     with_stats: list[bool]) -> list[tuple[RidgeStats | None, Features]]:
        spec = self.spec
        per_step_all = clients[0].per_step and spec.state_mode == "all"
        keep = "all" if per_step_all else ("mean+last" if spec.state_mode == "all" else spec.state_mode)
        sizes = [len(c) for c in clients]
        starts = np.concatenate([[0], np.cumsum(sizes)])
        in_loop = spec.state_mode == "all" and any(with_stats)
        groups = np.repeat(np.where(with_stats, np.arange(len(clients)), -1), sizes)
        targets = np.concatenate([self.targets(c) for c in clients]) if any(with_stats) else None
        if in_loop and per_step_all:
            targets = targets[:, spec.washout:]
        row = spec.width(weights)
        width = row * (2 if keep == "mean+last" else 1)
        states = np.zeros((starts[-1],) + ((clients[0].x.shape[1] - spec.washout,) if per_step_all else ())
                          + (width,), np.float64)
        totals = [[0, 0, 0] for _ in clients]
        for rows, x, lengths in self.batches(*clients):
            states[rows], parts = states_and_statistics(
                x, weights.kernel, weights.recurrent, weights.bias, weights.gain, weights.leaky, keep=keep,
                washout=spec.washout, lengths=lengths, targets=targets[rows] if in_loop else None,
                groups=groups[rows], n_groups=len(clients), readout_bias=spec.readout_bias, layers=weights.layers,
                readout_from=weights.readout_from, activation=weights.activation,
                products=np.dtype(self.dataset.task.products), with_inputs=spec.raw_inputs)
            for total, part in zip(totals, parts or ()):
                for j in range(3):
                    total[j] += part[j]
        results = []
        for k, client in enumerate(clients):
            rows = slice(starts[k], starts[k + 1])
            if per_step_all:
                labels = client.y[:, spec.washout:].reshape(-1)
            else:
                labels = client.y[:, -1] if client.per_step else client.y
            kept = states[rows].reshape(-1, width)
            features = Features(np.ascontiguousarray(kept[:, :row]), labels,
                                np.ascontiguousarray(kept[:, row:]) if width > row else None)
            if not with_stats[k]:
                stats = None
            elif in_loop:
                stats = RidgeStats(totals[k][0], totals[k][1], totals[k][2], 1, spec.readout_bias)
            else:
                stats = RidgeStats.from_states(states[rows], targets[rows], bias=spec.readout_bias)
            results.append((stats, features))
        return results

    def scores(self, readout: np.ndarray, weights: ReservoirWeights, ids) -> tuple[np.ndarray, np.ndarray]:
        """Readout outputs (m, N_Y) and labels (m,) over the clients ``ids`` (IncFed eq. 2)."""
        self.cache(weights, ids, stats=())
        feats = [self.features(weights, cid) for cid in ids]
        states = np.concatenate([f.states for f in feats])
        return predict(readout, states, bias=self.spec.readout_bias), np.concatenate([f.labels for f in feats])
