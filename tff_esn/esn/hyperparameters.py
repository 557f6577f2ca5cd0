"""Reservoir hyperparameters as a frozen, validated dataclass."""

from __future__ import annotations

import dataclasses
from typing import Any

from tff_esn.validation import SEED_MAX, check_field, is_count, is_finite, is_seed

#: Which states enter a readout: every step after the washout (``all``), the ``last`` or their ``mean``.
STATE_MODES = ("last", "mean", "all")


@dataclasses.dataclass(frozen=True)
class ReservoirConfig:
    """Hyperparameters of a leaky-integrator reservoir (IncFed eq. 1, thesis eq. 2.1).

    ``x(t) = (1 − a)·x(t−1) + a·tanh(g ⊙ (W_in u(t) + Ŵ x(t−1)) + b)``, ``x(0) = 0``.

    Attributes:
        units: number of reservoir units N_R (≥ 1).
        spectral_radius: ρ(Ŵ), the largest absolute *eigenvalue* of the recurrent
            matrix after rescaling (> 0; < 1 for the echo state property in general).
        leaky: leaking rate a ∈ (0, 1]; 1 means no leaky integration.
        input_scaling: W_in entries are uniform in [−input_scaling, input_scaling] (> 0).
        input_connectivity: fraction in (0, 1] of the inputs each unit receives; every
            unit receives exactly ``max(1, round(input_connectivity · N_U))`` inputs.
            The IncFed paper's tables give a count of connections per unit: convert with
            :func:`connectivity_from_count`.
        recurrent_connectivity: fraction in (0, 1] of the units each unit receives from,
            exactly ``max(1, round(recurrent_connectivity · N_R))`` per unit.
        bias_scaling: bias b uniform in [−bias_scaling, bias_scaling] (≥ 0; 0 = no bias,
            the papers' setting).
        seed: seed of every random draw of the reservoir (non-negative integer).
    """

    units: int = 100
    spectral_radius: float = 0.9
    leaky: float = 1.0
    input_scaling: float = 1.0
    input_connectivity: float = 1.0
    recurrent_connectivity: float = 1.0
    bias_scaling: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        check_field(self, "units", is_count(self.units, 1), "an integer ≥ 1")
        check_field(self, "spectral_radius", is_finite(self.spectral_radius) and self.spectral_radius > 0,
                    "a finite number > 0")
        check_field(self, "leaky", is_finite(self.leaky) and 0 < self.leaky <= 1, "a number in (0, 1]")
        check_field(self, "input_scaling", is_finite(self.input_scaling) and self.input_scaling > 0,
                    "a finite number > 0")
        for name in ("input_connectivity", "recurrent_connectivity"):
            check_field(self, name, is_finite(getattr(self, name)) and 0 < getattr(self, name) <= 1,
                        "a fraction in (0, 1] (use connectivity_from_count for a count per unit)")
        check_field(self, "bias_scaling", is_finite(self.bias_scaling) and self.bias_scaling >= 0,
                    "a finite number ≥ 0")
        check_field(self, "seed", is_seed(self.seed), f"an integer in [0, {SEED_MAX}]")

    def replace(self, **changes: Any) -> "ReservoirConfig":
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "ReservoirConfig":
        """Builds a config from a dict, rejecting unknown keys by name."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"ReservoirConfig: unknown field(s) {unknown}; known fields are {sorted(known)}.")
        return cls(**values)


def connectivity_from_count(count: int, fan_in: int) -> float:
    """Fraction of connections per unit from a count (IncFed Tables I–IV give counts).

    ``count`` connections out of ``fan_in`` possible ones, capped at 1.
    """
    if count < 1 or fan_in < 1:
        raise ValueError(f"connectivity_from_count: count and fan_in must be ≥ 1, got {count}, {fan_in}.")
    return min(1.0, count / fan_in)


def child_seed(seed: int, *path: int) -> int:
    """A 31-bit integer seed derived from ``seed`` and a path of integers (numpy ``SeedSequence``)."""
    import numpy as np  # this module stays importable without numpy: the CLI's --help reads its defaults

    return int(np.random.SeedSequence([seed, *path]).generate_state(1)[0] & 0x7FFFFFFF)


RESERVOIR_SEED_PURPOSE = 3
"""The path element that marks a client's own reservoir among a run's seeded draws (the
federated clients' input noise and shuffling use 1 and 2, client sampling 4)."""


def client_reservoir(config: ReservoirConfig, index: int) -> ReservoirConfig:
    """Client ``index``'s own reservoir when every client draws its own ("different
    reservoirs", thesis Table 6.5; concepts page "When reservoirs differ").

    The same hyperparameters with the seed ``child_seed(config.seed, 3, index)``: the path
    (run seed, purpose, client index) is the one every per-client draw of a run follows, so
    the reservoir seed is a pure function of the configured seed and the client's position
    (the same for any number of clients, on resume, and in the closed-form and gradient
    families alike), it cannot coincide with the client's noise or shuffling seeds, and it
    is not the configured seed (the server's, or alignment's target, reservoir).
    """
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ValueError(f"index: expected an integer ≥ 0, got {index!r}.")
    return config.replace(seed=child_seed(config.seed, RESERVOIR_SEED_PURPOSE, index))
