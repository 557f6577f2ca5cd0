"""The Gaussian mechanism on FedIP's (g, b) rounds (FedIP Alg. 1; DP-FedAvg, McMahan et al. 2018).

Client-level: each update ``Δ_c = (g_c − g, b_c − b)`` is clipped to norm C and the server applies
``Σ_c Δ̄_c / K + N(0, (z·C/K)²)``; with the readout statistics' release that is ``rounds + 1`` Gaussian
releases at one z. The noisy gain is floored at ``min_gain`` (post-processing).
"""

from __future__ import annotations

import dataclasses
import math

from tff_esn.common.lazy import LazyModule
from tff_esn.privacy import accounting
from tff_esn.privacy.dp_stats import clip_rows

tf = LazyModule("tensorflow")


@dataclasses.dataclass(frozen=True)
class GaussianUpdates:
    """The Gaussian mechanism on K clients' clipped parameter updates; round r's noise from ``(seed, r)``."""

    noise_multiplier: float
    delta: float
    clip: float
    clients: int
    seed: int = 0
    seed_known: bool = False

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


def fedip_privacy(stats_section: dict, dp: GaussianUpdates, rounds: int) -> dict:
    """The ``privacy`` section of a DP FedIP run: ``rounds`` (g, b) releases and the statistics', composed."""
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
