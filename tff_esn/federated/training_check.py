"""What a gradient-trained run of the thesis readout did, said: the kept round (or epoch) at either end of its budget,
FedCurv's penalty without effect, a candidate whose training diverged, and a result below the closed form (the
ridge readout, IncFed eq. 3) on the same states. :func:`training_flags` warns and returns the flags of
``metrics.json["training_check"]``; :func:`closed_form_reference` is that ridge readout's record."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tff_esn.closed_form.selection import L2_GRID
from tff_esn.common.metrics import classification_metrics
from tff_esn.common.run_warnings import warn
from tff_esn.esn.ridge import RidgeStats, predict

FIRST = "best round first"
LAST = "best round last"
NO_PENALTY = "FedCurv reduced to FedAvg"
DIVERGED = "a candidate diverged"
BELOW_CLOSED_FORM = "below the closed form"
FLAGS = (FIRST, LAST, NO_PENALTY, DIVERGED, BELOW_CLOSED_FORM)
MARGIN = 0.10
"""How far below the closed form's accuracy a result may fall before it is flagged."""
ABOVE_MAJORITY = 0.05
"""How far above the majority class a result must be to pass the closed-form bar."""


def diverged_round(rows: Sequence[Mapping[str, Any]], *, filtered: bool) -> int | None:
    """The first round whose clients' training went non-finite: a non-finite training loss, or (no client filter)
    an update dropped for being non-finite (``accepted_clients < clients``); ``None``: none did."""
    for row in rows:
        loss = row.get("train_loss")
        dropped = not filtered and "accepted_clients" in row and row["accepted_clients"] < row.get("clients", 0)
        if (loss is not None and not math.isfinite(loss)) or dropped:
            return int(row["round"])
    return None


def round_flags(algorithm: str, kept: int | None, budget: int, unit: str) -> list[str]:
    """:data:`FIRST` for a kept first ``unit`` (round or epoch) of a ``budget`` > 1, :data:`LAST` for a kept last one
    (the validation score, a tie the loss, still improving when the budget ran out)."""
    if kept is None or budget < 2:
        return []
    if kept == 1:
        warn(f"{algorithm}: the kept {unit} is the first of {budget}: no later {unit} scored higher on the "
             f"validation clients, so the result is one {unit} of training; try a smaller learning rate (the "
             f"selection's record has each candidate's kept {unit})")
        return [FIRST]
    if kept == budget:
        warn(f"{algorithm}: the kept {unit} is the budget's last ({budget}): training had not converged; give more "
             f"{unit}s or a larger learning rate")
        return [LAST]
    return []


def _penalty_flags(algorithm: str, selection: Mapping[str, Any], penalty: float | None) -> list[str]:
    """:data:`NO_PENALTY` when FedCurv's penalty is 0 or every penalty candidate scored the same."""
    if penalty is None:
        return []
    chosen = selection.get("penalty") or {}
    scores = [chosen[k] for k in chosen if k.startswith("val_")]  # the validation score, then the loss
    tied = chosen.get("rule") == "validation" and len(set(scores[0])) == 1 and np.allclose(
        scores[1], scores[1][0], rtol=1e-6, atol=0.0, equal_nan=True)
    if penalty == 0 or tied:
        why = f"every penalty of {chosen['grid']} scored the same" if tied else "its penalty is 0"
        warn(f"{algorithm}: FedCurv reduced to FedAvg on this data: {why} on the validation clients (the "
             "curvature penalty has no effect before round 2, so a first-round result is FedAvg's)")
        return [NO_PENALTY]
    return []


def _divergence_flags(algorithm: str, selection: Mapping[str, Any], diverged: int | None, unit: str) -> list[str]:
    """:data:`DIVERGED` for each selection candidate (or the run) whose training went non-finite (its ``diverged``:
    the first such round or epoch)."""
    found = [(c, c.get("diverged")) for c in selection.get("candidates", ())
             if c.get("diverged") or c.get("kept_round") == 0]  # kept round 0: stopped at non-finite outputs
    if not selection.get("candidates") and diverged:
        found = [({}, diverged)]
    for candidate, round_num in found:
        setting = ", ".join(f"{k} {candidate[k]:g}" for k in ("client_lr", "penalty") if k in candidate)
        warn(f"{algorithm}: {'the candidate ' + setting if setting else 'the run'} diverged (non-finite training "
             f"loss, updates or outputs){f' in {unit} {round_num}' if round_num else ''}; a smaller learning rate "
             "trains it")
    return [DIVERGED] if found else []


def closed_form_reference(train: Iterable[tuple[np.ndarray, np.ndarray]],
                          groups: Mapping[str, tuple[np.ndarray, np.ndarray]], n_classes: int) -> dict[str, Any] | None:
    """The ridge readout with a bias (IncFed eq. 3) on the training parts' ``(states, labels)`` (summed statistics,
    one part in memory at a time), λ of ``L2_GRID`` chosen on the ``val`` group's macro-F1 (tie: the smaller λ;
    without one the smallest), and the majority class of the training labels: each of ``groups``' accuracy;
    ``None`` without training states."""
    outputs = 1 if n_classes == 2 else n_classes
    stats, counts = [], np.zeros(n_classes, np.int64)
    for states, labels in train:
        if len(labels):
            targets = labels[:, None].astype(np.float64) if outputs == 1 else np.eye(n_classes)[labels]
            stats.append(RidgeStats.from_states(states.reshape(-1, states.shape[-1]), targets, bias=True))
            counts += np.bincount(labels, minlength=n_classes)
    if not stats:
        return None
    path = RidgeStats.sum(stats).solve_path(L2_GRID)

    def metrics(weights: np.ndarray, group: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
        with np.errstate(all="ignore"):
            scores = np.nan_to_num(predict(weights, group[0].reshape(-1, weights.shape[1] - 1), bias=True))
        return classification_metrics(group[1], scores[:, 0] if outputs == 1 else scores, n_classes)

    best = 0
    if "val" in groups:
        f1 = [metrics(w, groups["val"])["f1_macro"] for w in path]
        best = int(np.argmax(f1))
    majority = int(np.argmax(counts))
    return {"l2": L2_GRID[best], "majority_class": majority,
            **{name: {"accuracy": metrics(path[best], group)["accuracy"],
                      "majority_accuracy": float(np.mean(group[1] == majority))} for name, group in groups.items()}}


def _closed_form_flags(algorithm: str, result: Mapping[str, Any], reference: Mapping[str, Any] | None) -> list[str]:
    """:data:`BELOW_CLOSED_FORM` when the test (else validation) accuracy is below the closed form's and below
    max(majority + :data:`ABOVE_MAJORITY`, closed form − :data:`MARGIN`)."""
    group = next((g for g in ("test", "val") if (reference or {}).get(g) and result.get(g)), None)
    if group is None:
        return []
    score, ridge = result[group].get("accuracy"), reference[group]
    bar = max(ridge["majority_accuracy"] + ABOVE_MAJORITY, ridge["accuracy"] - MARGIN)
    if score is None or not (score < bar and score < ridge["accuracy"]):
        return []
    warn(f"{algorithm}: {group} accuracy {score:.4f} is below the closed form's on the same states "
         f"({ridge['accuracy']:.4f}: the ridge readout at λ {reference['l2']:g}; majority class "
         f"{ridge['majority_accuracy']:.4f}) by more than the bar {bar:.4f}: the gradient training fell short of the "
         "readout the states allow; run centralized or incfed, or give more rounds (epochs) and another learning rate")
    return [BELOW_CLOSED_FORM]


def training_flags(algorithm: str, result: Mapping[str, Any], *, kept: int | None, budget: int,
                   selection: Mapping[str, Any], penalty: float | None = None, diverged: int | None = None,
                   reference: Mapping[str, Any] | None = None, unit: str = "round") -> list[str]:
    """The :data:`FLAGS` that hold for a run's ``result`` (each also a warning): the ``kept`` round of the ``budget``
    (``None``: none was chosen), FedCurv's ``penalty`` (``None``: not FedCurv) and the ``selection`` record,
    the run's own ``diverged`` round, and the closed form's ``reference`` on the same states."""
    return [*round_flags(algorithm, kept, budget, unit), *_penalty_flags(algorithm, selection, penalty),
            *_divergence_flags(algorithm, selection, diverged, unit), *_closed_form_flags(algorithm, result, reference)]
