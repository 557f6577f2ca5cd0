"""FedAvg of ridge readouts (IncFed §II-B, eqs. 4–5).

Each client solves its own ridge readout ``W_c = Y_c S_cᵀ (S_c S_cᵀ + β_c I)⁻¹`` (eq. 4)
and the server averages them weighted by the local sizes,
``W = Σ_c (N_train,c / N_train) W_c``: the weighted mean the paper's text describes (its
printed eq. 5 is a typo, DEVIATIONS.md). N_train,c counts the client's training states.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tff_esn.closed_form.client_stats import check_clients
from tff_esn.closed_form.configs import ReadoutConfig, fedavg_ridge_cost
from tff_esn.closed_form.run import Run
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.ridge import RidgeStats


def local_readouts(stats: Sequence[RidgeStats], l2: float) -> list[np.ndarray]:
    """Each client's own ridge readout ``W_c`` with ``β_c = l2`` (IncFed eq. 4)."""
    return [s.solve(l2) for s in check_clients(stats)]


def size_weighted_mean(values: Sequence[np.ndarray], sizes: Sequence[float]) -> np.ndarray:
    """FedAvg's mean ``Σ_c (n_c / n) v_c`` of equally shaped per-client arrays, float64.

    The one size-weighted mean of the closed-form family: the readouts of FedAvg-ridge
    (IncFed eq. 5, corrected), FedIP's (g, b) (FedIP Alg. 1) and the ensemble's outputs
    (thesis Table 6.5 ensemble). Raises ``ValueError`` for no values, a length mismatch,
    non-positive or non-finite sizes, or values of different shapes.
    """
    if not len(values) or len(values) != len(sizes):
        raise ValueError(f"values and sizes: expected equal, non-zero lengths, got {len(values)} and {len(sizes)}.")
    sizes = np.asarray(sizes, dtype=np.float64)
    if np.any(~np.isfinite(sizes)) or np.any(sizes <= 0):
        raise ValueError(f"sizes: expected positive local sizes, got {sizes.tolist()}.")
    shapes = {np.shape(v) for v in values}
    if len(shapes) != 1:
        raise ValueError(f"values: expected one shape for every client, got {sorted(shapes)}.")
    return np.tensordot(sizes / sizes.sum(), np.stack(values).astype(np.float64), axes=1)


def fit_fedavg_ridge(stats: Sequence[RidgeStats], l2: float) -> np.ndarray:
    """FedAvg of the clients' local ridge readouts, weighted by their numbers of states."""
    stats = check_clients(stats)
    return size_weighted_mean(local_readouts(stats, l2), [s.n for s in stats])


def run_fedavg_ridge(dataset: SequenceDataset, split: Split, config: ReadoutConfig) -> dict:
    """The registry's run function: size-weighted FedAvg of the clients' local ridge readouts (IncFed eqs. 4–5)."""
    run = Run(dataset, split, config, "fedavg-ridge")
    readout = fit_fedavg_ridge(run.stats(), run.choose_l2(
        lambda grid: [run.scorer(fit_fedavg_ridge(run.stats(), l2)) for l2 in grid]))
    return run.report(run.scorer(readout), fedavg_ridge_cost(run.n_features, run.n_outputs))
