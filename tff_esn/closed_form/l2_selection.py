"""Ridge λ chosen on the validation clients (``--l2 auto``): one rule for every closed-form run.

With validation clients, λ is the value of a grid (:data:`L2_GRID`, ascending) whose readout
is most accurate on them, a tie going to the larger λ (:func:`chosen_l2`) — the seeds' model
selection on the validation users (pFedRR §3, FedIP §3 and Table 1). Each algorithm supplies
its readout at every λ of the grid (the exact IncFed/centralized readouts share one
eigendecomposition, :meth:`tff_esn.esn.ridge.RidgeStats.solve_path`). Without validation clients,
or when the run's statistics are private (a validation sweep would release more than the one
readout the privacy accounting covers), λ is the stated :data:`DEFAULT_L2` and the record says
why. Light: no TensorFlow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from tff_esn.validation import is_finite

AUTO = "auto"
"""The ``l2`` value that asks for λ chosen on the validation clients."""

L2_GRID: tuple[float, ...] = tuple(10.0 ** k for k in range(-6, 4))
"""λ searched on the validation clients, ascending: 1e-6 … 1e3 in decades."""

DEFAULT_L2 = 1e-4
"""λ of ``--l2 auto`` when there is nothing to choose it on (no validation clients, or private
statistics): with the centralized readout on the four UCR/UEA sets of the test suite it stays
close to the best decade of :data:`L2_GRID` on each, where λ ≥ 1e-1 over-regularizes mean
states; holding out a fifth of the training sequences to choose on leaves too few of them."""


def chosen_l2(val_accuracy: Sequence[float]) -> int:
    """Index of the best validation accuracy over an ascending λ grid; a tie goes to the larger λ
    (the smoother readout: with few validation sequences neighbouring λ often tie)."""
    if not val_accuracy:
        raise ValueError("chosen_l2: no validation accuracies (empty λ grid).")
    best = max(val_accuracy)
    return max(i for i, v in enumerate(val_accuracy) if v == best)


def check_grid(grid: Any) -> tuple[float, ...]:
    """``grid`` as an ascending tuple of distinct finite numbers > 0; ``ValueError`` otherwise."""
    values = tuple(grid) if isinstance(grid, (tuple, list)) else ()
    ok = bool(values) and all(is_finite(v) and v > 0 for v in values)
    if not ok or list(values) != sorted(set(values)):
        raise ValueError(f"l2_grid (--l2-grid): expected ascending distinct finite numbers > 0, got {grid!r}.")
    return tuple(float(v) for v in values)


@dataclasses.dataclass(frozen=True)
class L2Choice:
    """The λ a run used and how it came about (``metrics.json``'s ``l2_selection``).

    Attributes:
        l2: the λ used.
        rule: ``"given"`` (a number was set), ``"validation"`` (chosen on the validation
            clients) or ``"default"`` (``auto`` with nothing to choose on: :data:`DEFAULT_L2`).
        grid: the λ searched (``validation`` only).
        validation_accuracy: the validation accuracy at each λ of ``grid``.
        reason: why ``default`` was used.
    """

    l2: float
    rule: str
    grid: tuple[float, ...] = ()
    validation_accuracy: tuple[float, ...] = ()
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"l2": self.l2, "rule": self.rule}
        if self.rule == "validation":
            out["grid"] = list(self.grid)
            out["validation_accuracy"] = list(self.validation_accuracy)
        if self.reason:
            out["reason"] = self.reason
        return out


def on_validation(grid: Sequence[float], accuracies: Sequence[float]) -> L2Choice:
    """The :class:`L2Choice` of the best validation accuracy over ``grid`` (:func:`chosen_l2`)."""
    if len(grid) != len(accuracies):
        raise ValueError(f"on_validation: {len(grid)} λ but {len(accuracies)} accuracies.")
    best = chosen_l2(list(accuracies))
    return L2Choice(float(grid[best]), "validation", tuple(float(v) for v in grid),
                    tuple(float(a) for a in accuracies))


def by_default(reason: str) -> L2Choice:
    """:data:`DEFAULT_L2`, with the ``reason`` nothing was chosen (recorded in ``metrics.json``)."""
    return L2Choice(DEFAULT_L2, "default", reason=reason)
