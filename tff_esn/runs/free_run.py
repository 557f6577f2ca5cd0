"""Free-run (closed-loop) forecasting scored: the model's one-step forecast fed back as its next input
(:meth:`~tff_esn.esn.model.Model.generate`) over windows of each validation and test series.

Each series of T input steps gives windows of ``steps`` forecasts: warm-up inputs ``x[:W]``, forecasts of
``y[W − 1 … W + steps − 2]`` for ``W = T − steps + 1`` and every ``steps`` earlier while the warm-up stays
longer than the washout (at most :data:`MAX_WINDOWS`). NRMSE is the RMSE over the group's target standard
deviation, per step (over windows) and over the window; the valid prediction time (VPT) of a window is the
number of steps before the normalised error ``|ŷ − y| / σ`` first exceeds :data:`VPT_THRESHOLD`, in Lyapunov
times ``VPT·Δt·λ_max`` when the series' largest Lyapunov exponent is known (Pathak et al. 2018).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tff_esn.common.run_warnings import warn
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import SequenceDataset, Split

MAX_WINDOWS = 10
VPT_THRESHOLD = 0.5
GROUPS = ("val", "test")


def check_free_run(steps: int, dataset: SequenceDataset, split: Split, washout: Any) -> None:
    """One-line :class:`DataError` before any harvest: a free run needs a one-step forecast of an input channel and
    held-out series longer than ``steps`` plus the washout."""
    task = dataset.task
    if task.kind != "forecast" or task.horizon != 1 or task.target not in dataset.feature_names:
        raise DataError(f"{dataset.source}: --free-run {steps}: feeds the forecast back as the next input, so it needs "
                        "--task forecast --horizon 1 of an input channel.")
    if not isinstance(steps, (int, np.integer)) or steps < 1:
        raise DataError(f"{dataset.source}: --free-run: expected a number of steps ≥ 1, got {steps!r}.")
    warm = washout if isinstance(washout, (int, np.integer)) else 0
    for group in GROUPS:
        for cid in getattr(split, group):
            shortest = dataset.clients[cid].shortest
            if shortest - steps + 1 <= warm:
                raise DataError(f"{dataset.source}: --free-run {steps}: {group} client {cid!r} has a series of "
                                f"{shortest} steps, too short for a warm-up beyond the washout ({warm}) and {steps} "
                                f"free-run steps; use a window below {shortest - warm}.")


def window_starts(length: int, steps: int, washout: int) -> list[int]:
    """Warm-up lengths ``W`` of the windows of a series of ``length`` input steps (module docstring)."""
    return [w for w in range(length - steps + 1, washout, -steps)][:MAX_WINDOWS]


def free_run_scores(model: Any, dataset: SequenceDataset, split: Split, steps: int, *,
                    lyapunov: tuple[float, float] | None = None) -> dict[str, Any]:
    """Per held-out group: NRMSE over the window and per step, RMSE, VPT (steps; Lyapunov times with ``lyapunov`` =
    (λ_max per time unit, time units per step)) and the windows scored (module docstring)."""
    out: dict[str, Any] = {"steps": int(steps), "vpt_threshold": VPT_THRESHOLD,
                           "lyapunov_exponent": None if lyapunov is None else lyapunov[0],
                           "time_step": None if lyapunov is None else lyapunov[1]}
    fed = [dataset.feature_names.index(c) for c in model.fed_back]
    for group in GROUPS:
        ids = getattr(split, group)
        if not ids:
            out[group] = None
            continue
        errors, sigma = [], float(np.concatenate([dataset.clients[c].y.ravel() for c in ids]).std())
        for cid in ids:
            client = dataset.clients[cid]
            for x, y, length in zip(client.x, client.y, client.steps):
                for start in window_starts(int(length), steps, model.spec.washout):
                    exog = np.delete(x[start:start + steps - 1], fed, axis=1)
                    errors.append(model.generate(x[:start], steps, exog=exog) - y[start - 1:start - 1 + steps])
        if not errors:
            warn(f"{dataset.source}: --free-run {steps}: no {group} window has a warm-up beyond the washout "
                 f"({model.spec.washout}); its free runs are not scored.")
            out[group] = None
            continue
        errors = np.asarray(errors)
        normalised = np.abs(errors) / sigma
        exceeded = normalised > VPT_THRESHOLD
        vpt = np.where(exceeded.any(axis=1), exceeded.argmax(axis=1), steps).astype(float)
        section = {"windows": len(errors), "nrmse": float(np.sqrt(np.mean(errors ** 2)) / sigma),
                   "rmse": float(np.sqrt(np.mean(errors ** 2))),
                   "nrmse_per_step": (np.sqrt(np.mean(errors ** 2, axis=0)) / sigma).tolist(),
                   "vpt_steps": float(vpt.mean())}
        if lyapunov is not None:
            section["vpt_lyapunov_times"] = float(vpt.mean() * lyapunov[0] * lyapunov[1])
        out[group] = section
    return out
