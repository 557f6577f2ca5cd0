"""How a federated computation of ours sums the clients' statistics: the one place.

:class:`StatsAggregation` says what happens between the clients' statistics and the
server's solve (IncFed eqs. 8–9): state clipping and Gaussian noise
(:mod:`tff_esn.privacy.dp_stats`) and the sum itself — ``tff.federated_sum`` or
``tff.federated_secure_sum_bitwidth`` on the fixed-point encoding of
:mod:`tff_esn.privacy.secure_sum`. :func:`federated_stats_sum` is called inside a
``tff.federated_computation``; :func:`lower_secure` makes a computation that uses the
secure intrinsic runnable on TFF's native runtime.

TFF's native runtime does not execute the secure-sum intrinsics (they need the
cryptographic protocol of a production deployment). :func:`lower_secure` replaces them with
TFF's own reference bodies (``tff.backends.test.replace_secure_intrinsics_with_bodies``):
integer sums that *assert* every client value lies in ``[0, 2^bitwidth − 1]``. The
encoding, the bit budget, the clipping and the result are those of the real protocol;
the confidentiality of the individual values is not simulated.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from tff_esn.privacy.dp_stats import GaussianStats, add_noise
from tff_esn.privacy.secure_sum import FixedPoint


@dataclasses.dataclass(frozen=True)
class StatsAggregation:
    """Clip, noise and sum of ``(A, B, n, clients)``; the default is IncFed's plain sum.

    Attributes:
        clients: number of clients K (sets the per-client noise and the bit budget).
        n_features: N_F, columns of ``B`` (sets the eigenvalue floor).
        dp: the Gaussian mechanism, or ``None``.
        secure: the fixed-point secure sum, or ``None`` for ``tff.federated_sum``.
    """

    clients: int
    n_features: int
    dp: GaussianStats | None = None
    secure: FixedPoint | None = None

    def __post_init__(self) -> None:
        if self.secure is not None and self.secure.clients != self.clients:
            raise ValueError(f"secure aggregation: encoding for {self.secure.clients} clients, run has {self.clients}.")

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


def federated_stats_sum(local, agg: StatsAggregation):
    """``(sum@SERVER, clipped@SERVER)`` of ``local@CLIENTS`` (a tuple of float64 tensors).

    Plain: ``tff.federated_sum`` and a clipped count of 0. Secure: each client encodes
    (:meth:`FixedPoint.encode`), ``tff.federated_secure_sum_bitwidth`` sums the integers
    and the number of clients, the server decodes; the clipped counts are summed securely.
    """
    import tensorflow_federated as tff

    if agg.secure is None:
        return tff.federated_sum(local), tff.federated_value(np.int64(0), tff.SERVER)
    fp = agg.secure
    value_type = local.type_signature.member
    coordinates = sum(int(np.prod(t.shape)) for t in tff.structure.flatten(value_type))

    @tff.tensorflow.computation(value_type)
    def encode(value):
        pairs = [fp.encode(v) for v in value]
        return tuple(q for q, _ in pairs), tf.add_n([c for _, c in pairs]), tf.constant(1, tf.int64)

    encoded = tff.federated_map(encode, local)
    total = tff.federated_secure_sum_bitwidth(encoded[0], fp.client_bits)
    clipped = tff.federated_secure_sum_bitwidth(encoded[1], max(1, int(coordinates).bit_length()))
    count = tff.federated_secure_sum_bitwidth(encoded[2], 1)

    @tff.tensorflow.computation(total.type_signature.member, count.type_signature.member)
    def decode(summed, clients):
        return tuple(fp.decode(v, clients) for v in summed)

    return tff.federated_map(decode, (total, count)), clipped


def lower_secure(comp, agg: StatsAggregation):
    """``comp`` with TFF's reference bodies for the secure intrinsics (module docstring)."""
    import tensorflow_federated as tff

    return comp if agg.secure is None else tff.backends.test.replace_secure_intrinsics_with_bodies(comp)
