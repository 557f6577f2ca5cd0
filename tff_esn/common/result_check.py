"""The check every run's result gets: a model that predicts one class, or does not beat the majority class
(for real targets: the training mean).

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
FLAGS = (ONE_CLASS, NOT_ABOVE_MAJORITY, NOT_ABOVE_MEAN)
GROUPS = ("val", "test")


def check_result(algorithm: str, result: Mapping[str, Any], baselines: Mapping[str, Any],
                 task: Task = CLASSIFY) -> dict[str, list[str]]:
    """Per group (``val``, ``test``), with a section, the :data:`FLAGS` that hold, each also a warning."""
    compare = _real_flags if task.real else _class_flags
    return {group: compare(f"{algorithm}: {group}", result[group], baselines, group)
            for group in GROUPS if result.get(group)}


def _class_flags(where: str, section: Mapping[str, Any], baselines: Mapping[str, Any], group: str) -> list[str]:
    """The flags of a classification ``section`` against the majority class on its group."""
    found = []
    predicted = [k for k, n in enumerate(section.get("prediction_counts") or ()) if n]
    present = sum(1 for n in section.get("label_counts") or () if n)
    if len(predicted) == 1 and present > 1:
        found.append(ONE_CLASS)
        warn(f"{where}: every prediction is class {predicted[0]} ({present} classes present): the model has "
             "collapsed; check the learning rate, λ, the state mode and the algorithm's own settings")
    reference = ((baselines.get("majority") or {}).get(group) or {}).get("accuracy")
    if reference is not None and section["accuracy"] <= reference:
        found.append(NOT_ABOVE_MAJORITY)
        warn(f"{where}: accuracy {section['accuracy']:.4f} (balanced "
             f"{section.get('balanced_accuracy', float('nan')):.4f}) does not beat the majority class "
             f"({reference:.4f}): the model has learnt nothing a constant prediction does not")
    return found


def _real_flags(where: str, section: Mapping[str, Any], baselines: Mapping[str, Any], group: str) -> list[str]:
    """The flags of a real-valued ``section``: its NRMSE against the training mean's on its group."""
    reference = ((baselines.get("training_mean") or {}).get(group) or {}).get("nrmse")
    if reference is None or section["nrmse"] < reference:
        return []
    warn(f"{where}: NRMSE {section['nrmse']:.4g} is no better than the training mean's {reference:.4g}: a number "
         "that reads like a forecast but is not one; check λ, the state mode, the washout and the reservoir's scaling")
    return [NOT_ABOVE_MEAN]
