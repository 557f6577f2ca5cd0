"""Each client's own Gaussian noise on its ridge statistics: the DP of pFedRR / Partial IncFed.

Local model only: a masked or completed upload depends on the data through its mask too, so each client
noises its full ``(A_c, B_c, n_c)`` first (σ_j = z·√3·Δ_j, B_c floored at 2·σ_B·√N_F); ranking,
masking and completion are post-processing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tff_esn.common.lazy import LazyModule
from tff_esn.privacy.dp_stats import GaussianStats, add_noise, floor_eigenvalues
from tff_esn.esn.ridge import RidgeStats

tf = LazyModule("tensorflow")


def local_noisy_stats(stats: Sequence[RidgeStats], dp: GaussianStats) -> tuple[list[RidgeStats], int]:
    """Each client's ``(A_c, B_c, n_c)`` with own Gaussian noise (seed ``(dp.seed, c)``) and floor-raised eigenvalues;
    the harvest does not clip, so ``dp.clip`` ≥ √N_F."""
    out, raised_total = [], 0
    for c, s in enumerate(stats):
        n_features = s.B.shape[0]
        if dp.clip < math.sqrt(n_features) * (1 - 1e-12):
            raise ValueError(f"dp clip {dp.clip:g} < √N_F = {math.sqrt(n_features):.4g}: these statistics are "
                             "harvested unclipped; omit --dp-clip (the default √N_F clips nothing).")
        stddevs = dp.client_stddevs(len(stats))
        a, b, n = add_noise(tf.constant(s.A, tf.float64), tf.constant(s.B, tf.float64),
                            tf.constant(float(s.n), tf.float64), stddevs, tf.constant([dp.seed, c], tf.int64))
        if dp.noise_multiplier > 0:
            b, raised = floor_eigenvalues(b, dp.client_floor(len(stats), n_features))
            raised_total += int(raised)
        # noisy count floored at 1 (post-processing): large noise can make it ≤ 0, which reads as an empty client
        out.append(RidgeStats(np.asarray(a), np.asarray(b), max(1, int(round(float(n)))), s.clients, s.bias))
    return out, raised_total


def local_privacy(stats_section: dict, dp: GaussianStats, clients: int, n_features: int, raised: int) -> dict:
    """The ``privacy`` section of pFedRR / Partial IncFed under :func:`local_noisy_stats`."""
    return {**stats_section, "psd": {"method": "eigenvalue floor V·max(Λ, floor)·Vᵀ on each client's B_c + noise",
                                     "floor": dp.client_floor(clients, n_features), "eigenvalues_raised": raised},
            "noise": "each client perturbs its full (A_c, B_c, n_c) before ranking, masking or completing"}
