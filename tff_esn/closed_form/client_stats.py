"""The clients' ridge statistics checked for exact federation (IncFed eqs. 8–9)."""

from __future__ import annotations

from collections.abc import Sequence

from tff_esn.esn.ridge import RidgeStats


def check_clients(stats: Sequence[RidgeStats]) -> list[RidgeStats]:
    """The clients' statistics as a list; ``ValueError`` for no clients, an empty client or mismatched shapes."""
    stats = list(stats)
    if not stats:
        raise ValueError("clients: no client statistics to aggregate.")
    for i, s in enumerate(stats):
        if s.n == 0:
            raise ValueError(f"clients[{i}]: empty client (no states); drop it or give it data.")
        if s.A.shape != stats[0].A.shape or s.bias != stats[0].bias:
            raise ValueError(
                f"clients[{i}]: statistics of shape A {s.A.shape} (bias={s.bias}) differ from clients[0]'s "
                f"A {stats[0].A.shape} (bias={stats[0].bias}); exact federation needs the same reservoir "
                "size on every client (use the ensemble or alignment algorithms for different reservoirs)."
            )
    return stats
