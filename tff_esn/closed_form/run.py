"""The harness every closed-form run function shares (:class:`Run`).

A run function of the registry (``run_<algorithm>(dataset, split, config)``, beside its
algorithm's math in the module named for it) builds one :class:`Run`: the run's reservoir
and its weights, the :class:`~tff_esn.closed_form.harvest.Harvester` that harvests each
client once per reservoir, ridge λ (the configured one or, for ``l2="auto"``, chosen on the
validation clients) and the report every run returns: train/val/test metrics with the
random baseline, the communication cost, the saturation check and the warnings.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from tff_esn import communication
from tff_esn.closed_form.configs import ReadoutConfig
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.l2_selection import AUTO, L2Choice, by_default, on_validation
from tff_esn.closed_form.saturation import check_states
from tff_esn.closed_form.streaming import DatasetClients
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.ridge import RidgeStats
from tff_esn.run_warnings import RunWarning, warn

GROUPS = ("train", "val", "test")
_LOG = logging.getLogger(__name__)
Scorer = Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]]
"""Readout outputs (m, N_Y) and labels (m,) over a list of client ids."""
Sweep = Callable[[Sequence[float]], Sequence[Scorer]]
"""The algorithm's readout at each λ of a grid, as scorers."""


_SHARED: contextvars.ContextVar[list[tuple[SequenceDataset, StateSpec, Harvester]] | None] = \
    contextvars.ContextVar("shared_harvesters", default=None)


@contextlib.contextmanager
def shared_harvests() -> Iterator[None]:
    """Inside, the runs on one dataset object with one :class:`StateSpec` share one
    :class:`~tff_esn.closed_form.harvest.Harvester`: the runs of an experiment that meet a
    reservoir again (one seed's reservoir at every fraction of training clients, under several
    algorithms) harvest each client once per reservoir. A client's states and statistics are
    those of its own pass up to float rounding (the clients pooled with it in a pass change only
    the order of the float32 sums). The harvests are kept until the scope ends."""
    token = _SHARED.set([])
    try:
        yield
    finally:
        _SHARED.reset(token)


def harvester_for(dataset: SequenceDataset, spec: StateSpec) -> Harvester:
    """The scope's harvester of ``dataset`` and ``spec`` (:func:`shared_harvests`), else a new one."""
    shared = _SHARED.get()
    if shared is None:
        return Harvester(dataset, spec)
    for known, known_spec, harvester in shared:
        if known is dataset and known_spec == spec:
            return harvester
    shared.append((dataset, spec, Harvester(dataset, spec)))
    return shared[-1][2]


class Run:
    """What every closed-form run shares: the reservoir, the harvest, λ (:meth:`choose_l2`) and the split.

    Attributes:
        dataset, split: the clients' sequences and the train/val/test clients.
        config: the algorithm's config (a :class:`~tff_esn.closed_form.configs.ReadoutConfig`).
        reservoir: its reservoir hyperparameters (``config.reservoir``); ``weights`` their draw.
        name: the algorithm's name, prefixed to the run's warnings.
        spec: the states entering the readout; ``harvester`` caches them per reservoir and client.
    """

    def __init__(self, dataset: SequenceDataset, split: Split, config: ReadoutConfig, name: str):
        self.dataset, self.split, self.config, self.name = dataset, split, config, name
        self.reservoir = config.reservoir
        self.spec = StateSpec(config.state_mode, config.washout, config.readout_bias)
        self.harvester = harvester_for(dataset, self.spec)
        self.weights = ReservoirWeights.from_config(self.reservoir, len(dataset.feature_names))
        self.l2_choice = L2Choice(float(config.l2), "given") if config.l2 != AUTO else None
        self.train_ids = split.train
        self._states: dict[str, float] | None = None

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
        if self.l2_choice is None:
            raise ValueError(f"{self.name}: l2 is {AUTO!r} and not chosen yet (Run.choose_l2).")
        return self.l2_choice.l2

    def stats(self, weights: ReservoirWeights | None = None, *, scored: bool = True) -> list[RidgeStats]:
        """The training clients' statistics under ``weights`` (default the run's reservoir). With
        ``scored`` (the run scores every group with these weights) the validation and test clients
        share the training clients' pooled pass (:meth:`Harvester.cache`)."""
        weights = weights or self.weights
        scored_ids = [*self.split.val, *self.split.test] if scored else []
        self.harvester.cache(weights, [*self.train_ids, *scored_ids], stats=self.train_ids)
        return [self.harvester.stats(weights, cid) for cid in self.train_ids]

    def scorer(self, readout: np.ndarray, weights: ReservoirWeights | None = None) -> Scorer:
        return lambda ids: self.harvester.scores(readout, weights or self.weights, ids)

    def choose_l2(self, sweep: Sweep) -> float:
        """The run's λ: the configured number, or for ``l2 = "auto"`` the value of ``l2_grid`` whose
        readout scores best on the validation clients (:meth:`tff_esn.tasks.Task.selection_score`:
        accuracy, or minus the mean squared error; a tie to the larger λ;
        :mod:`tff_esn.closed_form.l2_selection`). ``sweep(grid)`` gives the algorithm's readout
        at each λ of the grid as a scorer; it runs only when there is something to choose on (the
        singular-system warnings of the λ it tries are not the run's and are not recorded).
        Without validation clients, or with privacy settings, the stated default λ is used. The
        choice is reported in ``l2_selection``."""
        if self.l2_choice is None:
            config = self.config
            if config.privacy.requested:
                self.l2_choice = by_default("privacy settings: choosing λ on the validation clients would "
                                            "release readouts the privacy accounting does not cover")
            elif not self.split.val:
                self.l2_choice = by_default("the split has no validation clients")
            else:
                grid = config.l2_grid
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RunWarning)
                    scorers = sweep(grid)
                scores = [scorer(self.split.val) for scorer in scorers]
                self.l2_choice = on_validation(grid, [self.dataset.task.selection_score(labels, out)
                                                      for out, labels in scores])
            _LOG.info("%s: λ = %g (%s)", self.name, self.l2_choice.l2, self.l2_choice.rule)
        return self.l2_choice.l2

    def exact_sweep(self, stats: Sequence[RidgeStats], weights: ReservoirWeights | None = None, *,
                    per_client: bool = False, scale: float = 1.0) -> Sweep:
        """The sweep of the exact (IncFed = centralized) readout of ``stats`` at ``scale``·λ: one
        eigendecomposition for the whole grid (:meth:`RidgeStats.solve_path`)."""
        return lambda grid: [self.scorer(w, weights) for w in RidgeStats.sum(stats).solve_path(
            [scale * l2 for l2 in grid], per_client=per_client)]

    def report(self, scorer: Scorer, cost: communication.CommunicationCost, *, notes: Sequence[str] = (),
               **extra: Any) -> dict[str, Any]:
        """The result sections: train/val/test metrics of the dataset's task (None for an empty group;
        :meth:`tff_esn.tasks.Task.report`), communication, extra, and ``warnings`` (a list, each also a
        RunWarning): the algorithm's ``notes`` and every group whose predictions are all one value while
        its labels are not — a collapse, never a result (:meth:`~tff_esn.tasks.Task.collapse`); ``l2_selection``, the λ used and how it was chosen; and in ``extra``
        the ``states`` check of the run's reservoir on the training sequences (saturation,
        :func:`tff_esn.closed_form.saturation.check_states`, warned about there)."""
        if self._states is None:
            washout = 0 if self.spec.state_mode == "last" else self.spec.washout
            self._states = check_states(self.weights, list(self.dataset.select(self.train_ids).values()), washout)
        out: dict[str, Any] = {}
        said = list(notes)
        for group in GROUPS:
            ids = getattr(self.split, group)
            if ids:
                scores, labels = scorer(ids)
                out[group] = self.dataset.task.report(labels, scores, self.n_outputs, seed=self.config.seed)
                collapse = self.dataset.task.collapse(labels, scores)
                if collapse:
                    said.append(f"{group}: {collapse}")
            else:
                out[group] = None
        out["warnings"] = [f"{self.name}: {text}" for text in said]
        for text in out["warnings"]:
            warn(text)
        if self.l2_choice is not None:
            out["l2_selection"] = self.l2_choice.to_dict()
        out["communication"] = cost.to_dict()
        out["extra"] = {"n_features": self.n_features, "train_clients": len(self.train_ids), "states": self._states,
                        **extra}
        return out
