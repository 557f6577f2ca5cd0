"""The run functions of the closed-form family (registered in :mod:`tff_esn.closed_form.configs`).

``centralized`` (pooled ridge, IncFed eq. 3), ``incfed`` (IncFed eqs. 6–10, through TFF
by default), ``fedavg-ridge`` (IncFed eqs. 4–5), ``partial-incfed`` (thesis §B.3),
``pfedrr`` (pFedRR eqs. 2–5; the exact, I- and R- readouts in one pass), ``fedip`` (FedIP
Alg. 1 + IncFed), ``ensemble`` and ``alignment`` (heterogeneous reservoirs). Every run
harvests each client once per reservoir through a :class:`~tff_esn.closed_form.harvest.Harvester`,
reports train/val/test metrics with the random baseline and its communication cost. Each
takes ``(dataset, split, config)`` with the algorithm's typed config.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tff_esn import communication
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.closed_form.fedavg_ridge import fit_fedavg_ridge, local_readouts, size_weighted_mean
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.configs import (AlignmentConfig, FedIPConfig, IncFedConfig, PartialIncFedConfig,
                                         PFedRRConfig, ReadoutConfig)
from tff_esn.closed_form.heterogeneous import align, client_reservoirs
from tff_esn.closed_form.l2_selection import AUTO, L2Choice, by_default, on_validation
from tff_esn.closed_form.incfed import fit_incfed, incfed_tff, run_incfed_tff_stats
from tff_esn.metrics import accuracy, predictions, split_report
from tff_esn.closed_form.partial_incfed import default_k, fit_partial_incfed
from tff_esn.closed_form.pfedrr import fit_pfedrr
from tff_esn.closed_form.saturation import check_states
from tff_esn.privacy.aggregation import StatsAggregation
from tff_esn.privacy.closed_form import gaussian_stats, gaussian_updates, secure_ridge_sum, stats_aggregation, stats_sections
from tff_esn.privacy.dp_fedip import fedip_privacy
from tff_esn.privacy.dp_local_stats import local_noisy_stats, local_privacy
from tff_esn.privacy.secure_sum import FixedPoint
from tff_esn.esn.ridge import RidgeStats
from tff_esn.run_warnings import RunWarning, warn
from tff_esn.closed_form.streaming import DatasetClients, stream_incfed, stream_pfedrr

GROUPS = ("train", "val", "test")
_LOG = logging.getLogger(__name__)
Scorer = Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]]
Sweep = Callable[[Sequence[float]], Sequence[Scorer]]


class Run:
    """What every closed-form run shares: the reservoir, the harvest, λ (:meth:`choose_l2`) and the split."""

    def __init__(self, dataset: SequenceDataset, split: Split, config: ReadoutConfig, name: str):
        self.dataset, self.split, self.settings, self.name = dataset, split, config, name
        self.config = config.reservoir
        self.spec = StateSpec(config.state_mode, config.washout, config.readout_bias)
        self.harvester = Harvester(dataset, self.spec)
        self.weights = ReservoirWeights.from_config(self.config, len(dataset.feature_names))
        self.l2_choice = L2Choice(float(config.l2), "given") if config.l2 != AUTO else None
        self.train_ids = split.train
        self._states: dict[str, float] | None = None

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
        share the training clients' pooled pass (:meth:`Harvester.harvest`)."""
        weights = weights or self.weights
        scored_ids = [*self.split.val, *self.split.test] if scored else []
        self.harvester.harvest(weights, [*self.train_ids, *scored_ids], stats=self.train_ids)
        return [self.harvester.stats(weights, cid) for cid in self.train_ids]

    def scorer(self, readout: np.ndarray, weights: ReservoirWeights | None = None) -> Scorer:
        return lambda ids: self.harvester.scores(readout, weights or self.weights, ids)

    def choose_l2(self, sweep: Sweep) -> float:
        """The run's λ: the configured number, or for ``l2 = "auto"`` the value of ``l2_grid`` whose
        readout is most accurate on the validation clients (a tie to the larger λ;
        :mod:`tff_esn.closed_form.l2_selection`). ``sweep(grid)`` gives the algorithm's readout
        at each λ of the grid as a scorer; it runs only when there is something to choose on (the
        singular-system warnings of the λ it tries are not the run's and are not recorded).
        Without validation clients, or with privacy settings, the stated default λ is used. The
        choice is reported in ``l2_selection``."""
        if self.l2_choice is None:
            settings = self.settings
            if settings.privacy.requested:
                self.l2_choice = by_default("privacy settings: choosing λ on the validation clients would "
                                            "release readouts the privacy accounting does not cover")
            elif not self.split.val:
                self.l2_choice = by_default("the split has no validation clients")
            else:
                grid = settings.l2_grid
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RunWarning)
                    scorers = sweep(grid)
                scores = [scorer(self.split.val) for scorer in scorers]
                self.l2_choice = on_validation(grid, [accuracy(labels, predictions(out)) for out, labels in scores])
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
        """The result sections: train/val/test metrics (None for an empty group), communication,
        extra, and ``warnings`` (a list, each also a RunWarning): the algorithm's ``notes`` and every
        group whose predictions are all one class while its labels are not — a collapse, never a result; ``l2_selection``, the λ used and how it was chosen; and in ``extra``
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
                out[group] = split_report(labels, scores, self.n_outputs, seed=self.settings.seed)
                predicted = np.unique(np.argmax(scores, axis=-1))
                if predicted.size == 1 and np.unique(labels).size > 1:
                    said.append(f"{group}: every prediction is class {int(predicted[0])} "
                                f"({np.unique(labels).size} classes present); check λ, the state mode and "
                                f"the algorithm's own hyperparameters")
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


# ----------------------------------------------------------------------------- centralized
def run_centralized(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """Ridge on the pooled training data (IncFed eq. 3): the reference of every federation.

    The pooled statistics are the sum of the training clients' (IncFed eqs. 6–7: the same
    ``Sᵀ S`` and ``Yᵀ S`` as stacking their states), so the harvest that gives them also
    gives the training clients' evaluation states."""
    run = Run(dataset, split, config, "centralized")
    stats = run.stats()
    readout = RidgeStats.sum(stats).solve(run.choose_l2(run.exact_sweep(stats)))
    raw = [int(dataset.clients[c].steps.sum()) * dataset.clients[c].x.shape[2] for c in run.train_ids]
    return run.report(run.scorer(readout), communication.centralized(raw))


# ----------------------------------------------------------------------------- incfed
def _training_stream(run: Run) -> DatasetClients:
    return DatasetClients(run.dataset, tuple(run.train_ids))


def _incfed_readout(run: Run, weights: ReservoirWeights, per_client: bool, l2: float, *,
                    algorithm: str = "incfed", releases: int = 1
                    ) -> tuple[np.ndarray, dict[str, Any]]:
    """The IncFed readout at λ = ``l2`` and its ``privacy``/``secure_aggregation``
    sections (privacy flags). Without privacy flags TFF sums the Harvester's cached client
    statistics (:func:`tff_esn.closed_form.incfed.run_incfed_tff_stats`); with them the clients harvest,
    clip and add noise inside TFF (:func:`tff_esn.closed_form.incfed.incfed_tff`); with ``--subround-size``
    the clients are streamed through TFF in subrounds (:func:`tff_esn.closed_form.streaming.stream_incfed`)."""
    settings = run.settings
    if getattr(settings, "subround_size", None) is not None:  # IncFedConfig checks backend and privacy
        return (stream_incfed(weights, _training_stream(run), run.spec, l2, subround_size=settings.subround_size,
                              per_client=per_client).readout, stats_sections(None, 0, 0, algorithm=algorithm))
    if settings.backend == "tff" and not settings.privacy.requested:  # fixed reservoir: TFF only sums
        return (run_incfed_tff_stats(run.stats(weights), l2, per_client=per_client),
                stats_sections(None, 0, 0, algorithm=algorithm))
    if settings.backend == "tff":  # clients harvest, clip and add noise inside TFF
        clients = list(run.dataset.select(run.train_ids).values())
        agg = stats_aggregation(settings.privacy, state_mode=settings.state_mode, washout=settings.washout,
                                seed=settings.seed, n_features=run.n_features,
                                steps=max(c.x.shape[1] for c in clients), client_sequences=[len(c) for c in clients],
                                releases=releases)
        out = incfed_tff(weights, clients, run.n_outputs, run.spec, l2, per_client=per_client, aggregation=agg)
        return out.readout, stats_sections(agg, out.clipped_values, out.eigenvalues_raised, algorithm=algorithm)
    return fit_incfed(run.stats(weights), l2, per_client=per_client), stats_sections(None, 0, 0, algorithm=algorithm)


def run_incfed(dataset: SequenceDataset, split: Split, config: IncFedConfig) -> dict:
    """IncFed / FedRR (IncFed eqs. 6–10)."""
    if config.subround_size is not None and dataset.ragged:
        raise DataError(f"{dataset.source}: X: sequences of unequal length ({dataset.shortest} steps and more); "
                        "--subround-size streams clients of one length through one TFF computation: drop "
                        "--subround-size or cut them to one length (--ragged crop).")
    run = Run(dataset, split, config, "incfed")
    # the harvest inside the lambda runs only when λ is swept (never under privacy settings)
    l2 = run.choose_l2(lambda grid: run.exact_sweep(run.stats(), per_client=config.l2_per_client)(grid))
    readout, privacy = _incfed_readout(run, run.weights, config.l2_per_client, l2)
    return {**run.report(run.scorer(readout), communication.incfed(run.n_features, run.n_outputs),
                         backend=config.backend), **privacy}


# ----------------------------------------------------------------------------- fedavg-ridge
def run_fedavg_ridge(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """Size-weighted FedAvg of the clients' local ridge readouts (IncFed eqs. 4–5)."""
    run = Run(dataset, split, config, "fedavg-ridge")
    stats = run.stats()
    readout = fit_fedavg_ridge(stats, run.choose_l2(
        lambda grid: [run.scorer(fit_fedavg_ridge(stats, l2)) for l2 in grid]))
    return run.report(run.scorer(readout), communication.fedavg_ridge(run.n_features, run.n_outputs))


def _plain_sections(algorithm: str) -> dict[str, Any]:
    """``privacy``/``secure_aggregation`` sections of a run without privacy flags."""
    return stats_sections(None, 0, 0, algorithm=algorithm)


def _secure_ridge_sum(run: Run, stats: Sequence[RidgeStats]):
    """``(stats, aggregate, sections)`` of a numpy closed-form run: the clients' statistics (each
    with its own Gaussian noise under DP, :func:`tff_esn.privacy.dp_local_stats.local_noisy_stats`),
    ``RidgeStats.sum`` or the secure sum (``--secure-aggregation``), and a function giving the
    run's ``privacy``/``secure_aggregation`` sections."""
    settings = run.settings
    steps = max(c.x.shape[1] for c in run.dataset.select(run.train_ids).values())
    dp = gaussian_stats(settings.privacy, state_mode=settings.state_mode, washout=settings.washout,
                        seed=settings.seed, n_features=run.n_features, steps=steps)
    raised = 0
    if dp is not None:
        stats, raised = local_noisy_stats(stats, dp)
    summer = secure_ridge_sum(settings.privacy, [s.n for s in stats])
    if summer is None and dp is None:
        return stats, RidgeStats.sum, _plain_sections
    agg = StatsAggregation(len(stats), run.n_features, dp=dp, secure=None if summer is None else summer.secure)

    def sections(algorithm: str) -> dict[str, Any]:
        out = stats_sections(agg, 0 if summer is None else summer.clipped_values, raised, algorithm=algorithm)
        if dp is not None:
            out["privacy"] = local_privacy(out["privacy"], dp, len(stats), run.n_features, raised)
        if summer is not None:
            out["secure_aggregation"]["seconds"] = summer.seconds
        return out

    return stats, RidgeStats.sum if summer is None else summer, sections


def _dense_if_secure(run: Run, cost: communication.CommunicationCost) -> communication.CommunicationCost:
    """A masked upload's ``cost``, or IncFed's dense one under secure aggregation (zeros are sent too)."""
    if run.settings.privacy.secure_aggregation:
        return communication.incfed(run.n_features, run.n_outputs)
    return cost


# ----------------------------------------------------------------------------- partial-incfed
def run_partial_incfed(dataset: SequenceDataset, split: Split, config: PartialIncFedConfig) -> dict:
    """Partial IncFed (thesis eqs. B.15–B.17)."""
    run = Run(dataset, split, config, "partial-incfed")
    k = config.k if config.k is not None else default_k(run.n_features, len(run.train_ids))
    stats, aggregate, sections = _secure_ridge_sum(run, run.stats())

    def fit(l2: float):
        return fit_partial_incfed(stats, k, config.alpha, l2, seed=config.seed, mask=config.mask, aggregate=aggregate)

    result = fit(run.choose_l2(lambda grid: [run.scorer(fit(l2).readout) for l2 in grid]))
    cost = _dense_if_secure(run, communication.partial_incfed(k, run.n_features, run.n_outputs))
    return {**run.report(run.scorer(result.readout), cost, k=k, alpha=config.alpha, mask=config.mask),
            **sections("partial-incfed")}


# ----------------------------------------------------------------------------- pfedrr
def run_pfedrr(dataset: SequenceDataset, split: Split, config: PFedRRConfig) -> dict:
    """I-pFedRR (reported), with FedRR and R-pFedRR on the same statistics in ``extra``."""
    run = Run(dataset, split, config, "pfedrr")
    l2 = run.choose_l2(lambda grid: [run.scorer(fit_pfedrr(run.stats(), config.tau, l2, seed=config.seed,
                                                           reading=config.reading).important) for l2 in grid])
    if config.subround_size is not None:  # PFedRRConfig refuses it with privacy settings
        result = stream_pfedrr(run.weights, _training_stream(run), run.spec, config.tau, l2, seed=config.seed,
                               subround_size=config.subround_size, reading=config.reading)
        sizes = result.important_sizes
        sections = _plain_sections
    else:
        stats, aggregate, sections = _secure_ridge_sum(run, run.stats())
        result = fit_pfedrr(stats, config.tau, l2, seed=config.seed, reading=config.reading, aggregate=aggregate)
        sizes = [u.size for u in result.important_units]
    comparison = {}
    for name, readout in (("fedrr", result.exact), ("r-pfedrr", result.random)):
        comparison[name] = {g: s for g, s in run.report(run.scorer(readout), communication.incfed(
            run.n_features, run.n_outputs)).items() if g in GROUPS}
    kept = run.n_features - run.config.units  # the readout's bias input, kept in every selection
    cost = _dense_if_secure(run, communication.pfedrr([size + kept for size in sizes], run.n_features,
                                                      run.n_outputs))
    return {**run.report(run.scorer(result.important), cost, tau=config.tau, reading=config.reading,
                         percent_units=result.percent_units, **comparison),
            **sections("pfedrr")}


# ----------------------------------------------------------------------------- fedip
def run_fedip(dataset: SequenceDataset, split: Split, config: FedIPConfig) -> dict:
    """FedIP rounds on (g, b), then the IncFed readout on the adapted reservoir (FedIP Alg. 1)."""
    from tff_esn.closed_form.fedip import (NEAR_LINEAR_SPREAD, fedip_numpy, fedip_secure_range, fedip_tff,
                                           state_scaled_l2, step_spread)

    run = Run(dataset, split, config, "fedip")
    clients = list(dataset.select(run.train_ids).values())
    ip_dp = gaussian_updates(config.privacy, seed=config.seed, clients=len(clients), rounds=config.rounds)
    secure = (FixedPoint(config.privacy.secure_bits, fedip_secure_range(clients) if ip_dp is None else ip_dp.clip,
                         len(clients)) if config.privacy.secure_aggregation else None)
    if config.backend == "tff":
        adapted, rounds_clipped = fedip_tff(run.weights, clients, config.ip, config.rounds, secure, ip_dp)
    else:
        adapted, rounds_clipped = fedip_numpy(run.weights, clients, config.ip, config.rounds), 0
    scale = state_scaled_l2(1.0, run.stats(scored=False), run.stats(adapted)) if config.l2_scale == "state" else 1.0
    l2 = scale * run.choose_l2(lambda grid: run.exact_sweep(run.stats(adapted), adapted, scale=scale)(grid))
    readout, privacy = _incfed_readout(run, adapted, False, l2, releases=config.rounds + 1, algorithm="fedip")
    if ip_dp is not None:
        privacy["privacy"] = fedip_privacy(privacy["privacy"], ip_dp, config.rounds)
    if secure is not None:
        privacy["secure_aggregation"]["rounds"] = secure.to_dict(rounds_clipped)
    cost = communication.fedip(config.rounds, run.config.units, run.n_features, run.n_outputs)
    spread = float(np.median(step_spread(adapted, clients)))
    notes = [f"FedIP left the states nearly linear (median state std {spread:.3f} < {NEAR_LINEAR_SPREAD}): the "
             f"readout sees only linear functionals of the input; raise --ip-sigma or --ip-mu if classes differ "
             f"in frequency or power"] if spread < NEAR_LINEAR_SPREAD else []
    return {**run.report(run.scorer(readout, adapted), cost, notes=notes, backend=config.backend, l2_effective=l2,
                         state_std_median=spread,
                         gain_mean=float(adapted.gain.mean()), gain_min=float(adapted.gain.min()),
                         bias_mean=float(adapted.bias.mean())), **privacy}


# ----------------------------------------------------------------------------- heterogeneous
def run_ensemble(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """Each client its own reservoir and ridge readout; size-weighted ensemble of outputs."""
    run = Run(dataset, split, config, "ensemble")
    members = client_reservoirs(run.config, run.weights.n_inputs, len(run.train_ids))
    stats = [run.harvester.stats(w, cid) for w, cid in zip(members, run.train_ids)]
    sizes = [s.n for s in stats]

    def scorer(l2: float) -> Scorer:
        readouts = local_readouts(stats, l2)

        def score(ids):
            outputs = [run.harvester.scores(r, w, ids) for r, w in zip(readouts, members)]
            return size_weighted_mean([o[0] for o in outputs], sizes), outputs[0][1]

        return score

    chosen = scorer(run.choose_l2(lambda grid: [scorer(l2) for l2 in grid]))
    return run.report(chosen, communication.ensemble(len(members), run.n_features, run.n_outputs))


def run_alignment(dataset: SequenceDataset, split: Split, config: AlignmentConfig) -> dict:
    """Structural alignment: clients interpolate toward the shared reservoir, then IncFed."""
    run = Run(dataset, split, config, "alignment")
    members = client_reservoirs(run.config, run.weights.n_inputs, len(run.train_ids))
    aligned = [align(w, run.weights, config.alpha, rescale=config.rescale) for w in members]
    stats = [run.harvester.stats(w, cid) for w, cid in zip(aligned, run.train_ids)]
    readout = fit_incfed(stats, run.choose_l2(run.exact_sweep(stats)))
    return run.report(run.scorer(readout), communication.incfed(run.n_features, run.n_outputs), alpha=config.alpha)
