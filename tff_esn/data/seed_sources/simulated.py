"""Many small simulated clients, generated lazily subround by subround (IncFed §I).

Client ``i`` is a function of ``(seed, i)``: Gaussian noise shifted by its class and a client offset;
nothing is kept between subrounds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from tff_esn.common import streams
from tff_esn.data.sequences import ClientSequences, SequenceDataset
from tff_esn.common.validation import check_field, is_count, is_finite


@dataclasses.dataclass(frozen=True)
class SimulatedClients:
    """``n_clients`` × ``sequences`` sequences of ``steps`` × ``features``, uniform labels of ``n_classes`` classes
    shifted by ``class_shift``, a client offset of std ``client_shift`` (non-IID); seeded by ``seed``."""

    n_clients: int
    sequences: int = 4
    steps: int = 20
    features: int = 3
    n_classes: int = 3
    class_shift: float = 0.5
    client_shift: float = 0.3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_clients", "sequences", "steps", "features", "n_classes"):
            low = 2 if name == "n_classes" else 1
            check_field(self, name, is_count(getattr(self, name), low), f"an integer ≥ {low}", flag="")
        for name in ("class_shift", "client_shift"):
            check_field(self, name, is_finite(getattr(self, name)) and getattr(self, name) >= 0,
                        "a finite number ≥ 0", flag="")

    def client_id(self, index: int) -> str:
        return f"sim{index:0{len(str(self.n_clients - 1))}d}"

    def client(self, index: int) -> ClientSequences:
        """Client ``index`` (0-based), generated from stream ``simulated.client``."""
        rng = streams.SIMULATED_CLIENT.generator(self.seed, index)
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
        if not is_count(size, 1):
            raise ValueError(f"size: expected an integer ≥ 1, got {size!r}.")
        for first in range(start * size, self.n_clients, size):
            yield self.dataset(first, first + size)
