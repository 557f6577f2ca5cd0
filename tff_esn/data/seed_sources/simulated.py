"""Many small simulated clients, generated lazily subround by subround (IncFed §I).

Client ``i`` is a function of ``(seed, i)``: Gaussian noise shifted by its class and a client offset;
nothing is kept between subrounds. :meth:`SimulatedClients.lazy` is the whole federation as a
:class:`~tff_esn.data.sequences.SequenceDataset` whose clients are generated each time one is read, so a run
(:class:`~tff_esn.closed_form.run.Run`) holds only the clients it is working on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

import numpy as np

from tff_esn.common import streams
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
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
        return self._as_dataset({self.client_id(i): self.client(i) for i in range(start, min(stop, self.n_clients))})

    def lazy(self) -> SequenceDataset:
        """Every client as a :class:`SequenceDataset` of :class:`LazyClients`: none held, each generated when read
        (the same arrays every time)."""
        return self._as_dataset(LazyClients(self))

    def split(self, val: int = 0, test: int = 0) -> Split:
        """The clients in order: the last ``test`` test, the ``val`` before them validation, the rest training."""
        ids = [self.client_id(i) for i in range(self.n_clients)]
        train = self.n_clients - val - test
        if train < 1 or val < 0 or test < 0:
            raise ValueError(f"split: {val} validation and {test} test clients leave no training client of "
                             f"{self.n_clients}; give fewer.")
        return Split(f"simulated:{self.n_clients}", tuple(ids[:train]), tuple(ids[train:train + val]),
                     tuple(ids[train + val:]), rule=f"the last {test} test, the {val} before validation")

    def _as_dataset(self, clients: Mapping[str, ClientSequences]) -> SequenceDataset:
        return SequenceDataset(clients, self.n_classes, tuple(f"x{j}" for j in range(self.features)),
                               tuple(f"class{k}" for k in range(self.n_classes)), f"simulated:{self.n_clients}")

    def subrounds(self, size: int, *, start: int = 0) -> Iterator[SequenceDataset]:
        """Consecutive groups of ``size`` clients, from subround ``start`` on (generated lazily)."""
        if not is_count(size, 1):
            raise ValueError(f"size: expected an integer ≥ 1, got {size!r}.")
        for first in range(start * size, self.n_clients, size):
            yield self.dataset(first, first + size)


@dataclasses.dataclass(frozen=True, eq=False)
class LazyClients(Mapping):
    """The clients of ``source`` by id, each generated when read (:meth:`SimulatedClients.client`), none kept."""

    source: SimulatedClients

    def _index(self, cid: object) -> int | None:
        width = len(self.source.client_id(0))
        if not (isinstance(cid, str) and len(cid) == width and cid.startswith("sim") and cid[3:].isdigit()):
            return None
        index = int(cid[3:])
        return index if index < self.source.n_clients else None

    def __getitem__(self, cid: str) -> ClientSequences:
        index = self._index(cid)
        if index is None:
            raise KeyError(cid)
        return self.source.client(index)

    def __contains__(self, cid: object) -> bool:
        return self._index(cid) is not None

    def __iter__(self) -> Iterator[str]:
        return (self.source.client_id(i) for i in range(self.source.n_clients))

    def __len__(self) -> int:
        return self.source.n_clients
