"""How a federated computation of ours sums the clients' statistics: the one place.

:class:`StatsAggregation`: clipping, Gaussian noise and ``tff.federated_sum`` or the fixed-point
``tff.federated_secure_sum_bitwidth`` (IncFed eqs. 8–9); :func:`lower_secure` swaps the secure
intrinsics for TFF's reference bodies; :class:`SecureRidgeSum` is the numpy algorithms' secure sum.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterable

import numpy as np

from tff_esn.common.lazy import LazyModule
from tff_esn.privacy.coverage import public
from tff_esn.privacy.dp_stats import GaussianStats, add_noise
from tff_esn.privacy.secure_sum import FixedPoint
from tff_esn.esn.ridge import RidgeStats
from tff_esn.runtime import load_tff

tf = LazyModule("tensorflow")


@dataclasses.dataclass(frozen=True)
class StatsAggregation:
    """Clip, noise and sum of ``(A, B, n, clients)`` over K ``clients`` (IncFed's plain sum by default)."""

    clients: int
    n_features: int
    dp: GaussianStats | None = None
    secure: FixedPoint | None = None

    @property
    def clip(self) -> float | None:
        return None if self.dp is None else self.dp.clip

    @property
    def noisy(self) -> bool:
        return self.dp is not None and self.dp.noise_multiplier > 0

    def floor(self) -> float:
        return self.dp.eigenvalue_floor(self.clients, self.n_features) if self.noisy else 0.0


def client_noise(stats, seed, agg: StatsAggregation):
    """A client's ``(A, B, n, clients)`` with its share of the noise (local/distributed DP)."""
    if not agg.noisy or agg.dp.model == "central":
        return stats
    a, b, n, count = stats
    return (*add_noise(a, b, n, agg.dp.client_stddevs(agg.clients), seed), count)


def server_noise(total, agg: StatsAggregation):
    """The summed ``(A, B, n, clients)`` with the central model's noise (seeded by ``dp.seed``)."""
    if not agg.noisy or agg.dp.model != "central":
        return total
    a, b, n, count = total
    seed = tf.constant([agg.dp.seed, -1], tf.int64)
    return (*add_noise(a, b, n, agg.dp.server_stddevs(agg.clients), seed), count)


def federated_stats_sum(local, secure: FixedPoint | None):
    """``(sum, clipped)@SERVER`` of ``local@CLIENTS``: ``federated_sum`` or a fixed-point secure sum decoded in float64."""
    tff = load_tff()

    if secure is None:
        return tff.federated_sum(local), tff.federated_value(np.int64(0), tff.SERVER)
    fp = secure
    value_type = local.type_signature.member
    coordinates = sum(int(np.prod(t.shape)) for t in tff.structure.flatten(value_type))

    @tff.tensorflow.computation(value_type)
    def encode(value):
        pairs = [fp.encode(v) for v in value]
        return tuple(q for q, _ in pairs), tf.add_n([c for _, c in pairs]), tf.constant(1, tf.int64)

    encoded = tff.federated_map(encode, local)
    total = tff.federated_secure_sum_bitwidth(encoded[0], fp.client_bits)
    clipped = tff.federated_secure_sum_bitwidth(public(encoded[1], "secure_clipped_count"),
                                                max(1, int(coordinates).bit_length()))
    count = tff.federated_secure_sum_bitwidth(encoded[2], 1)

    @tff.tensorflow.computation(total.type_signature.member, count.type_signature.member)
    def decode(summed, clients):
        return tuple(fp.decode(v, clients) for v in summed)

    return tff.federated_map(decode, (total, count)), clipped


def lower_secure(comp, secure: FixedPoint | None):
    """``comp`` with TFF's reference bodies for the secure intrinsics (module docstring)."""
    tff = load_tff()

    return comp if secure is None else tff.backends.test.replace_secure_intrinsics_with_bodies(comp)


@functools.lru_cache(maxsize=16)
def build_secure_sum(shapes: tuple[tuple[int, ...], ...], secure: FixedPoint):
    """``(values@CLIENTS) -> (sum@SERVER, clipped@SERVER)`` through :func:`federated_stats_sum`, cached per shape."""
    tff = load_tff()

    member = tff.StructWithPythonType([tff.TensorType(np.float64, s) for s in shapes], tuple)

    @tff.federated_computation(tff.FederatedType(member, tff.CLIENTS))
    def secure_sum(values):
        return federated_stats_sum(values, secure)

    return lower_secure(secure_sum, secure)


class SecureRidgeSum:
    """``RidgeStats.sum`` via the fixed-point secure sum (numpy algorithms); ``clipped_values``, ``seconds`` accumulate."""

    def __init__(self, secure: FixedPoint):
        self.secure = secure
        self.clipped_values = 0
        self.seconds = 0.0

    def __call__(self, stats: Iterable[RidgeStats]) -> RidgeStats:
        stats = list(stats)
        values = [(s.A, s.B, np.float64(s.n)) for s in stats]
        comp = build_secure_sum(tuple(np.shape(v) for v in values[0]), self.secure)
        start = time.perf_counter()
        (a, b, n), clipped = comp(values)
        self.seconds += time.perf_counter() - start
        self.clipped_values += int(clipped)
        return RidgeStats(np.asarray(a), np.asarray(b), int(round(float(n))), sum(s.clients for s in stats),
                          stats[0].bias)
