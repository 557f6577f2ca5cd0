"""The centralized ESN: ridge on the pooled training clients (IncFed eq. 3), every federation's reference."""

from __future__ import annotations

from tff_esn.closed_form.configs import ReadoutConfig, centralized_cost
from tff_esn.closed_form.run import Run
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.ridge import RidgeStats


def run_centralized(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """Ridge on the pooled training data (IncFed eq. 3): the sum of the clients' statistics, the reference."""
    run = Run(dataset, split, config, "centralized")
    l2 = run.choose_exact_l2()
    readout = RidgeStats.sum(run.stats()).solve(l2)
    raw = [int(dataset.clients[c].steps.sum()) * dataset.clients[c].x.shape[2] for c in run.train_ids]
    return run.report(run.model(readout), centralized_cost(raw))
