"""Many small simulated clients, generated lazily subround by subround (IncFed §I).

Client ``i`` is a function of ``(seed, i)``: Gaussian noise shifted by its class and a client offset;
nothing is kept between subrounds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from tff_esn.data.sequences import ClientSequences, SequenceDataset


@dataclasses.dataclass(frozen=True)
class SimulatedClients:
    """``n_clients`` clients of ``sequences`` sequences, ``steps`` × ``features`` each.

    Attributes:
        n_clients: number of clients (≥ 1).
        sequences: sequences per client (≥ 1).
        steps: time steps per sequence (≥ 1).
        features: input features (≥ 1).
        n_classes: classes (≥ 2); labels are uniform.
        class_shift: mean shift of the inputs per class step (the learnable signal).
        client_shift: std of each client's own input offset (non-IID clients).
        seed: seed of everything.
    """

    n_clients: int
    sequences: int = 4
    steps: int = 20
    features: int = 3
    n_classes: int = 3
    class_shift: float = 0.5
    client_shift: float = 0.3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_clients", "sequences", "steps", "features"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"SimulatedClients.{name}: expected an integer ≥ 1, got {value!r}.")
        if not isinstance(self.n_classes, int) or self.n_classes < 2:
            raise ValueError(f"SimulatedClients.n_classes: expected an integer ≥ 2, got {self.n_classes!r}.")
        for name in ("class_shift", "client_shift"):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"SimulatedClients.{name}: expected a finite number ≥ 0, got {value!r}.")

    def client_id(self, index: int) -> str:
        return f"sim{index:0{len(str(self.n_clients - 1))}d}"

    def client(self, index: int) -> ClientSequences:
        """Client ``index`` (0-based), generated from ``(seed, index)``."""
        if not 0 <= index < self.n_clients:
            raise IndexError(f"client index {index} outside [0, {self.n_clients}).")
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, index]))
        y = rng.integers(0, self.n_classes, size=self.sequences)
        offset = rng.normal(scale=self.client_shift, size=self.features)
        x = rng.normal(size=(self.sequences, self.steps, self.features)) + offset
        x += (y * self.class_shift)[:, None, None]
        return ClientSequences(x.astype(np.float32), y.astype(np.int64))

    def dataset(self, start: int, stop: int) -> SequenceDataset:
        """Clients ``start … stop − 1`` as a :class:`SequenceDataset`."""
        clients = {self.client_id(i): self.client(i) for i in range(start, min(stop, self.n_clients))}
        return SequenceDataset(clients, self.n_classes, tuple(f"x{j}" for j in range(self.features)),
                               tuple(f"class{k}" for k in range(self.n_classes)), f"simulated:{self.n_clients}")

    def subrounds(self, size: int, *, start: int = 0) -> Iterator[SequenceDataset]:
        """Consecutive groups of ``size`` clients, from subround ``start`` on (generated lazily)."""
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"size: expected an integer ≥ 1, got {size!r}.")
        for first in range(start * size, self.n_clients, size):
            yield self.dataset(first, first + size)
