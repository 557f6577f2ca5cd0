"""How a round's clients are chosen under client-level DP: amplification by sampling needs secret Poisson picks
at rate ``q`` (:func:`poisson_clients`); against the sampling server only ``epsilon_without_amplification`` holds."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tff_esn.common import streams

POISSON = "poisson"
ALL = "all clients"
FIXED_PUBLIC = "fixed-size without replacement, seeded by --seed"


def poisson_clients(ids: Sequence[str], rate: float, seed: int, round_num: int) -> list[str]:
    """The clients of round ``round_num``: each of ``ids`` with probability ``rate``, from the secret ``seed``."""
    rng = streams.POISSON_SAMPLING.generator(seed, round_num)
    keep = rng.random(len(ids)) < rate
    return [cid for cid, k in zip(ids, keep) if k]


@dataclasses.dataclass(frozen=True)
class ClientSampling:
    """A FedAvg/FedCurv run's client sampling: ``scheme``, per-round ``rate`` and whether the selection is ``secret``."""

    scheme: str
    rate: float
    secret: bool

    @property
    def amplified(self) -> bool:
        """The accountant uses ``rate`` (Poisson sampling; the claim holds while the selection is secret)."""
        return self.scheme == POISSON

    @property
    def published(self) -> bool:
        """The per-round selection (ids, counts) may be written to the outputs."""
        return self.scheme != POISSON

    def section(self) -> dict:
        """``privacy.sampling`` of ``metrics.json``."""
        return {"scheme": self.scheme, "rate": self.rate, "selection_secret": self.secret,
                "selection_published": self.published, "amplification_by_sampling": self.amplified}


def client_sampling(dp: bool, clients_per_round: int, clients: int, seed_known: bool) -> ClientSampling:
    """Poisson sampling at q = m / N under DP (secret unless the seed is known), else the public fixed-size draw."""
    rate = min(1.0, clients_per_round / clients)
    if rate == 1.0:
        return ClientSampling(ALL, 1.0, secret=False)
    if dp:
        return ClientSampling(POISSON, rate, secret=not seed_known)
    return ClientSampling(FIXED_PUBLIC, rate, secret=False)
