"""The memory a run must hold at once, estimated from its config and the data's shape.

:func:`estimate_memory` adds up what certainly coexists, so the estimate is a lower bound
and refusing a run above the machine's memory (:func:`check_memory`) is always right:

* **reservoir weights** — Ŵ is drawn as an (N_R, N_R) float64 matrix and its spectral
  radius computed on a float64 copy (:mod:`tff_esn.esn.draws`): 16 bytes · N_R², plus 17 bytes ·
  N_R² for the sparsity mask's draw when ``recurrent_connectivity`` < 1;
* **ridge statistics** — Sᵀ S, (N_R + 1)² float64, and the copy its solve factorises
  (IncFed eqs. 6–7): 16 bytes · (N_R + 1)²;
* **cached states** — the thesis models keep every training sequence's float32 states
  (thesis §6.1): 4 bytes · N_R per state (every step after the washout for
  ``state_mode="all"``, one per sequence otherwise). The closed-form harvest streams its
  states in batches and adds none.

The machine's memory is the physical RAM, or a smaller cgroup limit.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from typing import Any

from tff_esn.data.sequences import SequenceDataset, Split



def _size(n: float) -> str:
    """``n`` bytes in the largest binary unit (GiB up to EiB) that keeps the number ≥ 1."""
    for power, unit in ((60, "EiB"), (50, "PiB"), (40, "TiB")):
        if n >= 2 ** power:
            return f"{n / 2 ** power:.1f} {unit}"
    return f"{n / 2 ** 30:.1f} GiB"


class MemoryLimitError(ValueError):
    """The run needs more memory than the machine has (one line: estimate and the largest units that fit)."""


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """Bytes of a run as ``quadratic · N_R² + linear · N_R + constant`` (N_R: ``units``)."""

    units: int
    quadratic: float
    linear: float
    constant: float = 0.0

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


def estimate_memory(config: Any, dataset: SequenceDataset, split: Split) -> MemoryEstimate:
    """The memory a run of ``config`` on ``split``'s clients of ``dataset`` must hold at once (module docstring)."""
    reservoir = _setting(config, "reservoir", None)
    quadratic = 16.0 + 16.0 + (17.0 if reservoir.recurrent_connectivity < 1 else 0.0)
    linear = 32.0  # the (N_R + 1)² statistics' linear terms: 16 · 2 N_R
    if hasattr(config, "model") and getattr(config, "states", "cached") == "cached":
        washout = _setting(config, "washout", 0)
        steps = sum(int((dataset.clients[c].steps - washout).clip(min=1).sum()) for c in split.train) \
            if _setting(config, "state_mode", "all") in ("all", "auto") else sum(len(dataset.clients[c]) for c in split.train)
        linear += 4.0 * steps
    return MemoryEstimate(reservoir.units, quadratic, linear, 16.0)


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


def check_memory(config: Any, dataset: SequenceDataset, split: Split, *,
                 limit: int | None = None) -> MemoryEstimate | None:
    """:func:`estimate_memory`; above ``limit`` (default :func:`machine_memory`) a :class:`MemoryLimitError`.
    A config without a reservoir (an algorithm registered outside the package) has no estimate: ``None``."""
    if _setting(config, "reservoir", None) is None:
        return None
    limit = machine_memory() if limit is None else limit
    estimate = estimate_memory(config, dataset, split)
    if estimate.bytes > limit:
        raise MemoryLimitError(
            f"--units {estimate.units}: the run needs at least {_size(estimate.bytes)} (reservoir weights, ridge "
            f"statistics{', cached states' if hasattr(config, 'model') else ''}), the machine has {_size(limit)}; "
            f"the most units that fit are {estimate.largest_units(limit)}.")
    return estimate
