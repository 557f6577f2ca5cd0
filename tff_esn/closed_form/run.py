"""The harness every closed-form run function shares (:class:`Run`): the reservoir, the harvester,
the model selection and the report."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import logging
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.linalg

from tff_esn.common import communication
from tff_esn.common.progress import progress_bar
from tff_esn.closed_form.configs import ReadoutConfig
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.model import Model, Readout, model_of
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.selection import (AUTO, DEFAULT_STATE_MODE, DEFAULT_WASHOUT, STATE_MODE_CANDIDATES,
                                          UPWARD, Candidate, L2Choice, NEG_MSE, by_default, chooses, chosen_l2,
                                          grid_values, objective_score, on_validation, washout_candidates)
from tff_esn.closed_form.saturation import check_states
from tff_esn.closed_form.streaming import DatasetClients
from tff_esn.data.carving import carve
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.ridge import RidgeStats, with_bias
from tff_esn.privacy.record_bound import bounded
from tff_esn.common.run_warnings import RunWarning, warn

GROUPS = ("train", "val", "test")
PROGRESS_CLIENTS = 10_000
"""Training clients from which a streamed harvest shows a progress bar (:func:`~tff_esn.common.progress.progress_bar`
on stderr)."""
_LOG = logging.getLogger(__name__)
Scorer = Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]]
"""Readout outputs (m, N_Y) and labels (m,) over a list of client ids."""
Sweep = Callable[[Sequence[float]], Sequence[Scorer]]
"""The algorithm's readout at each λ of a grid, as scorers."""


_SHARED: contextvars.ContextVar[list[tuple[SequenceDataset, Any, Any]] | None] = \
    contextvars.ContextVar("shared_harvests", default=None)


@contextlib.contextmanager
def shared_harvests() -> Iterator[None]:
    """Inside, runs on one dataset and :class:`StateSpec` share one harvester and the carvings of one split and seed."""
    token = _SHARED.set([])
    try:
        yield
    finally:
        _SHARED.reset(token)


def _shared(dataset: SequenceDataset, key: Any, make: Callable[[], Any]) -> Any:
    """The scope's value for ``dataset`` and ``key`` (:func:`shared_harvests`), made once; else ``make()``."""
    known = _SHARED.get()
    if known is None:
        return make()
    for data, known_key, value in known:
        if data is dataset and known_key == key:
            return value
    known.append((dataset, key, make()))
    return known[-1][2]


def harvester_for(dataset: SequenceDataset, spec: StateSpec) -> Harvester:
    """The scope's harvester of ``dataset`` and ``spec`` (:func:`shared_harvests`), else a new one."""
    return _shared(dataset, spec, lambda: Harvester(dataset, spec))


class Run:
    """What every closed-form run shares: reservoir, ``weights``, ``harvester``, ``carving``, selection, report."""

    def __init__(self, dataset: SequenceDataset, split: Split, config: ReadoutConfig, name: str, *,
                 modes: Sequence[str] = STATE_MODE_CANDIDATES):
        dataset = bounded(dataset, split.train, config.privacy)  # DP: training records cut to the public bound
        self.dataset, self.split, self.config, self.name = dataset, split, config, name
        self._modes = tuple(modes)
        self.reservoir = config.reservoir
        self.l2_choice = L2Choice(float(config.l2), "given") if config.l2 != AUTO else None
        self.selection: dict[str, Any] | None = None
        self.carving = _shared(dataset, ("carving", split, config.seed),
                               lambda: carve(dataset, split, seed=config.seed)) if chooses(config) else None
        self._data = self.carving.dataset if self.carving else dataset
        self._units = self.carving.split.train if self.carving else tuple(split.train)
        self._owner = self.carving.owner if self.carving else None  # None: each unit is its client
        self._training = self._units
        self._drawn: dict[ReservoirConfig, ReservoirWeights] = {}
        self._harvesters: dict[StateSpec, Harvester] = {}
        self.washout_choice: dict[str, Any] | None = None
        self.washout = config.washout if config.washout != AUTO else 0
        state_mode = config.state_mode
        if state_mode == AUTO:
            state_mode = "last" if self._per_step else DEFAULT_STATE_MODE
        self._inputs = config.raw_inputs is True  # "auto": off unless the selection turns it on
        self._use(self.reservoir, state_mode)
        self._states: dict[str, float] | None = None
        self._exact_scores: dict[tuple, list[float]] = {}
        if config.washout == AUTO:
            self._choose_washout()
        if config.state_mode == AUTO or config.reservoir_search or config.raw_inputs == AUTO:
            self._select_states()

    def _use(self, reservoir: ReservoirConfig, state_mode: str, inputs: bool | None = None) -> None:
        """Makes ``reservoir`` and ``state_mode`` (and ``inputs`` beside the states, when given) the run's."""
        self._inputs = self._inputs if inputs is None else inputs
        self.reservoir = reservoir
        self.spec = StateSpec(state_mode, self.washout, self.config.readout_bias, self._inputs)
        self.harvester = self._harvester(self.spec)
        if reservoir not in self._drawn:
            self._drawn[reservoir] = ReservoirWeights.from_config(reservoir, len(self.dataset.feature_names))
        self.weights = self._drawn[reservoir]

    def _harvester(self, spec: StateSpec) -> Harvester:
        """The run's harvester of ``spec`` (:func:`harvester_for`), kept for the run."""
        if spec not in self._harvesters:
            self._harvesters[spec] = harvester_for(self._data, spec)
        return self._harvesters[spec]

    @functools.cached_property
    def _per_step(self) -> bool:
        """Whether any training client has per-step labels (each read once, none kept)."""
        return any(self.dataset.clients[c].per_step for c in self.split.train)

    @property
    def train_ids(self) -> tuple[str, ...]:
        """The training clients (during a fold of the selection, those with data outside the fold)."""
        if self._owner is None:
            return self._training
        present = {self._owner[u] for u in self._training}
        return tuple(c for c in self.split.train if c in present)

    def training_clients(self) -> DatasetClients:
        """The training clients as a stream source (:mod:`tff_esn.closed_form.streaming`)."""
        return DatasetClients(self.dataset, tuple(self.train_ids))

    @property
    def n_features(self) -> int:
        return self.harvester.n_features(self.weights)

    @property
    def n_outputs(self) -> int:
        return self.dataset.n_classes

    @property
    def l2(self) -> float:
        """The run's λ: the configured number, or the one :meth:`choose_l2` chose for ``auto``."""
        return self.l2_choice.l2

    def stats(self, weights: ReservoirWeights | Mapping[str, ReservoirWeights] | None = None, *,
              scored: bool = True) -> list[RidgeStats]:
        """The training clients' statistics (IncFed eqs. 6–7) under ``weights``, in :attr:`train_ids` order."""
        weights = weights or self.weights
        of = (lambda cid: weights[cid]) if isinstance(weights, Mapping) else (lambda cid: weights)
        scored_ids = [*self.split.val, *self.split.test] if scored else []
        if not isinstance(weights, Mapping):
            self.harvester.cache(weights, [*self._units, *scored_ids], stats=self._units)
        parts: dict[str, list[RidgeStats]] = {}
        for unit in self._training:
            owner = unit if self._owner is None else self._owner[unit]
            parts.setdefault(owner, []).append(self.harvester.stats(of(owner), unit))
        return [RidgeStats.sum(parts[cid]) for cid in self.train_ids]

    def client_stats(self, weights: ReservoirWeights | None = None) -> Iterator[RidgeStats]:
        """:meth:`stats` (scored) one client at a time: streamed (:meth:`Harvester.stream_stats`, the same bits,
        none kept) unless folds were carved, the harvester holds ``weights``' states or runs share harvests
        (:func:`shared_harvests`: kept for the next run)."""
        weights = weights or self.weights
        if self.carving is not None or self.harvester.holds(weights) or _SHARED.get() is not None:
            yield from self.stats(weights)
            return
        stream = self.harvester.stream_stats(weights, self._units, (*self.split.val, *self.split.test))
        if len(self._units) < PROGRESS_CLIENTS:
            yield from stream
            return
        with progress_bar(stream, total=len(self._units), desc=f"{self.name} clients", unit="client") as bar:
            yield from bar

    def total_stats(self, weights: ReservoirWeights | None = None) -> RidgeStats:
        """``Σ_c`` of the training clients' statistics (IncFed eqs. 8–9) in :attr:`train_ids` order, streamed
        (:meth:`client_stats`): memory of one client's, not of every client's."""
        return RidgeStats.sum(self.client_stats(weights))

    def scorer(self, readout: np.ndarray, weights: ReservoirWeights | None = None) -> Scorer:
        return lambda ids: self.harvester.scores(readout, weights or self.weights, ids)

    def _folds(self) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """``(training parts, validation ids)`` of each fold (the validation clients: one fold)."""
        if self.carving is None or self.carving.rule == "none":
            return []
        if not self.carving.carved:
            return [(self._units, tuple(self.split.val))]
        return [(self.carving.fold(k).train, fold) for k, fold in enumerate(self.carving.folds)]

    def _why_not(self) -> str:
        """Why nothing can be chosen (``""`` when something can)."""
        if self.config.privacy.requested:
            return ("privacy settings: choosing on the validation data would release readouts the privacy "
                    "accounting does not cover")
        return "" if self._folds() else "no validation data (a single training sequence)"

    def cross_validate(self, sweep: Sweep, grid: Sequence[float]) -> list[float]:
        """The objective at each λ of ``grid``, the readouts fitted per fold and their predictions pooled."""
        labels: list[np.ndarray] = []
        predicted: list[list[np.ndarray]] = [[] for _ in grid]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RunWarning)
                for training, val in self._folds():
                    self._training = training
                    for i, score in enumerate(sweep(grid)):
                        outputs, truth = score(val)
                        predicted[i].append(outputs)
                    labels.append(truth)
        finally:
            self._training = self._units
        truth = np.concatenate(labels)
        return [objective_score(self.objective, truth, np.concatenate(p), self.n_outputs) for p in predicted]

    @property
    def objective(self) -> str:
        """The validation score choices are made by (:data:`NEG_MSE` for a real-valued task)."""
        return NEG_MSE if self.dataset.task.real else self.config.objective

    @property
    def _rule(self) -> str:
        return "cross-validation" if self.carving is not None and self.carving.carved else "validation"

    def choose_exact_l2(self, *, per_client: bool = False) -> float:
        """:meth:`choose_l2` for the exact (IncFed = centralized) readout, reusing the state search's scores."""
        known = None if per_client else self._exact_scores.get((self.weights.key, self.spec))
        if known is not None and self.l2_choice is None and not self._why_not():
            self.l2_choice = on_validation(self.config.l2_grid, known, objective=self.objective,
                                           rule=self._rule)
        return self.choose_l2(lambda grid: self.exact_sweep(self.stats(), per_client=per_client)(grid))

    def choose(self, values: Sequence[Any], sweep_of: Callable[[Any], Sweep]) -> tuple[Any, dict[str, Any] | None]:
        """The value of ``values`` scoring best at its best λ (ties to the earlier) and its record."""
        if self._why_not() or len(values) == 1:
            self.choose_l2(sweep_of(values[0]))
            return values[0], None
        grid = self.config.l2_grid
        tables = [self.cross_validate(sweep_of(value), grid) for value in values]
        best = [max(scores) for scores in tables]
        index = best.index(max(best))
        if self.l2_choice is None:
            self.l2_choice = on_validation(grid, tables[index], objective=self.objective, rule=self._rule)
        return values[index], {"values": list(values), "scores": best, "chosen": values[index]}

    def choose_l2(self, sweep: Sweep) -> float:
        """The run's λ: the configured number, or for ``auto`` the best-scoring λ of ``l2_grid``."""
        if self.l2_choice is None:
            reason = self._why_not()
            if reason:
                self.l2_choice = by_default(reason)
            else:
                grid = self.config.l2_grid
                self.l2_choice = on_validation(grid, self.cross_validate(sweep, grid), objective=self.objective,
                                               rule=self._rule)
            _LOG.info("%s: λ = %g (%s)", self.name, self.l2_choice.l2, self.l2_choice.rule)
        return self.l2_choice.l2

    def _select_states(self) -> None:
        """Chooses the state mode (with the inputs beside the states and without, for ``raw_inputs`` auto), then
        each searched reservoir setting (:func:`~tff_esn.closed_form.selection.grid_values`), by the exact readout's
        best validation score."""
        config = self.config
        reason = self._why_not()
        searched = {name: getattr(self.reservoir, name) for name in config.reservoir_search}
        if reason:
            self.selection = {"rule": "default", "reason": reason, "state_mode": self.spec.state_mode,
                              "raw_inputs": self._inputs, **searched}
            return
        grid = config.l2_grid
        per_step = self._per_step
        modes = ([m for m in self._modes if not (per_step and m == "mean")]
                 if config.state_mode == AUTO else [self.spec.state_mode])
        inputs = (False, True) if config.raw_inputs == AUTO else (self._inputs,)
        table: list[Candidate] = []
        shared = "all" in modes and len(modes) > 1 and not per_step

        def trial(reservoir: ReservoirConfig, mode: str, inputs: bool) -> Candidate:
            self._use(reservoir, mode, inputs)
            scores = self._downdated_scores(grid)
            if scores is None:
                scores = self.cross_validate(lambda g: self.exact_sweep(self.stats(scored=False))(g), grid)
            self._exact_scores[(self.weights.key, self.spec)] = scores
            best = chosen_l2(scores)
            table.append(Candidate(mode, {n: getattr(reservoir, n) for n in searched}, grid[best], scores[best],
                                   inputs))
            return table[-1]

        best = None
        for raw in inputs:
            if shared:  # every mode's training states from one pass
                self._use(self.reservoir, "all", raw)
                self.harvester.cache(self.weights, self._units)
                for mode in modes:
                    if mode != "all":
                        self._harvester(dataclasses.replace(self.spec, state_mode=mode)).adopt(
                            self.weights, self.harvester, self._units)
            for mode in modes:
                candidate = trial(self.reservoir, mode, raw)
                if best is None or candidate.score > best[2].score:
                    best = self.reservoir, mode, candidate
        for name in searched:
            for value in grid_values(name, best[0]):
                reservoir = dataclasses.replace(best[0], **{name: value})
                candidate = trial(reservoir, best[1], best[2].inputs)
                if candidate.score > best[2].score:
                    best = reservoir, best[1], candidate
                elif name in UPWARD:
                    break
        chosen = best[2]
        self._use(best[0], best[1], chosen.inputs)
        shared_passes = (len(modes) - 1) * len(inputs) if shared else 0
        self.selection = {"rule": self._rule, "objective": self.objective, "state_mode": chosen.state_mode,
                          "raw_inputs": chosen.inputs, **chosen.reservoir, "score": chosen.score,
                          "budget_harvests": len(table) - shared_passes,
                          "candidates": [c.to_dict() for c in table]}
        _LOG.info("%s: states %s %s (%s)", self.name, chosen.state_mode, chosen.reservoir, self._rule)

    def _choose_washout(self) -> None:
        """Chooses ``washout="auto"`` from :func:`washout_candidates` by the exact readout's best validation score;
        per-step targets are scored on the steps after the largest candidate, which every candidate predicts."""
        spec = self.spec
        shortest = min(c.shortest for c in self.dataset.clients.values())
        values = washout_candidates(shortest)
        reason = self._why_not() or ("one state per sequence (--state-mode last)" if spec.state_mode == "last" else "")
        if reason or len(values) == 1:
            self.washout = max(w for w in values if w <= DEFAULT_WASHOUT)
            self.washout_choice = {"rule": "default", "reason": reason or "sequences too short", "chosen": self.washout}
            self._use(self.reservoir, spec.state_mode)
            return
        per_step = spec.state_mode == "all" and any(c.per_step for c in self.dataset.clients.values())
        judge = self._harvester(dataclasses.replace(spec, washout=max(values))) if per_step else None
        grid, best = self.config.l2_grid, []
        for washout in values:
            self.washout = washout
            self._use(self.reservoir, spec.state_mode)
            harvester = judge or self.harvester
            scores = self.cross_validate(lambda g: [
                (lambda ids, w=w: harvester.scores(w, self.weights, ids))
                for w in RidgeStats.sum(self.stats(scored=False)).solve_path(g)], grid)
            best.append(max(scores))
        self.washout = values[best.index(max(best))]
        self._use(self.reservoir, spec.state_mode)
        self.washout_choice = {"rule": self._rule, "objective": self.objective, "values": list(values),
                               "scores": best, "chosen": self.washout,
                               "scored_from": max(values) if per_step else None}
        _LOG.info("%s: washout %d (%s)", self.name, self.washout, self._rule)

    def _downdated_scores(self, grid: Sequence[float]) -> list[float] | None:
        """Carved folds' exact-readout scores (Woodbury, ``M = B + λI``): fold k predicts
        ``(I − G)⁻¹ S_k M⁻¹ (A − Y_kᵀS_k)ᵀ``, ``G = S_k M⁻¹ S_kᵀ``; ``None`` where that is slower."""
        if self.spec.state_mode == "all" or self.carving is None or not self.carving.carved:
            return None
        total = RidgeStats.sum(self.stats(scored=False))
        folds = []
        for _, val in self._folds():
            features = [self.harvester.features(self.weights, unit) for unit in val]
            states = np.concatenate([f.states for f in features])
            folds.append((with_bias(states) if self.spec.readout_bias else states,
                          np.concatenate([f.labels for f in features])))
            if len(states) >= total.n_features:
                return None
        eigenvalues, vectors = np.linalg.eigh(total.B)
        eigenvalues = np.clip(eigenvalues, 0.0, None)
        projected = total.A @ vectors
        predicted: list[list[np.ndarray]] = [[] for _ in grid]
        for states, labels in folds:
            u = states @ vectors
            held = projected - self.dataset.task.encode(labels, self.n_outputs).reshape(len(u), -1).T @ u
            for i, l2 in enumerate(grid):
                scaled = u / (eigenvalues + l2)
                gram = -(scaled @ u.T)
                gram.flat[::len(u) + 1] += 1.0
                try:  # Cholesky; least squares when rounding leaves the Gram matrix indefinite
                    solved = scipy.linalg.cho_solve(scipy.linalg.cho_factor(gram, check_finite=False),
                                                    scaled @ held.T, check_finite=False)
                except np.linalg.LinAlgError:
                    solved = np.linalg.lstsq(gram, scaled @ held.T, rcond=None)[0]
                predicted[i].append(solved)
        truth = np.concatenate([labels for _, labels in folds])
        return [objective_score(self.objective, truth, np.concatenate(p), self.n_outputs) for p in predicted]

    def exact_sweep(self, stats: Sequence[RidgeStats], weights: ReservoirWeights | None = None, *,
                    per_client: bool = False, scale: float = 1.0) -> Sweep:
        """The exact (IncFed = centralized) readout of ``stats`` at ``scale``·λ over a grid (one eigendecomposition)."""
        return lambda grid: [self.scorer(w, weights) for w in RidgeStats.sum(stats).solve_path(
            [scale * l2 for l2 in grid], per_client=per_client)]

    def model(self, readout: np.ndarray | Sequence[np.ndarray],
              weights: ReservoirWeights | Sequence[ReservoirWeights] | None = None, *,
              sizes: Sequence[float] | None = None, configs: Sequence[ReservoirConfig] | None = None) -> Model:
        """The trained :class:`~tff_esn.esn.model.Model`: ``weights`` (default the run's reservoir) and the ridge
        ``readout``; lists of both with ``sizes`` and ``configs`` for an ensemble (IncFed eq. 4)."""
        weights = weights or self.weights
        readouts = (Readout("ridge", readout) if isinstance(readout, np.ndarray)
                    else [Readout("ridge", r) for r in readout])
        return model_of(weights, readouts, self.spec, self.dataset.task, self.dataset.feature_names,
                        self.dataset.label_names, sizes=sizes, config=configs or self.reservoir,
                        per_step=self._per_step, seed=self.config.seed)

    def report(self, model: Model, cost: communication.CommunicationCost, *, notes: Sequence[str] = (),
               **extra: Any) -> dict[str, Any]:
        """The result sections: each group's metrics as ``model`` scores its sequences, communication, ``extra``,
        warnings, the selection records and the ``model`` itself."""
        if self._states is None:
            washout = 0 if self.spec.state_mode == "last" else self.spec.washout
            self._states = check_states(self.weights, (self.dataset.clients[c] for c in self.train_ids), washout)
        out: dict[str, Any] = {}
        said = list(notes)
        for group in GROUPS:
            ids = self._units if group == "train" else getattr(self.split, group)
            if ids:
                out[group] = model.score_parts((p.x, p.y, p.lengths) for p in _pools(self._data, ids))
            else:
                out[group] = None
        out["warnings"] = [f"{self.name}: {text}" for text in said]
        for text in out["warnings"]:
            warn(text)
        if self.l2_choice is not None:
            out["l2_selection"] = self.l2_choice.to_dict()
        if self.selection is not None:
            out["selection"] = self.selection
        if self.washout_choice is not None:
            out["washout_selection"] = self.washout_choice
        if self.carving is not None:
            out["validation"] = self.carving.to_dict()
        out["communication"] = cost.to_dict()
        out["extra"] = {"n_features": self.n_features, "train_clients": len(self.train_ids), "states": self._states,
                        **extra}
        out["model"] = model
        return out


SCORED_SEQUENCES = 8192
"""Sequences a report runs through the model at once: a larger group is scored in pools of whole clients of about
this many (its predictions kept, its states one pool at a time; equal to one pool to rounding)."""


def _pools(dataset: SequenceDataset, ids: Sequence[str]) -> Iterator[ClientSequences]:
    """The clients ``ids`` pooled in consecutive groups of at least :data:`SCORED_SEQUENCES` sequences (the last
    of fewer), each read once."""
    held: list[ClientSequences] = []
    count = 0
    for cid in ids:
        held.append(dataset.clients[cid])
        count += len(held[-1])
        if count >= SCORED_SEQUENCES:
            yield ClientSequences.concat(held)
            held, count = [], 0
    if held:
        yield ClientSequences.concat(held)
