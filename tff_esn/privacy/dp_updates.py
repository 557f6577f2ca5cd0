"""Gaussian mechanisms for the closed-form algorithms beyond IncFed: FedIP's (g, b) rounds and
the local statistics of pFedRR / Partial IncFed.

**FedIP's (g, b) rounds** (FedIP Alg. 1; DP-FedAvg, McMahan et al. 2018). Privacy unit: a
*client* — its (g, b) after local IP is a function of all its sequences, with no per-record
bound. Each round client c sends its update ``Δ_c = (g_c − g, b_c − b)`` (one vector of 2·N
numbers) clipped to L2 norm ``C`` (:func:`tff_esn.privacy.dp_stats.clip_rows`); the server
averages with the fixed denominator K (all K clients take part every round), adds
N(0, (z·C/K)²) per coordinate and applies the mean: ``(g, b) ← (g, b) + Σ_c Δ̄_c / K + noise``.
Adding or removing one client moves the sum by at most C, so each round is the Gaussian
mechanism with noise multiplier z; the rounds compose (:mod:`tff_esn.privacy.accounting`).
Client-level DP implies record-level DP at the same (ε, δ), so a FedIP run's total ε is the
composition of its rounds with the one release of the readout statistics
(:class:`~tff_esn.privacy.dp_stats.GaussianStats`, same z): ``rounds + 1`` Gaussian releases.
The noisy gain is projected onto ``g ≥ min_gain`` (post-processing).

**pFedRR / Partial IncFed** (local model only). A client's upload — pFedRR's masked
``(A_c D_c, B̃_c)`` (pFedRR eq. 2) or Partial IncFed's masked/completed ``(A_c*, B_c*)``
(thesis eq. B.16) — depends on its data twice: through the statistics and through the mask
(importance ranking) or the Nyström completion, so the per-record sensitivity of the upload
is unbounded and noise on the server's sum would not be DP. Each client therefore perturbs
its full ``(A_c, B_c, n_c)`` with the Gaussian mechanism *before* anything else
(:func:`local_noisy_stats`: σ_j = z·√3·Δ_j as IncFed's local model, B_c's eigenvalues floored
at the client's own noise edge 2·σ_B·√N_F); ranking, masking and completion are then
post-processing of a DP release, and every upload is (ε, δ)-DP against anyone.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from tff_esn.lazy import LazyModule
from tff_esn.privacy import accounting
from tff_esn.privacy.config import check_clip
from tff_esn.privacy.dp_stats import GaussianStats, add_noise, clip_rows, floor_eigenvalues
from tff_esn.esn.ridge import RidgeStats

tf = LazyModule("tensorflow")


@dataclasses.dataclass(frozen=True)
class GaussianUpdates:
    """The Gaussian mechanism on clients' clipped parameter updates (module docstring).

    Attributes:
        noise_multiplier: ``z`` ≥ 0 (0: clipping only, ε = ∞).
        delta: δ ∈ (0, 1).
        clip: update norm bound C > 0.
        clients: K, the fixed denominator of the mean (every client, every round).
        seed: seed of the noise (round r draws from ``(seed, r)``).
    """

    noise_multiplier: float
    delta: float
    clip: float
    clients: int
    seed: int = 0

    def __post_init__(self) -> None:
        accounting.check_noise_multiplier(self.noise_multiplier)
        accounting.check_delta(self.delta)
        check_clip(self.clip)
        if not isinstance(self.clients, int) or self.clients < 1:
            raise ValueError(f"clients: expected an integer ≥ 1, got {self.clients!r}.")

    @property
    def stddev_on_mean(self) -> float:
        """``z·C/K``: the noise standard deviation per coordinate of the averaged update."""
        return self.noise_multiplier * self.clip / self.clients

    def clip_update(self, update: tf.Tensor) -> tf.Tensor:
        """The update vector scaled to L2 norm ≤ C."""
        return clip_rows(update[None, :], self.clip)[0]

    def noisy_mean(self, total: tf.Tensor, round_index) -> tf.Tensor:
        """``total / K`` plus N(0, (z·C/K)²) per coordinate, drawn from ``(seed, round_index)``."""
        seed = tf.stack([tf.constant(self.seed, tf.int64), tf.cast(round_index, tf.int64)])
        noise = tf.random.stateless_normal(tf.shape(total), seed, dtype=total.dtype)
        return total / self.clients + self.stddev_on_mean * noise

    def section(self, rounds: int) -> dict:
        """What the ``privacy`` section says about the rounds (ε of the rounds alone)."""
        return {"mechanism": "gaussian on clipped (Δg, Δb) client updates, noise at the server (DP-FedAvg)",
                "privacy_unit": "one client", "clip": self.clip, "noise_multiplier": self.noise_multiplier,
                "noise_stddev_on_mean": self.stddev_on_mean, "rounds": rounds, "sampling_rate": 1.0,
                "epsilon": None if self.noise_multiplier == 0 or rounds == 0 else
                accounting.epsilon(self.noise_multiplier, self.delta, rounds)}


def local_noisy_stats(stats: Sequence[RidgeStats], dp: GaussianStats) -> tuple[list[RidgeStats], int]:
    """Each client's ``(A_c, B_c, n_c)`` with its own Gaussian noise (local model, module docstring)
    and the total number of eigenvalues raised by the clients' floors.

    The statistics must be those of clipped states: the harvest does not clip, so
    ``dp.clip`` must be at least √N_F (every reservoir state's norm; nothing to clip).
    Client c's noise is drawn from the seed pair ``(dp.seed, c)``.
    """
    if dp.model != "local":
        raise ValueError("a client's upload here depends on its data through its mask / completion too, so only "
                         "each client noising its own statistics first is DP: use --dp-model local.")
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
        out.append(RidgeStats(np.asarray(a), np.asarray(b), max(0, int(round(float(n)))), s.clients, s.bias))
    return out, raised_total


def fedip_privacy(stats_section: dict, dp: GaussianUpdates, rounds: int) -> dict:
    """The ``privacy`` section of a DP FedIP run: ``rounds`` (g, b) releases and the one release of
    the readout statistics (``stats_section``, same z), composed by the accountant."""
    z = dp.noise_multiplier
    total = accounting.epsilon(z, dp.delta, rounds + 1)
    return {**stats_section,
            "mechanism": "gaussian on FedIP's clipped (Δg, Δb) rounds (client-level) and on the clipped readout "
                         "statistics (A, B, n) (record-level), one noise multiplier",
            "epsilon": None if math.isinf(total) else total, "epsilon_infinite": math.isinf(total),
            "rounds": rounds + 1, "readout_statistics_epsilon": stats_section["epsilon"],
            "privacy_unit": f"{stats_section['privacy_unit']} (the total ε is record-level; the (g, b) rounds "
                            "alone protect a whole client)",
            "ip_rounds": dp.section(rounds)}


def local_privacy(stats_section: dict, dp: GaussianStats, clients: int, n_features: int, raised: int) -> dict:
    """The ``privacy`` section of pFedRR / Partial IncFed under :func:`local_noisy_stats`."""
    return {**stats_section, "psd": {"method": "eigenvalue floor V·max(Λ, floor)·Vᵀ on each client's B_c + noise",
                                     "floor": dp.client_floor(clients, n_features), "eigenvalues_raised": raised},
            "noise": "each client perturbs its full (A_c, B_c, n_c) before ranking, masking or completing"}
