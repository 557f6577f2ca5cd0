"""Per-client reservoir states and ridge statistics (IncFed eqs. 6–7), computed once and reused:
a :class:`Harvester` caches them per (reservoir, client)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence

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
        for rows, _, _, _, x, lengths in self._blocks(parts, _ragged(parts)):
            yield rows, x, lengths

    def _blocks(self, parts: Sequence[ClientSequences], ragged: bool) -> Iterator[tuple[np.ndarray, ...]]:
        """:meth:`batches` with each row's part (``owner``), row within it (``local``) and the parts by index:
        ``(rows, owner, local, parts, x, lengths)``; of equal lengths, consecutive rows, ``parts`` read in order,
        each once."""
        if ragged:
            steps = np.concatenate([p.steps for p in parts])
            starts = np.cumsum([0] + [len(p) for p in parts])
            for rows in ragged_batches(steps, parts[0].x.shape[2], self.batch_size):
                owner = np.searchsorted(starts, rows, side="right") - 1
                local = rows - starts[owner]
                longest = int(steps[rows].max())
                x = np.zeros((rows.size, longest, parts[0].x.shape[2]), np.float32)
                read = {}
                for k in np.unique(owner).tolist():
                    mine = owner == k
                    read[k] = parts[k]
                    held = read[k].x[local[mine], :longest]
                    x[mine, :held.shape[1]] = held
                yield rows, owner, local, read, x, steps[rows]
            return
        pieces: list[tuple[int, ClientSequences, int, int]] = []
        filled = first_row = 0
        for k in range(len(parts)):
            part, lo = parts[k], 0
            while lo < len(part):
                hi = min(len(part), lo + self.batch_size - filled)
                pieces.append((k, part, lo, hi))
                filled, lo = filled + hi - lo, hi
                if filled == self.batch_size:
                    yield _block(pieces, first_row)
                    pieces, filled, first_row = [], 0, first_row + filled
        if pieces:
            yield _block(pieces, first_row)

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

    def stream_stats(self, weights: ReservoirWeights, stats: Sequence[str],
                     after: Sequence[str] = ()) -> Iterator[RidgeStats]:
        """The statistics of ``stats`` in that order, each as :meth:`cache` ``(weights, [*stats, *after],
        stats=stats)`` on a new harvester computes it (the same batches, the same bits; ``after``: clients pooled
        behind them, none of ``stats``), yielded as soon as it and those before it are done, nothing cached: equal
        lengths hold one batch and its clients, a ragged pool the clients it interleaves, and per-step labels of
        several lengths (one pool each) the statistics of a later pool until those before them are done."""
        self._check_inputs(weights)
        order = [*stats, *after]
        keys = np.empty(len(order), np.int64)
        shapes: dict[int, set] = {}
        for i, cid in enumerate(order):
            client = self.dataset.clients[cid]
            self.spec.check(client.shortest, client.per_step)
            keys[i] = client.x.shape[1] if client.per_step else -1
            shapes.setdefault(int(keys[i]), set()).add(-1 if client.ragged else client.x.shape[1])
        ready: dict[int, RidgeStats] = {}
        done = 0
        for key in dict.fromkeys(keys.tolist()):
            members = np.flatnonzero(keys == key)
            pool = _Clients(self.dataset, [order[i] for i in members])
            ragged = len(shapes[key]) > 1 or -1 in shapes[key]
            for k, part, _ in self._flow(weights, pool, (members < len(stats)).tolist(), keep=False, ragged=ragged):
                ready[int(members[k])] = part
                while done in ready:
                    yield ready.pop(done)
                    done += 1

    def _check_inputs(self, weights: ReservoirWeights) -> None:
        if weights.n_inputs != len(self.dataset.feature_names):
            raise ValueError(f"reservoir: has {weights.n_inputs} inputs, the data has "
                             f"{len(self.dataset.feature_names)} features.")

    def _pass(self, weights: ReservoirWeights, clients: list[ClientSequences],
              with_stats: list[bool]) -> list[tuple[RidgeStats | None, Features]]:
        """One pass of the pooled ``clients`` through the reservoir: :class:`Features` and, asked, statistics."""
        self._check_inputs(weights)
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
        results: list = [None] * len(clients)
        for k, stats, features in self._flow(weights, clients, with_stats):
            results[k] = (stats, features)
        return results

    def _flow(self, weights: ReservoirWeights, clients: Sequence[ClientSequences], with_stats: Sequence[bool], *,
              keep: bool = True,
              ragged: bool | None = None) -> Iterator[tuple[int, RidgeStats | None, Features | None]]:
        """One pass of the pooled ``clients`` (one pool of :meth:`_pass`) through the reservoir, batch by batch:
        ``(k, statistics if asked, Features)`` of client ``k`` once all its rows have passed; ``keep=False``: only
        the clients with statistics, without Features, and no batch after their last."""
        spec = self.spec
        per_step_all = clients[0].per_step and spec.state_mode == "all"
        mode = "all" if per_step_all else ("mean+last" if spec.state_mode == "all" else spec.state_mode)
        in_loop = spec.state_mode == "all" and any(with_stats)
        row = spec.width(weights)
        width = row * (2 if mode == "mean+last" else 1)
        tail = (clients[0].x.shape[1] - spec.washout,) if per_step_all else ()
        left = sum(map(bool, with_stats))
        if not keep and not left:
            return
        open_: dict[int, list] = {}  # k: [client, targets, states, rows done, (A, B, n)]
        ragged = _ragged(clients) if ragged is None else ragged
        for _, owner, local, read, x, lengths in self._blocks(clients, ragged):
            present = list(dict.fromkeys(owner.tolist()))
            for k in present:
                if k not in open_:
                    client = read[k]
                    targets = self.targets(client) if with_stats[k] else None
                    if in_loop and per_step_all and targets is not None:
                        targets = targets[:, spec.washout:]
                    held = keep or (with_stats[k] and not in_loop)
                    states = np.zeros((len(client),) + tail + (width,), np.float64) if held else None
                    open_[k] = [client, targets, states, 0, [0, 0, 0]]
            counted = [k for k in present if with_stats[k]]
            groups = np.full(owner.size, -1)
            batch_targets = None
            for g, k in enumerate(counted):
                mine = owner == k
                groups[mine] = g
                if in_loop:
                    targets = open_[k][1]
                    if batch_targets is None:
                        batch_targets = np.zeros((owner.size,) + targets.shape[1:], targets.dtype)
                    batch_targets[mine] = targets[local[mine]]
            out, parts = states_and_statistics(
                x, weights.kernel, weights.recurrent, weights.bias, weights.gain, weights.leaky, keep=mode,
                washout=spec.washout, lengths=lengths, targets=batch_targets, groups=groups,
                n_groups=len(counted), readout_bias=spec.readout_bias, layers=weights.layers,
                readout_from=weights.readout_from, activation=weights.activation,
                products=np.dtype(self.dataset.task.products), with_inputs=spec.raw_inputs)
            for k, part in zip(counted, parts or ()):
                total = open_[k][4]
                for j in range(3):
                    total[j] += part[j]
            for k in present:
                entry = open_[k]
                mine = owner == k
                if entry[2] is not None:
                    entry[2][local[mine]] = out[mine]
                entry[3] += int(np.count_nonzero(mine))
                if entry[3] < len(entry[0]):
                    continue
                del open_[k]
                if keep or with_stats[k]:
                    yield k, *self._finish(weights, entry, with_stats[k] and in_loop, with_stats[k], keep)
                left -= bool(with_stats[k])
                if not keep and not left:
                    return

    def _finish(self, weights: ReservoirWeights, entry: list, in_loop: bool, with_stats: bool,
                keep: bool) -> tuple[RidgeStats | None, Features | None]:
        """A client's statistics (when asked) and :class:`Features` (``keep``) once all its rows have passed."""
        spec = self.spec
        client, targets, states, _, totals = entry
        stats = None
        if in_loop:
            stats = RidgeStats(totals[0], totals[1], totals[2], 1, spec.readout_bias)
        elif with_stats:
            stats = RidgeStats.from_states(states, targets, bias=spec.readout_bias)
        if not keep:
            return stats, None
        if client.per_step and spec.state_mode == "all":
            labels = client.y[:, spec.washout:].reshape(-1)
        else:
            labels = client.y[:, -1] if client.per_step else client.y
        row = spec.width(weights)
        kept = states.reshape(-1, states.shape[-1])
        features = Features(np.ascontiguousarray(kept[:, :row]), labels,
                            np.ascontiguousarray(kept[:, row:]) if kept.shape[1] > row else None)
        return stats, features

    def holds(self, weights: ReservoirWeights) -> bool:
        """Whether anything of ``weights`` is cached."""
        return any(key[0] == weights.key for key in (*self._stats, *self._features))

    def scores(self, readout: np.ndarray, weights: ReservoirWeights, ids) -> tuple[np.ndarray, np.ndarray]:
        """Readout outputs (m, N_Y) and labels (m,) over the clients ``ids`` (IncFed eq. 2)."""
        self.cache(weights, ids, stats=())
        feats = [self.features(weights, cid) for cid in ids]
        states = np.concatenate([f.states for f in feats])
        return predict(readout, states, bias=self.spec.readout_bias), np.concatenate([f.labels for f in feats])


def _ragged(parts: Sequence[ClientSequences]) -> bool:
    """Whether pooled ``parts`` have sequences of unequal lengths."""
    return len({p.x.shape[1] for p in parts}) > 1 or any(p.ragged for p in parts)


def _block(pieces: list[tuple[int, ClientSequences, int, int]],
           first_row: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, ClientSequences], np.ndarray, None]:
    """A batch of equal-length sequences, rows ``lo:hi`` of each ``(k, part, lo, hi)``: a view of a single part."""
    owner = np.concatenate([np.full(hi - lo, k) for k, _, lo, hi in pieces])
    local = np.concatenate([np.arange(lo, hi) for _, _, lo, hi in pieces])
    if len(pieces) == 1:
        _, part, lo, hi = pieces[0]
        x = part.x[lo:hi]
    else:
        shape = pieces[0][1].x.shape
        x = np.zeros((owner.size, shape[1], shape[2]), np.float32)
        for k, part, lo, hi in pieces:
            x[owner == k] = part.x[lo:hi]
    return (np.arange(first_row, first_row + owner.size), owner, local, {k: part for k, part, _, _ in pieces}, x,
            None)


@dataclasses.dataclass(frozen=True, eq=False)
class _Clients(Sequence):
    """The clients ``ids`` of ``dataset`` as a sequence, each read when indexed (a lazy source generates it then)."""

    dataset: SequenceDataset
    ids: list[str]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, k):
        return self.dataset.clients[self.ids[k]]
