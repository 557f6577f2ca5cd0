"""Model selection of the closed-form family: λ, the state mode, the inputs beside the states, a small reservoir
grid (its size among it) and alignment's α,
chosen on the validation clients (else folds carved from training) by the exact fold readout
``(A − A_k)(B − B_k + λI)⁻¹``. Imports neither numpy nor TensorFlow."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tff_esn.common.tasks import REAL_OBJECTIVE
from tff_esn.common.validation import is_finite

if TYPE_CHECKING:
    import numpy as np

    from tff_esn.esn.hyperparameters import ReservoirConfig

AUTO = "auto"
"""The value of ``l2`` / ``state_mode`` that asks for it to be chosen on the validation data."""

L2_GRID: tuple[float, ...] = tuple(10.0 ** k for k in range(-6, 4))
"""λ searched, ascending: 1e-6 … 1e3 in decades."""

DEFAULT_L2 = 1e-4
"""λ of ``--l2 auto`` when there is nothing to choose it on (a single training sequence, or private statistics)."""

DEFAULT_STATE_MODE = "mean"
"""The state mode of ``--state-mode auto`` when nothing is chosen (``last`` for per-step labels)."""

STATE_MODE_CANDIDATES = ("mean", "last", "all")
"""State modes ``auto`` tries, in order (``mean`` is skipped for per-step labels)."""

RESERVOIR_GRID: dict[str, tuple[float, ...]] = {
    "leaky": (1.0, 0.3),
    "spectral_radius": (0.9, 0.5),
    "input_scaling": (1.0, 0.3),
    "units": (100, 300, 500),
}
"""Per searchable reservoir setting, the values tried beside the configured one, in search order."""

SEARCHABLE = tuple(RESERVOIR_GRID)

UPWARD = ("units",)
"""Settings tried only above the configured value, ascending, up to the first that does not improve the score."""


def chooses(config: Any) -> bool:
    """Whether a closed-form ``config`` chooses anything on validation data (λ, the state mode, the reservoir, the
    inputs beside the states or the washout ``auto``, or a reservoir search)."""
    return (config.l2 == AUTO or config.state_mode == AUTO or bool(config.reservoir_search)
            or config.raw_inputs == AUTO or config.washout == AUTO)


def grid_values(name: str, reservoir: ReservoirConfig) -> tuple[float, ...]:
    """The values of :data:`RESERVOIR_GRID` ``[name]`` tried beside ``reservoir``'s own: every other one, or for an
    :data:`UPWARD` setting the larger ones ascending (none for a reservoir whose per-unit leaking rates or per-layer
    sizes fix its size)."""
    own = getattr(reservoir, name)
    if name not in UPWARD:
        return tuple(v for v in RESERVOIR_GRID[name] if v != own)
    if reservoir.leak_values or reservoir.layer_units:
        return ()
    return tuple(sorted(v for v in RESERVOIR_GRID[name] if v > own))

WASHOUT_GRID = (0, 10, 25, 50, 100, 200)
"""Washouts ``washout="auto"`` tries (those below half the shortest training sequence)."""
DEFAULT_WASHOUT = 50
"""The washout of ``--washout auto`` when nothing is chosen (capped below half the shortest sequence)."""


def washout_candidates(shortest: int) -> tuple[int, ...]:
    """The :data:`WASHOUT_GRID` values that leave a sequence of ``shortest`` steps at least half its states."""
    return tuple(w for w in WASHOUT_GRID if 2 * w < shortest) or (0,)

ALPHA_GRID = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)
"""Alignment weights ``alpha="auto"`` tries (0: each client's own reservoir, 1: the shared one, IncFed)."""
OBJECTIVES = ("accuracy", "balanced_accuracy", "f1_macro")
NEG_MSE = REAL_OBJECTIVE
"""The score of a real-valued task (forecast, regress): minus the mean squared error, whatever ``objective`` says."""


def objective_score(objective: str, labels: np.ndarray, outputs: np.ndarray, n_classes: int) -> float:
    """The validation score ``objective`` of ``outputs`` against ``labels``: a class score, or :data:`NEG_MSE`."""
    import numpy as np

    from tff_esn.common.metrics import accuracy, balanced_accuracy, f1_scores, predictions  # numpy: once a run scores

    if objective == NEG_MSE:
        errors = np.asarray(outputs, np.float64).reshape(-1) - np.asarray(labels, np.float64).reshape(-1)
        return -float(np.mean(errors ** 2))
    predicted = predictions(outputs)
    if objective == "accuracy":
        return accuracy(labels, predicted)
    if objective == "balanced_accuracy":
        return balanced_accuracy(labels, predicted, n_classes)
    return f1_scores(labels, predicted, n_classes)[0]


def chosen_l2(scores: Sequence[float]) -> int:
    """Index of the best validation score over an ascending λ grid; a tie goes to the larger λ."""
    best = max(scores)
    return max(i for i, v in enumerate(scores) if v == best)


SWITCH_TEXT = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False, AUTO: AUTO}


def parse_switch(text: str) -> bool | str:
    """A setting that is on, off or :data:`AUTO` from its command-line text (``true``/``false``/``auto``)."""
    value = SWITCH_TEXT.get(text.strip().lower())
    if value is None:
        raise ValueError(f"expected true, false or {AUTO}, got {text!r}")
    return value


def check_grid(grid: Any) -> tuple[float, ...]:
    """``grid`` as an ascending tuple of distinct finite numbers > 0; ``ValueError`` otherwise."""
    values = tuple(grid) if isinstance(grid, (tuple, list)) else ()
    ok = bool(values) and all(is_finite(v) and v > 0 for v in values)
    if not ok or list(values) != sorted(set(values)):
        raise ValueError(f"l2_grid (--l2-grid): expected ascending distinct finite numbers > 0, got {grid!r}.")
    return tuple(float(v) for v in values)


def check_search(names: Any) -> tuple[str, ...]:
    """``names`` as a tuple of distinct :data:`SEARCHABLE` settings; ``ValueError`` otherwise."""
    values = tuple(names) if isinstance(names, (tuple, list)) else None
    if values is None or len(set(values)) != len(values) or set(values) - set(SEARCHABLE):
        raise ValueError(f"reservoir_search (--reservoir-search): expected distinct names among {SEARCHABLE}, "
                         f"got {names!r}.")
    return tuple(n for n in SEARCHABLE if n in values)


@dataclasses.dataclass(frozen=True)
class L2Choice:
    """The λ a run used and how (``metrics.json``'s ``l2_selection``)."""

    l2: float
    rule: str
    grid: tuple[float, ...] = ()
    scores: tuple[float, ...] = ()
    objective: str = ""
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"l2": self.l2, "rule": self.rule}
        if self.grid:
            out.update(grid=list(self.grid), objective=self.objective, scores=list(self.scores))
        if self.reason:
            out["reason"] = self.reason
        return out


def on_validation(grid: Sequence[float], scores: Sequence[float], *, objective: str,
                  rule: str = "validation") -> L2Choice:
    """The :class:`L2Choice` of the best validation score over ``grid`` (:func:`chosen_l2`)."""
    best = chosen_l2(list(scores))
    return L2Choice(float(grid[best]), rule, tuple(float(v) for v in grid), tuple(float(a) for a in scores),
                    objective)


def by_default(reason: str) -> L2Choice:
    """:data:`DEFAULT_L2`, with the ``reason`` nothing was chosen (recorded in ``metrics.json``)."""
    return L2Choice(DEFAULT_L2, "default", reason=reason)


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One setting of the states tried: its state mode, inputs beside the states or not, reservoir values and its
    best score."""

    state_mode: str
    reservoir: dict[str, float]
    l2: float
    score: float
    inputs: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"state_mode": self.state_mode, "raw_inputs": self.inputs, **self.reservoir, "best_l2": self.l2,
                "score": self.score}


