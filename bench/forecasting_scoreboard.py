"""The reservoir-computing forecasting scoreboard: Mackey–Glass τ = 17 84-step free run, Lorenz-63 valid prediction
time, NARMA10 one step ahead at 100 and 500 units, and the one-step NRMSE of Mackey–Glass and Lorenz.

Each protocol: centralized ridge and IncFed (exact: the same readout, so the same free runs) and FedAvg (SGD on the
same reservoir, its defaults on a series) beside reservoirpy (same units, spectral radius, leaking rate, input and
bias scaling and washout, its own random matrices, its λ chosen on the validation client), the persistence forecast
and a linear autoregression (AR) whose lag count and λ are chosen on the validation client. Our λ, spectral radius,
input scaling and leaking rate are chosen on the validation client (free-run protocols on its free runs,
:func:`tff_esn.runs.free_run.free_run_scores`; one-step ones on its one-step error at each λ); the test client is
scored. Lorenz-63 forecasts all three channels and feeds them back (:func:`tff_esn.esn.model.joint_forecast`); its
VPT is the x channel's, in Lyapunov times (λ_max 0.9056).

``python -m bench forecasting_scoreboard [--seeds=N] [--tasks=a,b] [--quick] [--no-fedavg] [--render] [--out=DIR]
[--docs=docs]``
writes each protocol's per-seed results ``DIR/results/NAME.json``, the table ``DIR/forecasting_scoreboard.{csv,md}``
and the figure ``DIR/forecasting_free_runs.{pdf,svg,png}`` with its caption (default DIR
``runs/forecasting_scoreboard``; with ``--docs``, the page ``docs/forecasting-scoreboard.md`` and its figure).
``--quick``: short series, 1 seed, one-point grids (a smoke test).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.closed_form.run import shared_harvests
from tff_esn.common.run_warnings import RunWarning
from tff_esn.common.tasks import Task
from tff_esn.data.seed_sources.generators import LYAPUNOV, series_dataset
from tff_esn.data.splits import get_split
from tff_esn.esn.model import Readout, joint_forecast
from tff_esn.esn.ridge import RidgeStats, predict
from tff_esn.registry.algorithms import resolve_run, run_algorithm
from tff_esn.runs.figures import COLOURS, pyplot, save_figure
from tff_esn.runs.free_run import VPT_THRESHOLD, free_run_scores, window_starts

L2S = (1e-10, 1e-8, 1e-6, 1e-4)
"""λ searched for free runs (ours and reservoirpy's)."""
ONE_STEP_L2S = tuple(10.0 ** k for k in range(-10, 3))
"""λ searched one step ahead (ours, ``l2_grid``, and reservoirpy's)."""
AR_L2S = (1e-10, 1e-8, 1e-6, 1e-4, 1e-2)
AR_LAGS = (1, 2, 5, 10, 20, 50, 100)
TARGETS = {("mackey-glass", "free-run NRMSE"): ("≤", 1e-2), ("lorenz", "VPT (Lyapunov times)"): ("≥", 5.0),
           ("narma10-500", "one-step NRMSE"): ("≤", 0.25)}
"""The issue's targets per (protocol, metric row), for every seed."""
MODELS = ("centralized", "incfed", "fedavg", "reservoirpy", "AR (lags on val)", "persistence")


@dataclasses.dataclass(frozen=True)
class Protocol:
    """One scoreboard task: ``units``, a ``steps`` free-run window (0: one step ahead), ``clients`` training
    segments of ``train_steps`` and a validation and test segment of ``held_steps``, the ``channels`` forecast
    (several: a joint forecast fed back), the grids searched on validation, and the seeds FedAvg runs on."""

    name: str
    series: str
    units: int
    steps: int
    clients: int
    train_steps: int
    held_steps: int
    channels: tuple[str, ...]
    washout: int = 100
    radii: tuple[float, ...] = (0.9, 1.2)
    input_scalings: tuple[float, ...] = (1.0,)
    leaks: tuple[float, ...] = (1.0,)
    fedavg_seeds: int = 5  # FedAvg runs on the first seeds only (its rounds are slow at 1 000 units)

    @property
    def metric(self) -> str:
        if not self.steps:
            return "one-step NRMSE"
        return "VPT (Lyapunov times)" if self.series == "lorenz" else "free-run NRMSE"


def protocols(quick: bool) -> list[Protocol]:
    """The scoreboard's protocols (``quick``: short series and one-point grids)."""
    if quick:
        return [Protocol("mackey-glass", "mackey-glass", 100, 20, 2, 400, 400, ("x",), 50, (1.2,)),
                Protocol("lorenz", "lorenz", 100, 40, 2, 600, 400, ("x", "y", "z"), 50, (1.2,)),
                Protocol("narma10-100", "narma10", 50, 0, 2, 400, 400, ("y",), 50, (0.9,))]
    return [Protocol("mackey-glass", "mackey-glass", 1000, 84, 5, 4000, 2000, ("x",), radii=(0.9, 1.2),
                     input_scalings=(1.0, 0.5), fedavg_seeds=1),
            Protocol("lorenz", "lorenz", 500, 400, 5, 2000, 2000, ("x", "y", "z"), radii=(0.5, 1.1),
                     input_scalings=(0.3,), fedavg_seeds=0),
            Protocol("narma10-100", "narma10", 100, 0, 5, 2000, 2000, ("y",), radii=(0.9, 1.0),
                     input_scalings=(1.0, 0.3, 0.1)),
            Protocol("narma10-500", "narma10", 500, 0, 5, 2000, 2000, ("y",), radii=(0.9, 1.0),
                     input_scalings=(1.0, 0.3, 0.1))]


def _datasets(p: Protocol, seed: int) -> list:
    """One dataset per channel forecast, of one realisation cut into contiguous segments (the same inputs)."""
    return [series_dataset(p.series, Task("forecast", 1, c), clients=p.clients, steps=p.train_steps,
                           held_steps=p.held_steps, seed=seed) for c in p.channels]


def _lyapunov(p: Protocol) -> tuple[float, float] | None:
    return LYAPUNOV.get(p.series)


def _scores(errors: np.ndarray, sigma: float, lyapunov: tuple[float, float] | None) -> dict[str, float]:
    """NRMSE and VPT (steps, Lyapunov times) of free-run ``errors`` (windows, steps) of the target channel."""
    exceeded = np.abs(errors) / sigma > VPT_THRESHOLD
    vpt = np.where(exceeded.any(axis=1), exceeded.argmax(axis=1), errors.shape[1]).mean()
    out = {"nrmse": float(np.sqrt(np.mean(errors ** 2)) / sigma), "vpt_steps": float(vpt)}
    if lyapunov is not None:
        out["vpt"] = float(vpt * lyapunov[0] * lyapunov[1])
    return out


def _better(p: Protocol, a: dict, b: dict | None) -> bool:
    """Whether validation scores ``a`` beat ``b``: a longer VPT (Lorenz), else a lower NRMSE."""
    if b is None:
        return True
    return a["vpt_steps"] > b["vpt_steps"] if p.series == "lorenz" else a["nrmse"] < b["nrmse"]


def _free_run(p: Protocol, model, data, split, group: str) -> dict[str, float]:
    section = free_run_scores(model, data, split, p.steps, lyapunov=_lyapunov(p))[group]
    out = {"nrmse": section["nrmse"], "vpt_steps": section["vpt_steps"]}
    if "vpt_lyapunov_times" in section:
        out["vpt"] = section["vpt_lyapunov_times"]
    return out


def _fit(algorithm: str, datasets: list, split, settings: dict):
    """The runs of ``algorithm`` on every channel's dataset, and their (joint) model."""
    records = [run_algorithm(resolve_run(algorithm, d, **settings), d, split) for d in datasets]
    return records[0], _joint([r.model for r in records])


def _joint(models: list):
    return models[0] if len(models) == 1 else joint_forecast(models)


def _per_l2(datasets: list, split, settings: dict):
    """``(λ, model)`` for every λ of :data:`L2S` at one reservoir: one centralized run on the first channel gives the
    reservoir and the states its readout sees; the ridge statistics of every channel's targets on the training
    clients' states give each λ's readouts at once (IncFed eqs. 8–10, one output per channel)."""
    template = run_algorithm(resolve_run("centralized", datasets[0], **settings, l2=L2S[0]), datasets[0], split).model
    states = np.concatenate([template.states(datasets[0].clients[c].x) for c in split.train])
    targets = np.stack([np.concatenate([template.labels(d.clients[c].y, len(d.clients[c].y)) for c in split.train])
                        for d in datasets], axis=1)
    stats = RidgeStats.from_states(states, targets, bias=template.spec.readout_bias)
    channels = tuple(d.task.target for d in datasets) if len(datasets) > 1 else ()
    for l2 in L2S:
        yield l2, template.replace(members=(dataclasses.replace(template.members[0],
                                                                readout=Readout("ridge", stats.solve(l2))),),
                                   channels=channels, stats=None)


def _ours(p: Protocol, datasets: list, split, seed: int) -> dict[str, Any]:
    """Centralized and IncFed test scores (free run and one step), the settings chosen on validation, the models."""
    base = {"units": p.units, "washout": p.washout, "bias_scaling": 1.0, "state_mode": "all", "seed": seed}
    grid = [(r, i, a) for r in p.radii for i in p.input_scalings for a in p.leaks]
    best, chosen = None, None
    with shared_harvests():
        for radius, scaling, leak in grid:
            settings = {**base, "spectral_radius": radius, "input_scaling": scaling, "leaky": leak}
            if not p.steps:  # one step: λ on the validation client at each reservoir
                record = run_algorithm(resolve_run("centralized", datasets[0], **settings, l2="auto",
                                                   l2_grid=ONE_STEP_L2S), datasets[0], split)
                score = {"nrmse": record["val"]["nrmse"]}
                if _better(p, score, best):
                    best, chosen = score, {**settings, "l2": record["l2_selection"]["l2"]}
                continue
            for l2, model in _per_l2(datasets, split, settings):
                score = _free_run(p, model, datasets[0], split, "val")
                if _better(p, score, best):
                    best, chosen = score, {**settings, "l2": l2}
    out: dict[str, Any] = {"settings": chosen}
    for algorithm, extra in (("centralized", {}), ("incfed", {"backend": "numpy"})):
        record, model = _fit(algorithm, datasets, split, {**chosen, **extra})
        out[algorithm] = {"one-step NRMSE": record["test"]["nrmse"]}
        if p.steps:
            out[algorithm].update(_free_run(p, model, datasets[0], split, "test"))
        out[f"{algorithm}_model"] = model
    return out


def _fedavg(p: Protocol, datasets: list, split, chosen: dict) -> dict[str, float]:
    """FedAvg (its defaults on a series) on the reservoir chosen for ours: one-step and free-run test scores."""
    settings = {k: chosen[k] for k in ("units", "washout", "bias_scaling", "state_mode", "seed", "spectral_radius",
                                       "input_scaling", "leaky")}
    record, model = _fit("fedavg", datasets, split, settings)
    out = {"one-step NRMSE": record["test"]["nrmse"]}
    if p.steps:
        out.update(_free_run(p, model, datasets[0], split, "test"))
    return out


def _arrays(datasets: list, ids) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per client: inputs (T, F) and the targets of every channel forecast (T, C), float64."""
    return [(datasets[0].clients[c].x[0].astype(np.float64),
             np.stack([d.clients[c].y[0] for d in datasets], axis=1).astype(np.float64)) for c in ids]


def _lagged(x: np.ndarray, p: int) -> np.ndarray:
    """Rows ``[x(t − p + 1), …, x(t)]`` (time-major, every channel) flattened, for t = p − 1 … T − 1."""
    return np.lib.stride_tricks.sliding_window_view(x, p, axis=0).transpose(0, 2, 1).reshape(len(x) - p + 1, -1)


def _one_step(errors: np.ndarray, y: np.ndarray) -> float:
    return float(np.sqrt(np.mean(errors ** 2)) / y.std())


def _ar(p: Protocol, datasets: list, split) -> dict[str, float]:
    """AR(p): ridge on the latest p inputs (every channel) to the next value of every channel forecast, p and λ
    chosen on validation; one-step and (iterated) free-run test scores."""
    train = _arrays(datasets, split.train)

    def fit(lags: int, l2: float) -> np.ndarray:
        rows = np.concatenate([_lagged(x, lags) for x, _ in train])
        targets = np.concatenate([y[lags - 1:] for _, y in train])
        return RidgeStats.from_states(rows, targets, bias=True).solve(l2)

    def generate(w: np.ndarray, lags: int):
        def run(warm: np.ndarray, steps: int) -> np.ndarray:
            history, out = list(warm[-lags:]), []
            for _ in range(steps):
                out.append(predict(w, np.concatenate(history[-lags:])[None], bias=True)[0])
                history.append(out[-1])
            return np.array(out)[:, 0]
        return run

    def evaluate(w: np.ndarray, lags: int, ids) -> dict[str, float]:
        (x, y), = _arrays(datasets, ids)
        out = {"one-step NRMSE": _one_step(predict(w, _lagged(x, lags)[p.washout - lags + 1:], bias=True)[:, 0]
                                           - y[p.washout:, 0], y[p.washout:, 0])}
        out["nrmse"] = out["one-step NRMSE"]
        if p.steps:
            out.update(_scores(_window_errors(generate(w, lags), x, y[:, 0], p.steps, p.washout), float(y[:, 0].std()),
                               _lyapunov(p)))
        return out

    best, pick = None, None
    for lags in (n for n in AR_LAGS if n <= p.washout + 1):  # every lag count scored from the washout on
        for l2 in AR_L2S:
            w = fit(lags, l2)
            score = evaluate(w, lags, split.val)
            if _better(p, score, best):
                best, pick = score, (w, lags)
    return evaluate(*pick, split.test)


def _window_errors(generate, x: np.ndarray, y: np.ndarray, steps: int, washout: int) -> np.ndarray:
    """(windows, steps) free-run errors of ``generate(warmup, steps)`` on one series (inputs ``x``, target ``y``)."""
    return np.array([generate(x[:w], steps) - y[w - 1:w - 1 + steps] for w in window_starts(len(x), steps, washout)])


def persistence_errors(y: np.ndarray, steps: int, washout: int) -> np.ndarray:
    """Errors of the persistence forecast on one target series ``y`` (``y[t]`` is the value one step after input
    ``t``): one step ahead (``steps`` 0), ``ŷ = y[t − 1]`` against ``y[t]`` for ``t ≥ washout`` (1-D); a free run
    of ``steps`` from each window's warm-up (:func:`window_starts`), the last value seen ``y[W − 2]`` held
    (windows, steps)."""
    if not steps:
        return y[washout - 1:-1] - y[washout:]
    return np.array([np.full(steps, y[w - 2]) - y[w - 1:w - 1 + steps] for w in window_starts(len(y), steps, washout)])


def _persistence(p: Protocol, datasets: list, split) -> dict[str, float]:
    (_, y), = _arrays(datasets, split.test)
    y = y[:, 0]
    out = {"one-step NRMSE": _one_step(persistence_errors(y, 0, p.washout), y[p.washout:])}
    if p.steps:
        out.update(_scores(persistence_errors(y, p.steps, p.washout), float(y.std()), _lyapunov(p)))
    return out


def _reservoirpy(p: Protocol, datasets: list, split, chosen: dict, seed: int) -> dict[str, float] | None:
    """reservoirpy's ESN of our chosen reservoir settings on its own matrices, its λ chosen on validation as ours
    (free runs or one step); None when reservoirpy is not installed."""
    try:
        import reservoirpy
        from reservoirpy.nodes import Reservoir, Ridge
    except ImportError:
        return None
    reservoirpy.verbosity(0)
    train = _arrays(datasets, split.train)

    def scores(esn, reservoir, ids, free: bool) -> dict[str, float]:
        (x, y), = _arrays(datasets, ids)
        reservoir.reset()
        out = {"one-step NRMSE": _one_step(esn.run(x)[p.washout:, 0] - y[p.washout:, 0], y[p.washout:, 0])}
        out["nrmse"] = out["one-step NRMSE"]
        if free:
            def generate(warm: np.ndarray, steps: int) -> np.ndarray:
                reservoir.reset()
                last = esn.run(warm)[-1]
                out = [last]
                for _ in range(steps - 1):
                    out.append(esn(out[-1][None])[0])
                return np.array(out)[:, 0]
            with np.errstate(all="ignore"):
                out.update(_scores(_window_errors(generate, x, y[:, 0], p.steps, p.washout), float(y[:, 0].std()),
                                   _lyapunov(p)))
        return out

    best, pick = None, None
    for l2 in L2S if p.steps else ONE_STEP_L2S:
        reservoir = Reservoir(p.units, sr=chosen["spectral_radius"], lr=chosen["leaky"],
                              input_scaling=chosen["input_scaling"], bias_scaling=1.0, seed=seed)
        esn = reservoir >> Ridge(ridge=l2)
        esn.fit([x for x, _ in train], [y for _, y in train], warmup=p.washout)
        score = scores(esn, reservoir, split.val, bool(p.steps))
        if not np.isfinite(score["nrmse"]):
            continue
        if _better(p, score, best):
            best, pick = score, (esn, reservoir)
    if pick is None:
        return {"one-step NRMSE": float("nan"), "nrmse": float("nan"), "vpt": 0.0}
    return scores(*pick, split.test, bool(p.steps))


def run_protocol(p: Protocol, seed: int, *, fedavg: bool = True) -> dict[str, Any]:
    """Every model's test scores on one seed, the settings chosen, and the first test window's trajectories."""
    datasets = _datasets(p, seed)
    split = get_split("npz", datasets[0])
    ours = _ours(p, datasets, split, seed)
    out = {"settings": ours["settings"], "centralized": ours["centralized"], "incfed": ours["incfed"],
           "fedavg": _fedavg(p, datasets, split, ours["settings"]) if fedavg and seed < p.fedavg_seeds else None,
           "reservoirpy": _reservoirpy(p, datasets, split, ours["settings"], seed),
           "AR (lags on val)": _ar(p, datasets, split), "persistence": _persistence(p, datasets, split)}
    if p.steps:
        (x, y), = _arrays(datasets, split.test)
        start = window_starts(len(x), p.steps, p.washout)[0]
        out["trajectory"] = {"true": y[start - 1:start - 1 + p.steps, 0].tolist(),
                             "centralized": ours["centralized_model"].generate(x[:start], p.steps).tolist()}
    return out


def _rows(p: Protocol) -> list[tuple[str, str]]:
    """The (metric row, score key) pairs a protocol reports."""
    if not p.steps:
        return [("one-step NRMSE", "one-step NRMSE")]
    key = "vpt" if p.series == "lorenz" else "nrmse"
    return [(p.metric, key), ("one-step NRMSE", "one-step NRMSE")]


def _meets(p: Protocol, metric: str, values: list[float]) -> str:
    target = TARGETS.get((p.name, metric))
    if target is None or not values:
        return ""
    sign, bound = target
    ok = all(v <= bound for v in values) if sign == "≤" else all(v >= bound for v in values)
    return f"{'yes' if ok else 'no'} ({sign} {bound:g} every seed)"


def table(results: dict[str, list[dict]], chosen: list[Protocol]) -> list[dict[str, str]]:
    """One row per (protocol, metric): each model's mean ± std over seeds, the per-seed values, whether IncFed
    equals centralized exactly, and the target's verdict."""
    rows = []
    for p in chosen:
        runs = results[p.name]
        for metric, key in _rows(p):
            row = {"task": p.name, "units": str(p.units), "metric": metric, "seeds": str(len(runs))}
            for model in MODELS:
                values = [r[model][key] for r in runs if r[model] is not None]
                row[model] = (f"{np.mean(values):.4g} ± {np.std(values):.2g}" if values else "not run")
                if values and len(values) < len(runs):
                    row[model] += f" ({len(values)} of {len(runs)} seeds)"
                row[f"{model} per seed"] = " ".join(f"{v:.4g}" for v in values)
            central = [r["centralized"][key] for r in runs]
            row["incfed = centralized"] = "yes" if central == [r["incfed"][key] for r in runs] else "no"
            row["meets target"] = _meets(p, metric, central)
            rows.append(row)
    return rows


def markdown(rows: list[dict[str, str]]) -> str:
    """The table as Markdown: means ± std, then the per-seed values of centralized."""
    head = ["task", "units", "metric", *MODELS, "incfed = centralized", "meets target"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r[h] for h in head) + " |" for r in rows]
    lines += ["", "Per seed (centralized = IncFed):", ""]
    lines += [f"- {r['task']}, {r['metric']}: {r['centralized per seed']}" for r in rows]
    return "\n".join(lines) + "\n"


def figure(results: dict[str, list[dict]], chosen: list[Protocol], out: Path) -> None:
    """Predicted vs true free runs of the first test window of seed 0, one panel per free-run protocol."""
    free = [p for p in chosen if p.steps]
    if not free:
        return
    plt = pyplot()
    fig, axes = plt.subplots(1, len(free), figsize=(3.8 * len(free), 2.8), squeeze=False, constrained_layout=True)
    for ax, p in zip(axes[0], free):
        trajectory = results[p.name][0]["trajectory"]
        ax.plot(trajectory["true"], color="#000000", linewidth=1.2, label="true")
        ax.plot(trajectory["centralized"], color=COLOURS[0], linestyle="--", linewidth=1.2,
                label="free run (centralized = IncFed)")
        ax.set_title(f"{p.name}, {p.units} units")
        ax.set_xlabel("steps ahead")
        ax.set_ylabel(f"{p.channels[0]}(t), as generated")
    axes[0][0].legend(loc="best")
    caption = ("Free runs (closed loop) against the true series on the first test window of seed 0: "
               + "; ".join(f"{p.name} {p.steps} steps, {p.units} units" for p in free)
               + ". The readout's one-step forecast is fed back as the next input (Lorenz-63: all three channels; "
                 "its x channel drawn). bench/forecasting_scoreboard.py.")
    save_figure(fig, out / "forecasting_free_runs", caption)


def write(rows: list[dict[str, str]], out: Path) -> None:
    """The table as ``forecasting_scoreboard.csv`` and ``.md`` in ``out``."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    (out / "forecasting_scoreboard.csv").write_text(buffer.getvalue())
    (out / "forecasting_scoreboard.md").write_text(markdown(rows))


def describe(p: Protocol, runs: list[dict]) -> str:
    """One protocol's setting in a line of Markdown, with the λ and reservoir chosen per seed."""
    window = f"{p.steps}-step free runs" if p.steps else "one step ahead"
    chosen = "; ".join(f"seed {k}: ρ {r['settings']['spectral_radius']:g}, input scaling "
                       f"{r['settings']['input_scaling']:g}, λ {r['settings']['l2']:g}" for k, r in enumerate(runs))
    fed = f"channel{'s' * (len(p.channels) > 1)} {', '.join(p.channels)} {'fed back' if p.steps else 'forecast'}"
    return (f"- **{p.name}**: {p.units} units, {window}, {fed}, {p.clients} training clients of "
            f"{p.train_steps} steps, validation and test clients of {p.held_steps}, washout {p.washout}; searched ρ "
            f"{', '.join(map(str, p.radii))}, input scaling {', '.join(map(str, p.input_scalings))}, λ "
            f"{', '.join(f'{v:g}' for v in (L2S if p.steps else ONE_STEP_L2S))}; FedAvg on the first {min(p.fedavg_seeds, len(runs))} of "
            f"{len(runs)} seeds. Chosen: {chosen}.")


def docs_page(rows: list[dict[str, str]], results: dict[str, list[dict]], chosen: list[Protocol],
              caption: str | None) -> str:
    """The docs page of the scoreboard: how it was run, the table, the settings chosen, the figure (``caption``:
    none without a free-run protocol) and the protocols without results."""
    missing = [p.name for p in protocols(False) if p.name not in results]
    figure_lines = ([] if caption is None else
                    ["![Free runs against the true series](assets/forecasting-scoreboard.png)", "", caption, ""])
    pending = ([] if not missing else
               [f"Not run yet: {', '.join(missing)} (`python -m bench forecasting_scoreboard --tasks="
                f"{','.join(missing)} --out=DIR --docs=docs`, DIR the folder of these results, adds them).", ""])
    return "\n".join([
        "<!-- Written by `python -m bench forecasting_scoreboard --docs=docs` (bench/forecasting_scoreboard.py) from "
        "its results; rerun it, do not edit. -->", "",
        "# The forecasting scoreboard: our numbers", "",
        "Generated series (seeds 0 … N − 1 draw the series and the reservoir), contiguous client segments; every "
        "model's test score as mean ± std over the seeds (the column `seeds`), the per-seed values below. "
        "Protocols and baselines: [Forecasting](forecasting.md#the-forecasting-scoreboard).", "",
        *[describe(p, results[p.name]) for p in chosen], "",
        markdown(rows), *figure_lines, *pending])


def render(out: Path, quick: bool, docs: Path | None = None) -> str:
    """The table and figure of every protocol whose results ``out/results/NAME.json`` holds (and with ``docs``, the
    page ``docs/forecasting-scoreboard.md`` and its figure); the table's Markdown."""
    results = {p.name: json.loads((out / "results" / f"{p.name}.json").read_text()) for p in protocols(quick)
               if (out / "results" / f"{p.name}.json").is_file()}
    chosen = [p for p in protocols(quick) if p.name in results]
    rows = table(results, chosen)
    write(rows, out)
    figure(results, chosen, out)
    if docs is not None:
        drawn = any(p.steps for p in chosen)
        caption = (out / "forecasting_free_runs.caption.md").read_text().strip() if drawn else None
        (docs / "assets").mkdir(parents=True, exist_ok=True)
        (docs / "forecasting-scoreboard.md").write_text(docs_page(rows, results, chosen, caption))
        if drawn:
            shutil.copyfile(out / "forecasting_free_runs.png", docs / "assets" / "forecasting-scoreboard.png")
    return markdown(rows)


def _option(argv: list[str], name: str) -> str | None:
    """The value of ``--name=V`` (the form ``python -m bench`` passes on) or ``--name V``; None if absent."""
    for i, arg in enumerate(argv):
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
        if arg == f"--{name}" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def main(argv: list[str]) -> dict[str, list[dict]]:
    """Runs the protocols asked (``--tasks``) over ``--seeds`` seeds, each protocol's per-seed results saved to
    ``out/results/NAME.json`` as they come, then the table and figure of every protocol saved there (protocols run
    in separate processes share one ``--out``); ``--render`` only redraws them."""
    quick = "--quick" in argv
    seeds = int(_option(argv, "seeds") or (1 if quick else 5))
    only = (_option(argv, "tasks") or "").split(",") if _option(argv, "tasks") else None
    out = Path(_option(argv, "out") or "runs/forecasting_scoreboard")
    (out / "results").mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore", RunWarning)
    results: dict[str, list[dict]] = {}
    for p in ([] if "--render" in argv else [p for p in protocols(quick) if not only or p.name in only]):
        t0 = time.perf_counter()
        results[p.name] = []
        for seed in range(seeds):
            results[p.name].append(run_protocol(p, seed, fedavg="--no-fedavg" not in argv))
            (out / "results" / f"{p.name}.json").write_text(json.dumps(results[p.name], indent=1, default=float) + "\n")
            shown = {k: v for k, v in results[p.name][-1].items() if k != "trajectory"}
            print(f"{p.name} seed {seed} ({time.perf_counter() - t0:.0f} s): {shown}", flush=True)
    docs = _option(argv, "docs")
    print(render(out, quick, None if docs is None else Path(docs)), flush=True)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
