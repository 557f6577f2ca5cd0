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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tff_esn import communication
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.closed_form.fedavg_ridge import fit_fedavg_ridge, local_readouts, size_weighted_mean
from tff_esn.closed_form.harvest import Harvester, ReservoirWeights, StateSpec
from tff_esn.closed_form.configs import (AlignmentConfig, FedIPConfig, IncFedConfig, PartialIncFedConfig,
                                         PFedRRConfig, ReadoutConfig)
from tff_esn.closed_form.heterogeneous import align, client_reservoirs
from tff_esn.closed_form.incfed import fit_incfed, incfed_tff, run_incfed_tff_stats
from tff_esn.metrics import split_report
from tff_esn.closed_form.partial_incfed import default_k, fit_partial_incfed
from tff_esn.closed_form.pfedrr import fit_pfedrr
from tff_esn.privacy.aggregation import StatsAggregation
from tff_esn.privacy.dp_updates import fedip_privacy, local_noisy_stats, local_privacy
from tff_esn.privacy.options import gaussian_stats, gaussian_updates, secure_ridge_sum, stats_aggregation, stats_sections
from tff_esn.privacy.secure_sum import FixedPoint
from tff_esn.ridge import RidgeStats
from tff_esn.closed_form.streaming import DatasetClients, stream_incfed, stream_pfedrr

GROUPS = ("train", "val", "test")
_LOG = logging.getLogger(__name__)
Scorer = Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]]


class Run:
    """What every closed-form run shares: the reservoir, the harvest, λ and the split."""

    def __init__(self, dataset: SequenceDataset, split: Split, config: ReadoutConfig, name: str):
        self.dataset, self.split, self.settings, self.name = dataset, split, config, name
        self.config = config.reservoir
        self.spec = StateSpec(config.state_mode, config.washout, config.readout_bias)
        self.harvester = Harvester(dataset, self.spec)
        self.weights = ReservoirWeights.from_config(self.config, len(dataset.feature_names))
        self.l2 = float(config.l2)
        self.train_ids = split.train

    @property
    def n_features(self) -> int:
        return self.harvester.n_features(self.weights)

    @property
    def n_outputs(self) -> int:
        return self.dataset.n_classes

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

    def report(self, scorer: Scorer, cost: communication.CommunicationCost, *, notes: Sequence[str] = (),
               **extra: Any) -> dict[str, Any]:
        """The result sections: train/val/test metrics (None for an empty group), communication,
        extra, and ``warnings`` (a list, logged too): the algorithm's ``notes`` and every group
        whose predictions are all one class while its labels are not — a collapse, never a result."""
        out: dict[str, Any] = {}
        warnings = list(notes)
        for group in GROUPS:
            ids = getattr(self.split, group)
            if ids:
                scores, labels = scorer(ids)
                out[group] = split_report(labels, scores, self.n_outputs, seed=self.settings.seed)
                predicted = np.unique(np.argmax(scores, axis=-1))
                if predicted.size == 1 and np.unique(labels).size > 1:
                    warnings.append(f"{group}: every prediction is class {int(predicted[0])} "
                                    f"({np.unique(labels).size} classes present); check λ, the state mode and "
                                    f"the algorithm's own hyperparameters")
            else:
                out[group] = None
        for text in warnings:
            _LOG.warning("%s: %s", self.name, text)
        out["warnings"] = warnings
        out["communication"] = cost.to_dict()
        out["extra"] = {"n_features": self.n_features, "train_clients": len(self.train_ids), **extra}
        return out


# ----------------------------------------------------------------------------- centralized
def run_centralized(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """Ridge on the pooled training data (IncFed eq. 3): the reference of every federation.

    The pooled statistics are the sum of the training clients' (IncFed eqs. 6–7: the same
    ``Sᵀ S`` and ``Yᵀ S`` as stacking their states), so the harvest that gives them also
    gives the training clients' evaluation states."""
    run = Run(dataset, split, config, "centralized")
    readout = RidgeStats.sum(run.stats()).solve(run.l2)
    raw = [int(dataset.clients[c].steps.sum()) * dataset.clients[c].x.shape[2] for c in run.train_ids]
    return run.report(run.scorer(readout), communication.centralized(raw))


# ----------------------------------------------------------------------------- incfed
def _training_stream(run: Run) -> DatasetClients:
    return DatasetClients(run.dataset, tuple(run.train_ids))


def _incfed_readout(run: Run, weights: ReservoirWeights, per_client: bool, *, l2: float | None = None,
                    algorithm: str = "incfed", releases: int = 1
                    ) -> tuple[np.ndarray, dict[str, Any]]:
    """The IncFed readout (λ = ``l2``, default the run's) and its ``privacy``/``secure_aggregation``
    sections (privacy flags). Without privacy flags TFF sums the Harvester's cached client
    statistics (:func:`tff_esn.closed_form.incfed.run_incfed_tff_stats`); with them the clients harvest,
    clip and add noise inside TFF (:func:`tff_esn.closed_form.incfed.incfed_tff`); with ``--subround-size``
    the clients are streamed through TFF in subrounds (:func:`tff_esn.closed_form.streaming.stream_incfed`)."""
    l2 = run.l2 if l2 is None else l2
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
    run = Run(dataset, split, config, "incfed")
    readout, privacy = _incfed_readout(run, run.weights, config.l2_per_client)
    return {**run.report(run.scorer(readout), communication.incfed(run.n_features, run.n_outputs),
                         backend=config.backend), **privacy}


# ----------------------------------------------------------------------------- fedavg-ridge
def run_fedavg_ridge(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """Size-weighted FedAvg of the clients' local ridge readouts (IncFed eqs. 4–5)."""
    run = Run(dataset, split, config, "fedavg-ridge")
    readout = fit_fedavg_ridge(run.stats(), run.l2)
    return run.report(run.scorer(readout), communication.fedavg_ridge(run.n_features, run.n_outputs))


def _plain_sections(algorithm: str) -> dict[str, Any]:
    """``privacy``/``secure_aggregation`` sections of a run without privacy flags."""
    return stats_sections(None, 0, 0, algorithm=algorithm)


def _secure_ridge_sum(run: Run, stats: Sequence[RidgeStats]):
    """``(stats, aggregate, sections)`` of a numpy closed-form run: the clients' statistics (each
    with its own Gaussian noise under DP, :func:`tff_esn.privacy.dp_updates.local_noisy_stats`),
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
    result = fit_partial_incfed(stats, k, config.alpha, run.l2, seed=config.seed, mask=config.mask,
                                aggregate=aggregate)
    cost = _dense_if_secure(run, communication.partial_incfed(k, run.n_features, run.n_outputs))
    return {**run.report(run.scorer(result.readout), cost, k=k, alpha=config.alpha, mask=config.mask),
            **sections("partial-incfed")}


# ----------------------------------------------------------------------------- pfedrr
def run_pfedrr(dataset: SequenceDataset, split: Split, config: PFedRRConfig) -> dict:
    """I-pFedRR (reported), with FedRR and R-pFedRR on the same statistics in ``extra``."""
    run = Run(dataset, split, config, "pfedrr")
    if config.subround_size is not None:  # PFedRRConfig refuses it with privacy settings
        result = stream_pfedrr(run.weights, _training_stream(run), run.spec, config.tau, run.l2, seed=config.seed,
                               subround_size=config.subround_size, reading=config.reading)
        sizes = result.important_sizes
        sections = _plain_sections
    else:
        stats, aggregate, sections = _secure_ridge_sum(run, run.stats())
        result = fit_pfedrr(stats, config.tau, run.l2, seed=config.seed, reading=config.reading, aggregate=aggregate)
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
    l2 = state_scaled_l2(run.l2, run.stats(scored=False), run.stats(adapted)) if config.l2_scale == "state" else run.l2
    readout, privacy = _incfed_readout(run, adapted, per_client=False, l2=l2, releases=config.rounds + 1,
                                       algorithm="fedip")
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
    readouts = local_readouts(stats, run.l2)
    sizes = [s.n for s in stats]

    def scorer(ids):
        outputs = [run.harvester.scores(r, w, ids) for r, w in zip(readouts, members)]
        return size_weighted_mean([o[0] for o in outputs], sizes), outputs[0][1]

    return run.report(scorer, communication.ensemble(len(members), run.n_features, run.n_outputs))


def run_alignment(dataset: SequenceDataset, split: Split, config: AlignmentConfig) -> dict:
    """Structural alignment: clients interpolate toward the shared reservoir, then IncFed."""
    run = Run(dataset, split, config, "alignment")
    members = client_reservoirs(run.config, run.weights.n_inputs, len(run.train_ids))
    aligned = [align(w, run.weights, config.alpha, rescale=config.rescale) for w in members]
    readout = fit_incfed([run.harvester.stats(w, cid) for w, cid in zip(aligned, run.train_ids)], run.l2)
    return run.report(run.scorer(readout), communication.incfed(run.n_features, run.n_outputs), alpha=config.alpha)
