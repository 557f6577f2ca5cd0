"""The one line ``tff-esn run`` prints for a run's ``metrics.json`` record."""

from __future__ import annotations

from pathlib import Path


def _seconds(record: dict) -> str:
    """The run's wall time, or that it is withheld (a DP run's timing under secret sampling)."""
    return f"{record['seconds']:.1f} s" if "seconds" in record else "time withheld (secret sampling)"


def summary_line(record: dict, path: Path) -> str:
    """``ALGO on DATA: test accuracy … | up … down … floats/client × rounds | … s → path`` (real-valued: NRMSE, RMSE, R²)."""
    test = record.get("test") or record.get("val") or record.get("train") or {}
    comm = record["communication"]

    def fmt(value) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    def count(value: float) -> str:
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"

    which = "test" if record.get("test") else "val" if record.get("val") else "train"
    baselines = record.get("baselines") or {}
    if "nrmse" in test:
        versus = "".join(f", {key.replace('_', ' ')} {fmt(((baselines.get(key) or {}).get(which) or {}).get('nrmse'))}"
                         for key in ("persistence", "training_mean", "lagged_ridge")
                         if (baselines.get(key) or {}).get(which))
        quality = f"{which} nrmse {fmt(test.get('nrmse'))} rmse {fmt(test.get('rmse'))} r2 {fmt(test.get('r2'))} " \
                  f"({versus[2:]})"
    else:
        quality = (f"{which} accuracy {fmt(test.get('accuracy'))} balanced_accuracy "
                   f"{fmt(test.get('balanced_accuracy'))} f1_macro {fmt(test.get('f1_macro'))} "
                   f"(random accuracy {fmt(test.get('random_baseline_accuracy'))}{_class_baselines(baselines, which)})")
    return (
        f"{record['algorithm']} on {record['data']}: {quality} | "
        f"up {count(comm['up_floats_per_client'])} down {count(comm['down_floats_per_client'])} floats/client × "
        f"{comm['rounds']} round(s) | {_seconds(record)}{_privacy_note(record.get('privacy') or {})}"
        f"{_training_note(record.get('training_check') or ())} → {path}"
    )


def _training_note(flags) -> str:
    """`` | ⚠ FLAG; FLAG`` of a gradient-trained run's training check (empty when nothing was flagged)."""
    return f" | ⚠ {'; '.join(flags)}" if flags else ""


def _class_baselines(baselines: dict, which: str) -> str:
    """``; on OBJECTIVE: model X, majority Y, logistic regression (class-weighted) Z``: the result check's baselines
    on the objective it reads (``baselines["reference"]``), beside the model's own score on it."""
    reference = baselines.get("reference") or {}
    objective = reference.get("objective", "accuracy")
    logistic = reference.get("logistic_regression", "logistic_regression")
    weight = (baselines.get(logistic) or {}).get("class_weight")
    label = "logistic regression" + {"balanced": " (class-weighted)", "none": " (plain)"}.get(weight, "")
    found = [f"{name} {((baselines.get(key) or {}).get(which) or {}).get(objective):.4f}"
             for key, name in (("majority", "majority"), (logistic, label))
             if ((baselines.get(key) or {}).get(which) or {}).get(objective) is not None]
    return f"; {which} {objective}: {', '.join(found)}" if found else ""


def _privacy_note(privacy: dict) -> str:
    """`` | ε … NOT PRIVATE (reasons)`` of a DP run's summary line (empty without DP)."""
    if privacy.get("mechanism", "none") == "none":
        return ""
    eps = "∞" if privacy.get("epsilon") is None else f"{privacy['epsilon']:.3g}"
    note = f" | DP ε {eps} δ {privacy.get('delta')}"
    if not privacy.get("private", True):
        note += f" NOT PRIVATE ({'; '.join(privacy.get('not_private_reasons', []))})"
    return note
