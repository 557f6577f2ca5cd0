"""Communication cost of every algorithm: floats (and bytes) per client, per round.

One function per algorithm, named by its registry entry, with the seed's formula (N_F = N_R + bias input,
N_Y outputs, N_U inputs); scalars are not counted (IncFed §II-B), bytes use the width of the values sent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any


@dataclasses.dataclass(frozen=True)
class Phase:
    """``rounds`` rounds each sending ``up``/``down`` floats per client of ``bytes_per_float`` bytes."""

    name: str
    up: float
    down: float
    rounds: int = 1
    bytes_per_float: int = 8

    def __post_init__(self) -> None:
        if self.up < 0 or self.down < 0 or self.rounds < 0 or self.bytes_per_float not in (2, 4, 8):
            raise ValueError(f"Phase {self.name!r}: counts must be ≥ 0 and bytes_per_float 2, 4 or 8, got {self}.")


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

    @property
    def up_bytes(self) -> float:
        return sum(p.up * p.rounds * p.bytes_per_float for p in self.phases)

    @property
    def down_bytes(self) -> float:
        return sum(p.down * p.rounds * p.bytes_per_float for p in self.phases)

    def __add__(self, other: "CommunicationCost") -> "CommunicationCost":
        return CommunicationCost(self.phases + other.phases)

    def to_dict(self) -> dict[str, Any]:
        """The ``communication`` section of ``metrics.json``."""
        return {
            "up_floats_per_client": self.up_floats,
            "down_floats_per_client": self.down_floats,
            "rounds": self.rounds,
            "up_bytes_per_client": self.up_bytes,
            "down_bytes_per_client": self.down_bytes,
            "phases": [
                {"name": p.name, "up_floats_per_round": p.up, "down_floats_per_round": p.down,
                 "rounds": p.rounds, "bytes_per_float": p.bytes_per_float}
                for p in self.phases
            ],
        }


def _check(**counts: int) -> None:
    for name, value in counts.items():
        if int(value) != value or value < 1:
            raise ValueError(f"communication: {name} must be an integer ≥ 1, got {value!r}.")


def readout_floats(n_features: int, n_outputs: int) -> int:
    """Entries of a readout W, N_Y·N_F."""
    _check(n_features=n_features, n_outputs=n_outputs)
    return n_outputs * n_features


def fedavg_ridge(n_features: int, n_outputs: int) -> CommunicationCost:
    """IncFed §II-B: up and down N_Y·N_F."""
    w = readout_floats(n_features, n_outputs)
    return CommunicationCost((Phase("fedavg-ridge", w, w),))


def incfed(n_features: int, n_outputs: int) -> CommunicationCost:
    """IncFed §III: up N_F² + N_F·N_Y, down N_Y·N_F."""
    w = readout_floats(n_features, n_outputs)
    return CommunicationCost((Phase("incfed", n_features**2 + w, w),))


def partial_incfed(k: int, n_features: int, n_outputs: int) -> CommunicationCost:
    """Thesis §B.3: up k(N_Y + N_F) (= k(1 + N_x) for one output), down N_Y·N_F."""
    _check(k=k)
    if k > n_features:
        raise ValueError(f"communication: k must be ≤ n_features={n_features}, got {k}.")
    return CommunicationCost((Phase("partial-incfed", k * (n_outputs + n_features),
                                    readout_floats(n_features, n_outputs)),))


def pfedrr(selected: Sequence[int], n_features: int, n_outputs: int) -> CommunicationCost:
    """pFedRR eq. 2: up N_Y·N_F + N_F + |S_c|(|S_c| − 1), averaged over clients; down N_Y·N_F."""
    if not selected or any(s < 0 or s > n_features for s in selected):
        raise ValueError(f"communication: selected counts must lie in [0, {n_features}], got {list(selected)}.")
    w = readout_floats(n_features, n_outputs)
    up = sum(w + n_features + s * (s - 1) for s in selected) / len(selected)
    return CommunicationCost((Phase("pfedrr", up, w),))


def fedip(rounds: int, units: int, n_features: int, n_outputs: int) -> CommunicationCost:
    """FedIP Alg. 1: ``rounds`` rounds of (g, b), 2·N_R float32 each way, then one IncFed round."""
    _check(units=units)
    if rounds < 0:
        raise ValueError(f"communication: rounds must be ≥ 0, got {rounds}.")
    ip = Phase("fedip", 2 * units, 2 * units, rounds, bytes_per_float=4)
    return CommunicationCost((ip,)) + incfed(n_features, n_outputs)


def ensemble(clients: int, n_features: int, n_outputs: int) -> CommunicationCost:
    """Prediction ensemble: up one readout N_Y·N_F, down all C members' readouts."""
    _check(clients=clients)
    w = readout_floats(n_features, n_outputs)
    return CommunicationCost((Phase("ensemble", w, clients * w),))


def rls(n_features: int, n_outputs: int) -> CommunicationCost:
    """Sequential recursive least squares: each client receives ``(W, P)`` and passes them on,
    N_F² + N_Y·N_F each way."""
    state = n_features**2 + readout_floats(n_features, n_outputs)
    return CommunicationCost((Phase("rls", state, state),))


def centralized(raw_floats: Sequence[int]) -> CommunicationCost:
    """Centralized training: each client uploads its raw inputs (mean over clients), nothing down."""
    if not raw_floats:
        raise ValueError("communication: centralized needs at least one client.")
    return CommunicationCost((Phase("centralized", sum(raw_floats) / len(raw_floats), 0, 1, 4),))


def fedavg(trainable: int, non_trainable: int, rounds: int = 1) -> CommunicationCost:
    """Thesis Alg. 1: per round down the model (trainable + non-trainable weights), up the trainable delta."""
    _check(trainable=trainable)
    if non_trainable < 0 or rounds < 0:
        raise ValueError(f"communication: non_trainable and rounds must be ≥ 0, got {non_trainable}, {rounds}.")
    return CommunicationCost((Phase("fedavg", trainable, trainable + non_trainable, rounds, bytes_per_float=4),))


def fedcurv(trainable: int, non_trainable: int, rounds: int = 1) -> CommunicationCost:
    """Thesis Alg. 2: FedAvg's floats plus the Fisher terms u and v (2 × trainable) both ways."""
    (phase,) = fedavg(trainable, non_trainable, rounds).phases
    return CommunicationCost((dataclasses.replace(phase, name="fedcurv", up=phase.up + 2 * trainable,
                                                  down=phase.down + 2 * trainable),))
