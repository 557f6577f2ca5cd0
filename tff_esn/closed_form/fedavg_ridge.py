"""FedAvg of ridge readouts (IncFed §II-B, eqs. 4–5): each client's ``W_c = A_c (B_c + β_c I)⁻¹`` (eq. 4),
averaged as ``W = Σ_c (N_c / N) W_c`` (the text's weighted mean; eq. 5 as printed is a typo)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tff_esn.closed_form.configs import ReadoutConfig, fedavg_ridge_cost
from tff_esn.closed_form.run import Run
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.ridge import RidgeStats, size_weighted_mean


def local_readouts(stats: Sequence[RidgeStats], l2: float) -> list[np.ndarray]:
    """Each client's own ridge readout ``W_c`` with ``β_c = l2`` (IncFed eq. 4)."""
    return [s.solve(l2) for s in stats]


def fit_fedavg_ridge(stats: Iterable[RidgeStats], l2: float) -> np.ndarray:
    """FedAvg of the clients' local ridge readouts, weighted by their numbers of states; ``stats`` read once, each
    client's kept as its readout ``W_c`` and ``n_c`` only."""
    readouts: list[np.ndarray] = []
    sizes: list[int] = []

    def solved(part: RidgeStats) -> RidgeStats:
        readouts.append(part.solve(l2))
        sizes.append(part.n)
        return part

    RidgeStats.sum(map(solved, stats))  # no clients, or clients of different readouts, raise here
    return size_weighted_mean(readouts, sizes)


def run_fedavg_ridge(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """The registry's run function: size-weighted FedAvg of the clients' local ridge readouts (IncFed eqs. 4–5)."""
    run = Run(dataset, split, config, "fedavg-ridge")
    l2 = run.choose_l2(lambda grid: [run.scorer(fit_fedavg_ridge(run.stats(), l2)) for l2 in grid])
    readout = fit_fedavg_ridge(run.client_stats(), l2)
    return run.report(run.model(readout), fedavg_ridge_cost(run.n_features, run.n_outputs))
