"""The check every run's result gets: a model that predicts one class, or does not beat the majority class
(for real targets: the training mean; for forecasts also persistence; without training baselines, as under DP,
the scored group's own mean).

:func:`check_result` warns and returns the flags of ``metrics.json["result_check"]``, for every algorithm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tff_esn.common.run_warnings import warn
from tff_esn.common.tasks import CLASSIFY, Task

ONE_CLASS = "one class"
NOT_ABOVE_MAJORITY = "not above majority"
NOT_ABOVE_MEAN = "not above training mean"
NOT_ABOVE_PERSISTENCE = "not above persistence"
NOT_ABOVE_GROUP_MEAN = "not above the group's mean"
FLAGS = (ONE_CLASS, NOT_ABOVE_MAJORITY, NOT_ABOVE_MEAN, NOT_ABOVE_PERSISTENCE, NOT_ABOVE_GROUP_MEAN)
GROUPS = ("val", "test")


def check_result(algorithm: str, result: Mapping[str, Any], baselines: Mapping[str, Any],
                 task: Task = CLASSIFY, *, objective: str = "accuracy") -> dict[str, list[str]]:
    """Per group (``val``, ``test``), with a section, the :data:`FLAGS` that hold, each also a warning; a classifier
    is set against the majority class on ``objective``, the score its selection maximises."""
    if task.real:
        return {group: _real_flags(f"{algorithm}: {group}", result[group], baselines, group)
                for group in GROUPS if result.get(group)}
    return {group: _class_flags(f"{algorithm}: {group}", result[group], baselines, group, objective)
            for group in GROUPS if result.get(group)}


def _class_flags(where: str, section: Mapping[str, Any], baselines: Mapping[str, Any], group: str,
                 objective: str) -> list[str]:
    """The flags of a classification ``section`` against the majority class's ``objective`` on its group."""
    found = []
    predicted = [k for k, n in enumerate(section.get("prediction_counts") or ()) if n]
    present = sum(1 for n in section.get("label_counts") or () if n)
    if len(predicted) == 1 and present > 1:
        found.append(ONE_CLASS)
        warn(f"{where}: every prediction is class {predicted[0]} ({present} classes present): the model has "
             "collapsed; check the learning rate, λ, the state mode and the algorithm's own settings")
    reference = ((baselines.get("majority") or {}).get(group) or {}).get(objective)
    score = section.get(objective)
    if reference is not None and score is not None and score <= reference:
        found.append(NOT_ABOVE_MAJORITY)
        warn(f"{where}: {objective} {score:.4f} (accuracy {section['accuracy']:.4f}) does not beat the majority "
             f"class's ({reference:.4f}): the model has learnt nothing a constant prediction does not")
    return found


_REAL_REFERENCES = (
    ("training_mean", NOT_ABOVE_MEAN, "the training mean's", "a number that reads like a forecast but is not one; "
     "check λ, the state mode, the washout and the reservoir's scaling"),
    ("persistence", NOT_ABOVE_PERSISTENCE, "persistence's", "repeating the target's value H steps back forecasts as "
     "well; check the horizon, λ, the state mode and the washout, beside the lagged-ridge baseline"),
)
"""Per real-valued baseline (forecasts only have ``persistence``): its flag, its name and the advice."""


def _real_flags(where: str, section: Mapping[str, Any], baselines: Mapping[str, Any], group: str) -> list[str]:
    """The flags of a real-valued ``section``: its NRMSE against each of :data:`_REAL_REFERENCES` on its group;
    without the training mean's baseline (DP runs fit none on the private clients) R² ≤ 0, no better than the
    group's own mean, a reference computed from the scored group alone."""
    found = []
    if "training_mean" not in baselines and section.get("r2") is not None and section["r2"] <= 0:
        found.append(NOT_ABOVE_GROUP_MEAN)
        warn(f"{where}: R² {section['r2']:.4g} ≤ 0: the forecast is no better than the constant mean of the scored "
             "targets themselves; check λ, the state mode, the washout, and under DP the noise (a larger ε)")
    for key, flag, name, advice in _REAL_REFERENCES:
        reference = ((baselines.get(key) or {}).get(group) or {}).get("nrmse")
        if reference is not None and section["nrmse"] >= reference:
            found.append(flag)
            warn(f"{where}: NRMSE {section['nrmse']:.4g} is no better than {name} {reference:.4g}: {advice}")
    return found
