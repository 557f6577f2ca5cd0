"""The shape of a data source's sequences, known before its arrays are loaded.

A :class:`DataLayout` holds each padded block's sequence lengths, features and value bytes, read from
``.npy`` headers or a streaming ``.ts`` pass, so :mod:`tff_esn.runs.memory` can refuse a run before allocating.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class DataLayout:
    """``blocks``: (n_b,) padded steps per sequence block; ``features`` per step; ``stored_bytes`` as the source
    holds them (0 once in memory)."""

    source: str
    blocks: tuple[np.ndarray, ...]
    features: int
    stored_bytes: int = 0

    @property
    def sequences(self) -> int:
        return int(sum(b.size for b in self.blocks))

    @property
    def longest(self) -> int:
        """Steps of the longest sequence."""
        return int(max(int(b.max()) for b in self.blocks if b.size))

    @property
    def padded_cells(self) -> int:
        """Steps held in memory: every sequence padded to its block's longest."""
        return int(sum(b.size * int(b.max()) for b in self.blocks if b.size))
