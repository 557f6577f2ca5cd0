"""The memory a run must hold at once, estimated from its config and the data's shape.

:func:`estimate_memory` adds what coexists: reservoir weights (≈ 16·N_R² bytes), ridge statistics (16·(R + 1)²,
plus each training client's cached SᵀS — a run that streams its clients holds :data:`STREAMED_CLIENT_BYTES` a client
instead), cached states, and the data with its copies (calibrated by ``python -m bench memory`` and ``python -m bench
scale``); :func:`check_memory` refuses a run above physical RAM or the cgroup limit.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.data.carving import FOLDS, MIN_CLIENTS_FOR_CLIENT_FOLDS
from tff_esn.data.layout import DataLayout
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.states_numpy import HARVEST_BATCH, HARVEST_VALUES, ragged_batches


STREAMED_CLIENT_BYTES = 1024.0
"""What a streamed run keeps per training client: its id, its place in the stream's order, and the report's
predictions of its sequences (a few sequences a client)."""


def _size(n: float) -> str:
    """``n`` bytes in the largest binary unit (MiB up to EiB) that keeps the number ≥ 1."""
    for power, unit in ((60, "EiB"), (50, "PiB"), (40, "TiB"), (30, "GiB")):
        if n >= 2 ** power:
            return f"{n / 2 ** power:.1f} {unit}"
    return f"{n / 2 ** 20:.1f} MiB"


class MemoryLimitError(ValueError):
    """The run needs more memory than the machine has (one line: the estimate, its largest part and the fix)."""


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """Run bytes as ``quadratic · N_R² + linear · N_R + constant`` (N_R: ``units`` of every layer)."""

    units: int
    quadratic: float
    linear: float
    constant: float = 0.0
    data: tuple[tuple[str, float], ...] = ()
    """The data's named parts (bytes, in ``constant``)."""
    states: tuple[str, float] = ("", 0.0)
    """The data's states per reservoir unit (bytes per unit, in ``linear``)."""

    def at(self, units: int) -> float:
        """Bytes with ``units`` reservoir units."""
        return self.quadratic * units ** 2 + self.linear * units + self.constant

    @property
    def bytes(self) -> float:
        return self.at(self.units)

    def largest_units(self, limit: float) -> int:
        """The most units whose estimate stays within ``limit`` bytes (0 when none do)."""
        a, b, c = self.quadratic, self.linear, self.constant - limit
        if c > 0:
            return 0
        units = int((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a))
        while units > 0 and self.at(units) > limit:
            units -= 1
        return units


def _setting(config: Any, name: str, default: Any) -> Any:
    """A setting of a closed-form config or of a thesis config's ``model``."""
    return getattr(getattr(config, "model", config), name, default)


def layout_of(dataset: SequenceDataset) -> DataLayout:
    """The :class:`DataLayout` of a loaded dataset: one block per client (nothing left to load)."""
    first = next(iter(dataset.clients.values()))
    return DataLayout(dataset.source, tuple(c.steps for c in dataset.clients.values()), int(first.x.shape[2]))


def harvest_cells(layout: DataLayout) -> int:
    """Padded steps of the harvest's largest batch over ``layout`` pooled (``Harvester.batches``)."""
    lengths = np.concatenate(layout.blocks)
    if lengths.min() == lengths.max():
        return min(HARVEST_BATCH, lengths.size) * int(lengths.max())
    return max(rows.size * int(lengths[rows].max()) for rows in ragged_batches(lengths, layout.features))


def data_bytes(layout: DataLayout, *, tff: bool = False,
               carved: bool = True) -> tuple[tuple[tuple[str, float], ...], tuple[str, float]]:
    """The data's peak parts as ``(what, bytes)``, largest first, and TFF's per-step state ``(what, bytes per unit)``."""
    features = layout.features
    padded = 4.0 * features * layout.padded_cells
    cells = harvest_cells(layout)
    longest = layout.longest
    baseline = 16.0 * min(features * layout.padded_cells, max(HARVEST_VALUES, features * longest))
    harvest = max(cells * (8.0 * features + 4.0), baseline) + (2 * padded if tff else 0.0)
    run = (2 if carved else 1) * padded + harvest
    load = float(layout.stored_bytes) + 2 * padded  # the stored values, their float32 copy and its padded one
    peak = {"the padded sequences": padded,
            f"the harvest of the longest ({longest}-step) sequence and the run's copies of the data"
            if run >= load else "loading the stored values": max(run, load)}
    states = (f"the states of every step of the longest ({longest}-step) sequence's batch in TFF",
              4.0 * cells if tff else 0.0)
    return tuple(sorted(peak.items(), key=lambda p: -p[1])), states


def estimate_memory(config: Any, dataset: SequenceDataset | DataLayout, split: Split | None = None, *,
                    tff: bool = False, streamed: bool = False) -> MemoryEstimate:
    """Memory a run of ``config`` holds at once on ``dataset`` (or a layout; ``split=None``: all training); ``tff``: on
    TFF; ``streamed``: the run holds one training client's statistics at a time (not every client's)."""
    reservoir = _setting(config, "reservoir", None)
    layout = dataset if isinstance(dataset, DataLayout) else layout_of(dataset)
    train = len(layout.blocks) if split is None else len(split.train)
    carved = split is None or not split.val
    holders = 0 if streamed else train * (FOLDS if carved and train < MIN_CLIENTS_FOR_CLIENT_FOLDS else 1)
    width = reservoir.readout_units / reservoir.total_units  # the units the readout sees (a deep ESN's last layer)
    quadratic = 16.0 + (16.0 + 8.0 * holders) * width ** 2 + (17.0 if reservoir.recurrent_connectivity < 1 else 0.0)
    linear = (32.0 + 16.0 * holders) * width  # the statistics' linear terms
    per_step = split is not None and any(c.per_step for c in dataset.clients.values())
    if per_step and not hasattr(config, "model") and _setting(config, "state_mode", "all") in ("all", "auto"):
        linear += 8.0 * layout.padded_cells * width
    if hasattr(config, "model") and getattr(config, "states", "cached") == "cached":
        washout = _setting(config, "washout", 0)
        blocks = layout.blocks if split is None else tuple(dataset.clients[c].steps for c in split.train)
        steps = sum(int((b - washout).clip(min=1).sum()) for b in blocks) \
            if _setting(config, "state_mode", "all") in ("all", "auto") else sum(b.size for b in blocks)
        linear += 4.0 * steps * width
    parts, states = data_bytes(layout, tff=tff, carved=carved)
    kept = STREAMED_CLIENT_BYTES * train if streamed else 8.0 * holders
    return MemoryEstimate(reservoir.total_units, quadratic, linear + states[1],
                          16.0 + kept + sum(b for _, b in parts), parts, states)


def machine_memory() -> int:
    """Bytes of memory this process can use: the physical RAM, or a smaller cgroup (v2 or v1) limit."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def check_memory(config: Any, dataset: SequenceDataset | DataLayout, split: Split | None = None, *,
                 limit: int | None = None, tff: bool = False, streamed: bool = False) -> MemoryEstimate | None:
    """:func:`estimate_memory` (``None`` without reservoir); above ``limit`` a :class:`MemoryLimitError` naming the fix."""
    if _setting(config, "reservoir", None) is None:
        return None
    limit = machine_memory() if limit is None else limit
    estimate = estimate_memory(config, dataset, split, tff=tff, streamed=streamed)
    if estimate.bytes <= limit:
        return estimate
    fits = estimate.largest_units(limit)
    if fits >= 1:
        raise MemoryLimitError(
            f"--units {estimate.units}: the run needs ≈ {_size(estimate.bytes)} (reservoir weights, ridge "
            f"statistics{', cached states' if hasattr(config, 'model') else ''}"
            f"{', states' if estimate.states[1] else ''}, the data), this machine has {_size(limit)}; the most units "
            f"that fit are {fits}.")
    what, largest = max([*estimate.data, (estimate.states[0], estimate.states[1] * estimate.units)],
                        key=lambda p: p[1])
    raise MemoryLimitError(
        f"{dataset.source}: the run needs ≈ {_size(estimate.bytes)}, {_size(largest)} of it for {what}; this machine "
        f"has {_size(limit)}; cut the sequences (--ragged crop, or the 'length' option) or split the long sequences "
        "into shorter ones.")
