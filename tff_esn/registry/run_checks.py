"""What is checked before an algorithm runs, by the library and by ``tff-esn run`` alike.

:func:`check_run` refuses a misleading split, a washout as long as the shortest sequence, per-step
targets with mean states and a run beyond the machine's memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tff_esn.data.checks import check_split
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.runs.memory import MemoryEstimate, check_memory

if TYPE_CHECKING:
    from tff_esn.registry.algorithms import ResolvedRun

def check_washout(config: Any, dataset: SequenceDataset) -> None:
    """A :class:`DataError` when ``config``'s washout leaves the shortest sequence no state (``all``/``mean``)."""
    model = getattr(config, "model", config)
    washout, mode = getattr(model, "washout", 0), getattr(model, "state_mode", "all")
    if mode != "last" and washout != "auto" and washout >= dataset.shortest:
        raise DataError(f"{dataset.source}: --washout {washout} drops every step of the shortest sequence "
                        f"({dataset.shortest} steps); use a washout below {dataset.shortest} (or --state-mode last).")


def check_state_mode(config: Any, dataset: SequenceDataset) -> None:
    """A :class:`DataError` when per-step targets meet ``state_mode="mean"`` (one state per sequence)."""
    mode = getattr(getattr(config, "model", config), "state_mode", "all")
    if mode == "mean" and any(c.per_step for c in dataset.clients.values()):
        raise DataError(f"{dataset.source}: y: one target per step, but --state-mode mean keeps one state per "
                        "sequence; use --state-mode all (or last).")


def check_run(run: ResolvedRun, dataset: SequenceDataset, split: Split, *,
              test_required: bool = True) -> MemoryEstimate | None:
    """Refuses a resolved run that would mislead or cannot fit; returns its memory estimate (``None``: no reservoir)."""
    check_washout(run.config, dataset)
    check_state_mode(run.config, dataset)
    check_split(dataset, split, federated=not run.algorithm.pooled, test_required=test_required)
    return check_memory(run.config, dataset, split, tff=run.tff, streamed=run.algorithm.streams(run.config))
