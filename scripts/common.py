"""Helpers shared by the reproduction scripts: repetitions, shared harvests, round logs, plots."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scripts.framework import Context, MeanStd
from tff_esn.closed_form.selection import chosen_l2


def rep_seeds(ctx: Context, repetitions: int) -> list[int]:
    """Repetition r uses seed ``ctx.seed + r`` (reservoir, random selections, baselines)."""
    return [ctx.seed + r for r in range(repetitions)]


def fraction_label(fraction: float) -> str:
    return f"{round(fraction * 100)}%"


def shared_closed_form_runs(dataset, splits: Mapping[Any, Any], config) -> dict[Any, Any]:
    """A :class:`tff_esn.closed_form.run.Run` per split, all sharing one harvester.

    The splits differ only in their training clients (IncFed/pFedRR/FedIP 25–100 %), so
    each client is harvested once per reservoir and every fraction, τ and selection
    reuses those statistics and states (as ``tff-esn run`` would compute them one by one).
    """
    from tff_esn.closed_form.run import Run

    runs: dict[Any, Any] = {}
    shared = None
    for key, split in splits.items():
        run = Run(dataset, split, config, "shared")
        if shared is None:
            shared = run.harvester
        else:
            run.harvester = shared
        runs[key] = run
    return runs


def accuracy_of(run, readout: np.ndarray, ids: Sequence[str]) -> float:
    """Accuracy of ``readout`` on the clients ``ids`` through ``run``'s cached states."""
    from tff_esn.common.metrics import accuracy, predictions

    scores, labels = run.scorer(readout)(ids)
    return accuracy(labels, predictions(scores))


L2_GRID = tuple(10.0 ** k for k in range(-4, 6))
"""λ searched on the validation users, ascending: FedIP Table 1's range [1e-4, 1] in decades, extended
to 1e5. On the ``all``-mode statistics of 200-step sequences ``B``'s scale is ~10⁴, so the seeds' range
alone changes nothing."""


def select_l2(run, stats, grid: Sequence[float] = L2_GRID) -> tuple[float, np.ndarray]:
    """The λ of ``grid`` whose ridge readout from ``stats`` (:class:`tff_esn.esn.ridge.RidgeStats`, e.g. the
    FedRR sum) is most accurate on ``run.split.val`` (:func:`chosen_l2`), and that readout — the paper's
    model selection on the validation users (pFedRR §3, FedIP §3 and Table 1)."""
    path = stats.solve_path(grid)
    best = chosen_l2([accuracy_of(run, w, run.split.val) for w in path])
    return float(grid[best]), path[best]


FEATURE_RIDGE = "ridge on LR features"
"""Table label of ridge regression on logistic regression's inputs (:func:`feature_ridge_accuracy`)."""


def feature_ridge_accuracy(dataset, split, l2: float, *, seed: int = 0,
                           grid: Sequence[float] = L2_GRID) -> dict[str, float]:
    """Test accuracy (%) of :func:`tff_esn.runs.baselines.ridge_on_features` — the seeds' ridge readout on
    logistic regression's own inputs, no reservoir — at the λ of ``grid`` chosen on ``split.val``
    (:func:`chosen_l2`; key :data:`FEATURE_RIDGE`) and at the fixed ``l2`` (``FEATURE_RIDGE + " λ fixed"``)."""
    from tff_esn.runs.baselines import ridge_on_features

    metrics = ridge_on_features(dataset, split, (*grid, l2), seed=seed)
    best = chosen_l2([m["accuracy"] for m in metrics["val"][:len(grid)]])
    return {FEATURE_RIDGE: 100 * metrics["test"][best]["accuracy"],
            f"{FEATURE_RIDGE} λ fixed": 100 * metrics["test"][-1]["accuracy"]}


def summary_transfer(run, *, l2: float = 1e-3) -> dict[str, float] | None:
    """How much of the per-sequence input mean and std a *linear* map of the reservoir's
    sequence states carries from the training clients to the test clients.

    Per input channel, a ridge map (``l2``, states standardised on the training clients) from
    ``run``'s mean states to the sequence's mean and std of that channel is fitted on
    ``run.split.train`` and scored by R² on ``run.split.test``; the result gives the lowest and
    highest R² over the channels (``mean_min``, ``mean_max``, ``std_min``, ``std_max``) and the
    median channel's R² for the std (``std_median``). The
    mean states are what a linear readout of the ``all``/``mean`` state modes scores
    (IncFed eq. 2 averaged over the steps), so a low held-out R² for the std says that the
    readout cannot read the motion power that logistic regression's std feature gives it.
    ``None`` for per-step labels or unequal lengths (no per-sequence summary to compare).
    """
    clients = run.dataset.select([*run.split.train, *run.split.test])
    if any(c.per_step or c.ragged for c in clients.values()):
        return None

    def rows(ids):
        states = np.concatenate([run.harvester.features(run.weights, cid).states for cid in ids])
        x = np.concatenate([clients[cid].x for cid in ids]).astype(np.float64)
        return states, np.concatenate([x.mean(axis=1), x.std(axis=1)], axis=1)

    s_train, t_train = rows(run.split.train)
    s_test, t_test = rows(run.split.test)
    mu, sd = s_train.mean(axis=0), s_train.std(axis=0) + 1e-12
    a = np.hstack([(s_train - mu) / sd, np.ones((len(s_train), 1))])
    w = np.linalg.solve(a.T @ a + l2 * len(a) * np.eye(a.shape[1]), a.T @ t_train)
    pred = np.hstack([(s_test - mu) / sd, np.ones((len(s_test), 1))]) @ w
    r2 = 1.0 - ((pred - t_test) ** 2).mean(axis=0) / np.maximum(t_test.var(axis=0), 1e-12)
    n = t_test.shape[1] // 2
    return {"mean_min": float(r2[:n].min()), "mean_max": float(r2[:n].max()),
            "std_min": float(r2[n:].min()), "std_max": float(r2[n:].max()),
            "std_median": float(np.median(r2[n:]))}


POWER_R2 = 0.5
"""Held-out R² of the sequence's input std from the mean states: when the median channel stays
below it, the readout cannot read the motion power of half the channels (see :func:`summary_transfer`)."""


def power_reason(weak: Mapping[str, Any], transfer: Mapping[str, Any]) -> str | None:
    """A data reason (a sentence to append) when, at every fraction label in ``weak``, the
    :func:`summary_transfer` in ``transfer`` shows the mean states carrying the input means to
    the test users (every channel's R² above the median channel's R² for the std) while the median
    channel's std stays below :data:`POWER_R2`; else ``None``."""
    found = [transfer.get(f) for f in weak]
    if not found or any(t is None or t["std_median"] >= min(POWER_R2, t["mean_min"]) for t in found):
        return None
    return (" A linear map of the reservoir's mean states (what the readout scores) carries the input channels' "
            "per-sequence means to the test users (R² " + listing({f: f"{t['mean_min']:.2f}–{t['mean_max']:.2f}"
                                                                   for f, t in zip(weak, found)})
            + ") but not its std, the motion power that logistic regression reads from its std feature (R² median "
            "channel, best channel: " + listing({f: f"{t['std_median']:.2f}, {t['std_max']:.2f}"
                                                for f, t in zip(weak, found)})
            + "). With identical synthetic users the ESN matches logistic regression (93–98 % vs 91–98 %); the gap "
            "comes from the generator's user differences together (posture, placement, gait axes, rotation phase, "
            "pouch moves) with 2–5 training users — removing any one of them does not close it.")


def loss_reason(weak: Mapping[str, Any], model: Mapping[str, float], ridge: Mapping[str, float],
                lr: Mapping[str, float], *, margin: float) -> str | None:
    """A reason (a sentence to append) when, at every fraction label in ``weak``, the reservoir's ridge
    readout (``model[f]``, %) is at most ``margin`` points below ridge regression on logistic regression's
    own inputs (``ridge[f]``, :data:`FEATURE_RIDGE`, λ chosen the same way): the reservoir learns what the
    seeds' least-squares readout can learn from those features, and the rest of the gap to logistic
    regression (``lr[f]``) is the loss — ridge regression is the seeds' readout (IncFed eq. 3, pFedRR §2),
    not our choice. Else ``None``."""
    found = [(model.get(f), ridge.get(f)) for f in weak]
    if not found or any(m is None or r is None or m < r - margin for m, r in found):
        return None
    return (" Ridge regression on logistic regression's own per-sequence features (no reservoir; the seeds' "
            "least-squares readout) is itself below logistic regression, and the reservoir's readout is within "
            f"{margin:.0f} points of it (FedRR vs ridge on LR's features vs LR: "
            + listing({f: f"{m:.1f} vs {r:.1f} vs {lr[f]:.1f}" for f, (m, r) in zip(weak, found)})
            + "): the gap is the least-squares loss of the seeds' readout (IncFed eq. 3), not the reservoir.")


def squared_reason(weak: Mapping[str, Any], squared: Mapping[str, Mapping[str, float]], lr: Mapping[str, float], *,
                   margin: float) -> str | None:
    """A reason (a sentence to append) when, at every fraction label in ``weak``, the same readout on the
    sequences with each standardized axis' square appended (``squared[f]["fedrr"]``, %; pipeline option
    ``squared``, ours and not in the seed) is at most ``margin`` points below logistic regression on the
    seed's sequences (``lr[f]``); ``squared[f]["LR"]`` is logistic regression on the squared sequences.
    Else ``None``."""
    found = [squared.get(f) for f in weak]
    if not found or any(q is None or q["fedrr"] < lr[f] - margin for f, q in zip(weak, found)):
        return None
    return (" Measured: with each standardized axis' square appended as 6 more inputs (ours, not in the seed; "
            "pipeline option squared) the same readout reaches logistic regression (FedRR vs logistic regression on "
            "the seed's sequences, on the squared ones: " + listing({f: f"{q['fedrr']:.1f} vs {lr[f]:.1f}, {q['LR']:.1f}"
                                                                    for f, q in zip(weak, found)})
            + "). The seed's readout scores the mean state, which carries each input's per-sequence mean to new "
            "users but has to form the motion power (a channel's std) from the states; a quadratic readout of the "
            "states [x, x ⊙ x] does not close the gap, the squared inputs do. The gap is the linear "
            "readout of our 2–5 diverse synthetic users, not a defect of the federated algorithms.")


def read_rounds(path: Path) -> list[dict[str, float]]:
    """The per-round rows a federated run released to ``rounds.csv`` (numbers as floats), by round."""
    with open(path, newline="") as fh:
        rows = [{k: float(v) if v not in ("", None) else float("nan") for k, v in r.items()} for r in csv.DictReader(fh)]
    return sorted(rows, key=lambda r: r["round"])


def drawdown(values: Iterable[float]) -> float:
    """Sum of the decreases between consecutive values: 0 for a never-decreasing curve."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=np.float64)
    return float(np.clip(-np.diff(v), 0, None).sum()) if v.size > 1 else 0.0


def mean_std(values: Iterable[float], scale: float = 1.0) -> MeanStd:
    return MeanStd.of(values).scaled(scale)


def all_hold(checks: Mapping[str, bool]) -> bool | None:
    """``None`` for no checks, else whether every check holds."""
    return None if not checks else all(checks.values())


def listing(checks: Mapping[str, Any], render: Callable[[Any], str] = str) -> str:
    return "; ".join(f"{k}: {render(v)}" for k, v in checks.items())


def plt():
    """matplotlib.pyplot on the Agg backend in the house style (:func:`tff_esn.runs.figures.pyplot`)."""
    from tff_esn.runs.figures import pyplot

    return pyplot()


BASELINES = {"majority": "majority", "logistic_regression": "LR"}
"""Keys of :func:`tff_esn.runs.baselines.baseline_scores` and their table labels."""


def baseline_accuracy(scores: Mapping[str, Any], group: str = "test") -> dict[str, float | None]:
    """``{label: accuracy %}`` of the majority class and logistic regression on ``group``, from
    :func:`tff_esn.runs.baselines.baseline_scores` or a run record's ``baselines`` section."""
    out = {}
    for key, label in BASELINES.items():
        metrics = (scores.get(key) or {}).get(group)
        out[label] = None if metrics is None else 100 * metrics["accuracy"]
    return out


def chance_cause(aucs: Mapping[str, float | None], *, margin: float = 0.1) -> tuple[str | None, str]:
    """``(cause, reason)`` for a disagreement that rests on federations whose clients have
    their own reservoirs (thesis Table 6.5): when every such run's final test AUC is at most
    ``0.5 + margin`` (no better than chance), the comparison is decided by the seed's
    inconsistency — a readout fitted to one random reservoir's states has no meaning on
    another's (unrelated state coordinates), so the averaged readout is arbitrary on the
    server's reservoir. Otherwise (or with a run without an AUC) ``(None, "")``: unexplained."""
    if not aucs or any(v is None or not np.isfinite(v) for v in aucs.values()):
        return None, ""
    shown = ", ".join(f"{k} {v:.3f}" for k, v in aucs.items())
    if max(aucs.values()) > 0.5 + margin:
        return None, ""
    return "seed", (f"every run with different reservoirs is at chance (final test AUC {shown}; chance 0.5, "
                    f"criterion ≤ {0.5 + margin:.2f}): a readout averaged over clients' unrelated random reservoirs "
                    "has no meaning on the server's reservoir, so these runs' F1 is that of an arbitrary readout "
                    "and any comparison with them says nothing about the algorithms")


def unless_at_chance(holds: bool | None, aucs: Mapping[str, float | None]) -> tuple[bool | None, str | None, str]:
    """``(holds, cause, reason)`` of a claim resting on the runs whose clients have their own
    reservoirs: when :func:`chance_cause` finds every such run at chance, the claim cannot hold —
    their F1 is that of an arbitrary readout (on WESAD the majority class gives F1 ≈ 0.87), so
    "exceeds" or "improves" there is not learning — and it disagrees for that reason."""
    cause, reason = chance_cause(aucs)
    return (False if cause is not None and holds is not None else holds), cause, reason


def data_cause(models: Mapping[str, float], lr: float, majority: float, *, ceiling: float = 97.0,
               margin: float = 5.0) -> tuple[str | None, str]:
    """``(cause, reason)`` for a disagreement the baselines explain (accuracies in %): every
    model and logistic regression at the ceiling — no room for differences of a few points —,
    or logistic regression *and every model* within ``margin`` of the majority class — nothing
    learnable in the data. Logistic regression alone near the majority class says only that its
    per-sequence summary features are weak (synthetic WESAD: LR 43 %, majority 39 %, ESNs 62–73 %),
    not that the data hold nothing. Otherwise ``(None, "")``: unexplained, a defect until shown
    otherwise."""
    shown = ", ".join(f"{k} {v:.1f}" for k, v in models.items())
    if min(models.values()) >= ceiling and lr >= ceiling:
        return "data", (f"on our synthetic data every model is at the ceiling ({shown}; logistic regression "
                        f"{lr:.1f} %), so the published differences of a few points cannot show")
    if lr <= majority + margin and max(models.values()) <= majority + margin:
        return "data", (f"logistic regression ({lr:.1f} %) and every model ({shown}) are within {margin:.0f} points "
                        f"of the majority class ({majority:.1f} %) on these data: nothing learnable")
    return None, ""
