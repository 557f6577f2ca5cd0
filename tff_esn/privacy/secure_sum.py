"""Fixed-point encoding of float statistics for ``tff.federated_secure_sum_bitwidth``.

``q = round((clip(v, −R, R) + R)·s)``, ``s = L/(2R)``, ``L = 2^(b − ⌈log₂ K⌉) − 1``; decoded ``Q/s − K·R``,
off by at most ``K·(R/L + 16·2⁻⁵³·R)`` per coordinate. Values beyond ±R are clipped and counted;
:func:`stats_bound` (``R = max_c n_c``) never clips plain ridge statistics.
"""

from __future__ import annotations

import dataclasses
import math

from tff_esn.common.lazy import LazyModule
from tff_esn.common.validation import is_count

tf = LazyModule("tensorflow")

MAX_BITS = 62  # TFF's secure sum runs on int64 and keeps one bit for the sum of two values
UNIT_ROUNDOFF = 2.0 ** -53


def client_bits(bits: int, clients: int) -> int:
    """``b − ⌈log₂ K⌉``; a ``ValueError`` when the aggregate width leaves a client no bit."""
    if not (is_count(bits, 1) and bits <= MAX_BITS):
        raise ValueError(f"secure aggregation bits: expected an integer in [1, {MAX_BITS}], got {bits!r}.")
    headroom = math.ceil(math.log2(clients)) if clients > 1 else 0
    if bits - headroom < 1:
        raise ValueError(
            f"secure aggregation: a {bits}-bit sum over {clients} clients leaves no bit per client value "
            f"(⌈log₂ {clients}⌉ = {headroom} bits of headroom); use --secure-bits ≥ {headroom + 16}.")
    return bits - headroom


def stats_bound(client_states: list[int]) -> float:
    """``max_c n_c``: bounds every entry of the clients' ``A_c``, ``B_c`` and ``n_c`` (module docstring)."""
    return float(max(client_states))


@dataclasses.dataclass(frozen=True)
class FixedPoint:
    """The encoding of the module docstring: aggregate ``bits``, range ``bound`` R, ``clients`` K, where R comes
    from (``source``)."""

    bits: int
    bound: float
    clients: int
    source: str = ""

    def __post_init__(self) -> None:
        client_bits(self.bits, self.clients)

    @property
    def client_bits(self) -> int:
        return client_bits(self.bits, self.clients)

    @property
    def levels(self) -> int:
        """``L = 2^b_c − 1``: the largest encoded client value."""
        return 2 ** self.client_bits - 1

    @property
    def scale(self) -> float:
        """``s = L / (2R)``: integer steps per unit."""
        return self.levels / (2.0 * self.bound)

    def error_bound(self) -> float:
        """``K·(R/L + 16·u·R)``: the largest decoding error of one summed coordinate."""
        return self.clients * (self.bound / self.levels + 16 * UNIT_ROUNDOFF * self.bound)

    def encode(self, value: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """``(q int64, clipped count int64)`` of a float tensor."""
        value = tf.cast(value, tf.float64)
        bound = tf.constant(self.bound, tf.float64)
        clipped = tf.reduce_sum(tf.cast(tf.abs(value) > bound, tf.int64))
        q = tf.round((tf.clip_by_value(value, -bound, bound) + bound) * tf.constant(self.scale, tf.float64))
        return tf.clip_by_value(tf.cast(q, tf.int64), 0, self.levels), clipped

    def decode(self, total: tf.Tensor, clients: tf.Tensor) -> tf.Tensor:
        """``Q/s − K·R`` of a summed int64 tensor, ``clients`` (int64) values summed."""
        return (tf.cast(total, tf.float64) / tf.constant(self.scale, tf.float64)
                - tf.cast(clients, tf.float64) * tf.constant(self.bound, tf.float64))

    def to_dict(self, clipped: int | None = None) -> dict:
        """The ``secure_aggregation`` section of ``metrics.json``."""
        return {"intrinsic": "tff.federated_secure_sum_bitwidth", "bits": self.bits,
                "client_bits": self.client_bits, "range": [-self.bound, self.bound], "scale": self.scale,
                "error_bound": self.error_bound(), "clipped_values": clipped,
                **({"range_source": self.source} if self.source else {})}
