"""The Gaussian mechanism on IncFed/FedRR's ridge statistics (IncFed eqs. 6–9).

Record = one sequence of m states, each row clipped to norm C (default √N_F): ``Δ_A = m·C``,
``Δ_B = m·C²``, ``Δ_n = m``; noise ``σ_j = z·√3·Δ_j`` (``"central"``, ``"local"`` or ``"distributed"``:
σ_j/√K per client). The server floors B's eigenvalues at ``2·σ_B,sum·√N_F``.
"""

from __future__ import annotations

import dataclasses
import math


from tff_esn.common.lazy import LazyModule
from tff_esn.privacy import accounting

tf = LazyModule("tensorflow")

RELEASED_BLOCKS = 3  # A, B, n


def natural_clip(n_features: int) -> float:
    """``√N_F``: the norm bound every reservoir state (coordinates in [−1, 1]) already meets."""
    return math.sqrt(n_features)


def states_per_record(state_mode: str, steps: int, washout: int) -> int:
    """``m``: states one sequence adds to the statistics."""
    return steps - washout if state_mode == "all" else 1


@dataclasses.dataclass(frozen=True)
class GaussianStats:
    """Gaussian mechanism on clipped ``(A, B, n)`` (module docstring): ``z``, δ, clip C, ``m`` states per record,
    noise ``model``, secret ``seed``, eigenvalue ``floor`` of ``B``, where the ``record_bound`` on m comes from."""

    noise_multiplier: float
    delta: float
    clip: float
    states_per_record: int
    model: str = "central"
    seed: int = 0
    seed_known: bool = False
    floor: float | None = None
    record_bound: str = ""

    @property
    def sensitivities(self) -> tuple[float, float, float]:
        """``(Δ_A, Δ_B, Δ_n) = (m·C, m·C², m)``."""
        m, c = self.states_per_record, self.clip
        return m * c, m * c * c, float(m)

    def sum_stddevs(self, clients: int) -> tuple[float, float, float]:
        """Noise standard deviations on the *summed* ``(A, B, n)`` with ``clients`` clients."""
        base = [self.noise_multiplier * math.sqrt(RELEASED_BLOCKS) * d for d in self.sensitivities]
        factor = math.sqrt(clients) if self.model == "local" else 1.0
        return tuple(s * factor for s in base)

    def client_stddevs(self, clients: int) -> tuple[float, float, float]:
        """What each client adds (zeros in the central model)."""
        base = [self.noise_multiplier * math.sqrt(RELEASED_BLOCKS) * d for d in self.sensitivities]
        if self.model == "central":
            return 0.0, 0.0, 0.0
        factor = 1.0 / math.sqrt(clients) if self.model == "distributed" else 1.0
        return tuple(s * factor for s in base)

    def server_stddevs(self, clients: int) -> tuple[float, float, float]:
        """What the server adds to the sum (zeros unless central)."""
        return self.sum_stddevs(clients) if self.model == "central" else (0.0, 0.0, 0.0)

    def default_floor(self, clients: int, n_features: int) -> float:
        """``2·σ_B,sum·√N_F``: the expected spectral norm of the noise on the summed ``B``."""
        return 2.0 * self.sum_stddevs(clients)[1] * math.sqrt(n_features)

    def client_floor(self, clients: int, n_features: int) -> float:
        """``2·σ_B,client·√N_F``: the floor of one client's own noisy ``B_c`` (``floor`` if given)."""
        return 2.0 * self.client_stddevs(clients)[1] * math.sqrt(n_features) if self.floor is None else self.floor

    def eigenvalue_floor(self, clients: int, n_features: int) -> float:
        return self.default_floor(clients, n_features) if self.floor is None else float(self.floor)

    def epsilon(self) -> float:
        """ε of one release of the statistics at ``delta`` (one round, every client)."""
        return accounting.epsilon(self.noise_multiplier, self.delta)

    def report(self, clients: int, n_features: int, raised: int | None) -> accounting.PrivacyReport:
        """The ``privacy`` section: mechanism, C, z, ε, δ, rounds 1, sampling rate 1, PSD handling."""
        sum_a, sum_b, sum_n = self.sum_stddevs(clients)
        return accounting.PrivacyReport(
            mechanism=f"gaussian on clipped ridge statistics (A, B, n), {self.model} noise",
            clip=self.clip, noise_multiplier=self.noise_multiplier, epsilon=self.epsilon(), delta=self.delta,
            rounds=1, sampling_rate=1.0,
            details={"privacy_unit": f"one sequence ({self.states_per_record} states)", "model": self.model,
                     **({"record_bound": self.record_bound} if self.record_bound else {}),
                     "sensitivity": dict(zip(("A", "B", "n"), self.sensitivities)),
                     "noise_stddev_on_sum": {"A": sum_a, "B": sum_b, "n": sum_n},
                     "accountant": "dp_accounting RDP",
                     "psd": {"method": "eigenvalue floor V·max(Λ, floor)·Vᵀ on B + noise",
                             "floor": self.eigenvalue_floor(clients, n_features),
                             "eigenvalues_raised": raised}},
            dp_seed=self.seed if self.seed_known else None)


# ----------------------------------------------------------------------------- TF pieces
def clip_rows(s: tf.Tensor, clip: float) -> tf.Tensor:
    """Each row scaled to norm ≤ ``clip`` (rows within unchanged), under the name scope ``dp_clip`` the audit reads."""
    with tf.name_scope("dp_clip"):
        norms = tf.norm(s, axis=1, keepdims=True)
        tiny = tf.constant(1e-300, s.dtype)
        factor = tf.minimum(tf.ones_like(norms), tf.constant(clip, s.dtype) / tf.maximum(norms, tiny))
        return s * factor


def symmetric_normal(size, seed) -> tf.Tensor:
    """A (size, size) symmetric matrix whose upper triangle (diagonal included) is iid N(0, 1)."""
    g = tf.random.stateless_normal([size, size], seed, dtype=tf.float64)
    upper = tf.linalg.band_part(g, 0, -1)
    return upper + tf.transpose(tf.linalg.band_part(g, 0, -1) - tf.linalg.band_part(g, 0, 0))


def add_noise(a, b, n, stddevs: tuple[float, float, float], seed) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """``(A + σ_A·N, B + σ_B·N_sym, n + σ_n·N)`` with independent draws from the ``seed`` pair."""
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 3)
    sa, sb, sn = stddevs
    return (a + sa * tf.random.stateless_normal(tf.shape(a), seeds[0], dtype=tf.float64),
            b + sb * symmetric_normal(tf.shape(b)[0], seeds[1]),
            n + sn * tf.random.stateless_normal([], seeds[2], dtype=tf.float64))


def floor_eigenvalues(b: tf.Tensor, floor: float) -> tuple[tf.Tensor, tf.Tensor]:
    """``V·max(Λ, floor)·Vᵀ`` of the symmetric ``b`` and the number of eigenvalues raised."""
    values, vectors = tf.linalg.eigh(b)
    raised = tf.reduce_sum(tf.cast(values < floor, tf.int32))
    fixed = tf.maximum(values, tf.constant(floor, tf.float64))
    return tf.matmul(vectors * fixed[None, :], vectors, transpose_b=True), raised

