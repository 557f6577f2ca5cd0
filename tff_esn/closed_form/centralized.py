"""The centralized ESN: ridge on the pooled training clients (IncFed eq. 3), every federation's reference."""

from __future__ import annotations

from tff_esn.closed_form.configs import ExactReadoutConfig, centralized_cost
from tff_esn.closed_form.run import Run
from tff_esn.data.sequences import SequenceDataset, Split


def run_centralized(dataset: SequenceDataset, split: Split, config: ExactReadoutConfig) -> dict:
    """Ridge on the pooled training data (IncFed eq. 3): the sum of the clients' statistics, the reference; the
    model keeps that sum with ``keep_stats``."""
    run = Run(dataset, split, config, "centralized")
    l2 = run.choose_exact_l2()
    stats = run.total_stats()
    raw = [int(dataset.clients[c].steps.sum()) * dataset.clients[c].x.shape[2] for c in run.train_ids]
    model = run.model(stats.solve(l2))
    return run.report(model.replace(stats=stats) if config.keep_stats else model, centralized_cost(raw))
