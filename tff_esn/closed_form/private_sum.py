"""The closed-form runs' statistics summed under the run's privacy settings: numpy runs
(:func:`private_sum`) and the TFF aggregation of IncFed and FedIP (:func:`tff_aggregation`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tff_esn.registry.algorithms import get_algorithm
from tff_esn.closed_form.configs import incfed_cost
from tff_esn.common.communication import CommunicationCost
from tff_esn.closed_form.run import Run
from tff_esn.privacy.aggregation import StatsAggregation
from tff_esn.privacy.dp_local_stats import local_noisy_stats, local_privacy
from tff_esn.privacy.closed_form import gaussian_stats, secure_ridge_sum, stats_aggregation, stats_sections
from tff_esn.privacy.record_bound import record_steps
from tff_esn.esn.ridge import RidgeStats

Sections = Callable[[], dict[str, Any]]
"""``() -> {"privacy": ..., "secure_aggregation": ...}``, the run's sections of ``metrics.json``."""


def plain_sections(run: Run) -> dict[str, Any]:
    """``privacy``/``secure_aggregation`` sections of ``run`` without privacy settings."""
    return stats_sections(None, 0, 0, get_algorithm(run.name).privacy)


def _record_bound(run: Run) -> dict[str, Any]:
    """Under DP the public bound on a training record's steps (:func:`~tff_esn.privacy.record_bound.record_steps`),
    else the longest training sequence (what the secure sum's range must hold)."""
    if not run.config.privacy.dp_requested:
        return {"steps": max(c.x.shape[1] for c in run.dataset.select(run.train_ids).values())}
    steps, source = record_steps(run.config.privacy, run.dataset, state_mode=run.spec.state_mode)
    return {"steps": steps, "record_bound": source}


def private_sum(run: Run, harvest: Callable[[], Sequence[RidgeStats]]
                ) -> tuple[Sequence[RidgeStats], Callable[[Sequence[RidgeStats]], RidgeStats], Sections]:
    """``(stats, aggregate, sections)``: the clients' (DP-noised) statistics, from ``harvest()`` once the DP
    mechanism is settled, their sum and privacy sections."""
    config = run.config
    dp = gaussian_stats(config.privacy, state_mode=run.spec.state_mode, washout=config.washout,
                        n_features=run.n_features, **_record_bound(run))
    stats, raised = harvest(), 0
    if dp is not None:
        stats, raised = local_noisy_stats(stats, dp)
    summer = secure_ridge_sum(config.privacy, [s.n for s in stats])
    if summer is None and dp is None:
        return stats, RidgeStats.sum, lambda: plain_sections(run)
    agg = StatsAggregation(len(stats), run.n_features, dp=dp, secure=None if summer is None else summer.secure)

    def sections() -> dict[str, Any]:
        out = stats_sections(agg, 0 if summer is None else summer.clipped_values, raised,
                             get_algorithm(run.name).privacy)
        if dp is not None:
            out["privacy"] = local_privacy(out["privacy"], dp, len(stats), run.n_features, raised)
        if summer is not None:
            out["secure_aggregation"]["seconds"] = summer.seconds
        return out

    return stats, RidgeStats.sum if summer is None else summer, sections


def tff_aggregation(run: Run, releases: int) -> StatsAggregation | None:
    """The :class:`StatsAggregation` of the run's training clients inside TFF (``None``: plain sum)."""
    config = run.config
    clients = list(run.dataset.select(run.train_ids).values())
    return stats_aggregation(config.privacy, state_mode=run.spec.state_mode, washout=config.washout,
                             n_features=run.n_features, client_sequences=[len(c) for c in clients],
                             releases=releases, **_record_bound(run))


def dense_if_secure(run: Run, cost: CommunicationCost) -> CommunicationCost:
    """A masked upload's ``cost``, or IncFed's dense one under secure aggregation (zeros are sent too)."""
    if run.config.privacy.secure_aggregation:
        return incfed_cost(run.n_features, run.n_outputs)
    return cost
