"""Communication cost: floats (and bytes) per client, per round, in phases.

Each algorithm's registration names its cost function (the seed's formula; N_F = N_R + bias input,
N_Y outputs); scalars are not counted (IncFed §II-B), bytes use the width of the values sent.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Phase:
    """``rounds`` rounds each sending ``up``/``down`` floats per client of ``bytes_per_float`` bytes."""

    name: str
    up: float
    down: float
    rounds: int = 1
    bytes_per_float: int = 8


@dataclasses.dataclass(frozen=True)
class CommunicationCost:
    """The phases of one run; totals are per client over the whole run."""

    phases: tuple[Phase, ...]

    @property
    def up_floats(self) -> float:
        return sum(p.up * p.rounds for p in self.phases)

    @property
    def down_floats(self) -> float:
        return sum(p.down * p.rounds for p in self.phases)

    @property
    def rounds(self) -> int:
        return sum(p.rounds for p in self.phases)

    def __add__(self, other: "CommunicationCost") -> "CommunicationCost":
        return CommunicationCost(self.phases + other.phases)

    def to_dict(self) -> dict[str, Any]:
        """The ``communication`` section of ``metrics.json``."""
        return {
            "up_floats_per_client": self.up_floats,
            "down_floats_per_client": self.down_floats,
            "rounds": self.rounds,
            "up_bytes_per_client": sum(p.up * p.rounds * p.bytes_per_float for p in self.phases),
            "down_bytes_per_client": sum(p.down * p.rounds * p.bytes_per_float for p in self.phases),
            "phases": [
                {"name": p.name, "up_floats_per_round": p.up, "down_floats_per_round": p.down,
                 "rounds": p.rounds, "bytes_per_float": p.bytes_per_float}
                for p in self.phases
            ],
        }


def check_counts(**counts: int) -> None:
    """A one-line ``ValueError`` unless every count is an integer ≥ 1."""
    for name, value in counts.items():
        if int(value) != value or value < 1:
            raise ValueError(f"communication: {name} must be an integer ≥ 1, got {value!r}.")


def readout_floats(n_features: int, n_outputs: int) -> int:
    """Entries of a readout W, N_Y·N_F."""
    return n_outputs * n_features
