"""The reservoir-computing forecasting scoreboard: Mackey–Glass τ = 17 84-step free run, Lorenz-63 valid prediction
time, NARMA10 one step ahead at 100 and 500 units.

Each task: centralized ridge and IncFed (exact: the same readout, so the same free runs), beside reservoirpy (same
units, spectral radius, leaking rate, input and bias scaling, λ and washout; its own random matrices), the
persistence forecast and a linear autoregression (AR) whose lag count and λ are chosen on the validation client.
Free-run tasks choose λ and the spectral radius on the validation client's free runs, one-step tasks the spectral
radius and input scaling (each at its λ chosen on validation); the test client's windows
(:func:`tff_esn.runs.free_run.window_starts`) are scored. Lorenz-63 is forecast from its x channel alone (one input,
fed back), VPT in Lyapunov times (λ_max 0.9056). ``--quick``: shorter series, one seed; ``--seeds N``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings

import numpy as np

from tff_esn.closed_form.run import shared_harvests
from tff_esn.common.run_warnings import RunWarning
from tff_esn.common.tasks import Task
from tff_esn.data.seed_sources.generators import LYAPUNOV, lorenz, series_dataset
from tff_esn.data.series_files import series_dataset_from_arrays
from tff_esn.data.splits import get_split
from tff_esn.esn.ridge import RidgeStats, predict
from tff_esn.registry.algorithms import resolve_run, run_algorithm
from tff_esn.runs.free_run import VPT_THRESHOLD, window_starts

L2S = (1e-10, 1e-8, 1e-6, 1e-4)
RADII = (0.9, 1.2)
INPUT_SCALINGS = (1.0, 0.3, 0.1)
AR_LAGS = (1, 2, 5, 10, 20, 50, 100)
TARGETS = {"mackey-glass": ("nrmse", 1e-2), "lorenz": ("vpt", 5.0), "narma10-500": ("nrmse", 0.25)}


@dataclasses.dataclass(frozen=True)
class Task_:
    name: str
    units: int
    steps: int  # free-run window (0: one step ahead)
    clients: int
    train_steps: int
    held_steps: int
    washout: int = 100
    input_scalings: tuple[float, ...] = (1.0,)  # searched with the free-run tasks' λ and spectral radius


def _tasks(quick: bool) -> list[Task_]:
    scale = 4 if quick else 1
    return [Task_("mackey-glass", 500, 84, 5, 2000 // scale, 2000 // scale),
            Task_("lorenz", 500, 400, 5, 4000 // scale, 3000 // scale, input_scalings=(1.0, 0.3)),
            Task_("narma10-100", 100, 0, 5, 2000 // scale, 2000 // scale),
            Task_("narma10-500", 500, 0, 5, 2000 // scale, 2000 // scale)]


def _dataset(task: Task_, seed: int):
    if task.name == "lorenz":  # the x channel alone, contiguous segments of one trajectory
        total = task.clients * task.train_steps + 2 * task.held_steps
        x = lorenz(total, np.random.default_rng(np.random.SeedSequence([seed, 0]))).channel("x")
        cuts = np.cumsum([task.train_steps] * task.clients + [task.held_steps])
        rows = np.split(x, cuts)
        split = ["train"] * task.clients + ["val", "test"]
        return series_dataset_from_arrays(np.array(rows, dtype=object), [f"c{k}" for k in range(len(rows))], split,
                                          source="lorenz", ragged="crop", length=min(map(len, rows)))
    name = task.name.split("-")[0] if task.name.startswith("narma") else task.name
    return series_dataset(name, Task("forecast", 1), clients=task.clients, steps=task.train_steps,
                          held_steps=task.held_steps, seed=seed)


def _errors_windows(generate, x: np.ndarray, y: np.ndarray, steps: int, washout: int) -> np.ndarray:
    """(windows, steps) free-run errors of ``generate(warmup, steps)`` on one series."""
    return np.array([generate(x[:w], steps) - y[w - 1:w - 1 + steps] for w in window_starts(len(x), steps, washout)])


def _scores(errors: np.ndarray, sigma: float, lyapunov: float | None) -> dict[str, float]:
    exceeded = np.abs(errors) / sigma > VPT_THRESHOLD
    vpt = np.where(exceeded.any(axis=1), exceeded.argmax(axis=1), errors.shape[1]).mean()
    out = {"nrmse": float(np.sqrt(np.mean(errors ** 2)) / sigma), "vpt_steps": float(vpt)}
    if lyapunov is not None:
        out["vpt"] = float(vpt * lyapunov)
    return out


def _better(task: Task_, a: dict, b: dict | None) -> bool:
    if b is None:
        return True
    return a["vpt_steps"] > b["vpt_steps"] if task.name == "lorenz" else a["nrmse"] < b["nrmse"]


def _ours(task: Task_, data, split) -> tuple[dict, dict, dict]:
    """Centralized and IncFed test scores, and the settings chosen on validation."""
    base = {"units": task.units, "washout": task.washout, "bias_scaling": 1.0, "state_mode": "all"}
    if not task.steps:  # the spectral radius and input scaling on the validation client, each at its best λ
        best = None
        with shared_harvests():
            for radius in (0.9, 1.0):
                for scaling in INPUT_SCALINGS:
                    settings = {**base, "spectral_radius": radius, "input_scaling": scaling}
                    record = run_algorithm(resolve_run("centralized", data, **settings, l2="auto"), data, split)
                    if best is None or record["val"]["nrmse"] < best["val"]["nrmse"]:
                        best, chosen = record, {**settings, "l2": record["l2_selection"]["l2"]}
        incfed = run_algorithm(resolve_run("incfed", data, **chosen, backend="numpy"), data, split)
        return {"nrmse": best["test"]["nrmse"]}, {"nrmse": incfed["test"]["nrmse"]}, chosen
    best, chosen = None, None
    with shared_harvests():
        for radius, scaling, l2 in ((r, i, l2) for r in RADII for i in task.input_scalings for l2 in L2S):
            settings = {**base, "l2": l2, "spectral_radius": radius, "input_scaling": scaling}
            record = run_algorithm(resolve_run("centralized", data, **settings), data, split, free_run=task.steps)
            val = record["free_run"]["val"]
            score = {"nrmse": val["nrmse"], "vpt_steps": val["vpt_steps"]}
            if _better(task, score, best):
                best, central, chosen = score, record, settings
    incfed = run_algorithm(resolve_run("incfed", data, **chosen, backend="numpy"), data, split, free_run=task.steps)
    key = "vpt_lyapunov_times" if task.name == "lorenz" else "nrmse"
    pick = {"nrmse": "nrmse", "vpt_lyapunov_times": "vpt"}
    return ({pick[key]: central["free_run"]["test"][key], "nrmse": central["free_run"]["test"]["nrmse"]},
            {pick[key]: incfed["free_run"]["test"][key], "nrmse": incfed["free_run"]["test"]["nrmse"]}, chosen)


def _series(data, ids):
    return [(c.x[0, :, 0].astype(np.float64), c.y[0]) for c in (data.clients[i] for i in ids)]


def _ar(task: Task_, data, split, lyapunov):
    """The AR(p) (ridge on the latest p inputs, p and λ chosen on validation): one-step or free-run test scores."""
    train = _series(data, split.train)

    def fit(p: int, l2: float):
        rows = np.concatenate([np.lib.stride_tricks.sliding_window_view(x, p)[:len(x) - p + 1] for x, _ in train])
        targets = np.concatenate([y[p - 1:] for _, y in train])
        return RidgeStats.from_states(rows, targets[:, None], bias=True).solve(l2)

    def generate(w):
        p = (w.shape[1] - 1)

        def run(warm, steps):
            history, out = list(warm[-p:]), []
            for _ in range(steps):
                out.append(float(predict(w, np.array(history[-p:])[None], bias=True)[0, 0]))
                history.append(out[-1])
            return np.array(out)
        return run

    def evaluate(w, ids):
        p = w.shape[1] - 1
        if not task.steps:
            errs = [predict(w, np.lib.stride_tricks.sliding_window_view(x, p)[task.washout - p + 1:], bias=True)[:, 0]
                    - y[task.washout:] for x, y in _series(data, ids)]
            e = np.concatenate(errs)
            ys = np.concatenate([y[task.washout:] for _, y in _series(data, ids)])
            return {"nrmse": float(np.sqrt(np.mean(e ** 2)) / ys.std()), "vpt_steps": 0.0}
        (x, y), = _series(data, ids)
        return _scores(_errors_windows(generate(w), x, y, task.steps, task.washout), float(y.std()), lyapunov)

    best, weights = None, None
    for p in AR_LAGS:
        for l2 in (1e-10, 1e-8, 1e-6, 1e-4, 1e-2):
            w = fit(p, l2)
            score = evaluate(w, split.val)
            if _better(task, score, best):
                best, weights = score, w
    return evaluate(weights, split.test)


def persistence_errors(y: np.ndarray, steps: int, washout: int) -> np.ndarray:
    """Errors of the persistence forecast on one target series ``y`` (``y[t]`` is the value one step after input
    ``t``): one step ahead (``steps`` 0), ``ŷ = y[t − 1]`` against ``y[t]`` for ``t ≥ washout`` (1-D); a free run
    of ``steps`` from each window's warm-up (:func:`window_starts`), the last value seen ``y[W − 2]`` held
    (windows, steps)."""
    if not steps:
        return y[washout - 1:-1] - y[washout:]
    return np.array([np.full(steps, y[w - 2]) - y[w - 1:w - 1 + steps] for w in window_starts(len(y), steps, washout)])


def _persistence(task: Task_, data, split, lyapunov):
    (_, y), = _series(data, split.test)
    errors = persistence_errors(y, task.steps, task.washout)
    if not task.steps:
        return {"nrmse": float(np.sqrt(np.mean(errors ** 2)) / y[task.washout:].std())}
    return _scores(errors, float(y.std()), lyapunov)


def _reservoirpy(task: Task_, data, split, chosen: dict, seed: int, lyapunov):
    try:
        import reservoirpy
        from reservoirpy.nodes import Reservoir, Ridge
    except ImportError:
        return None
    reservoirpy.verbosity(0)
    reservoir = Reservoir(task.units, sr=chosen["spectral_radius"], lr=1.0, input_scaling=chosen["input_scaling"],
                          bias_scaling=1.0, seed=seed)
    esn = reservoir >> Ridge(ridge=chosen["l2"])
    train = [(data.clients[c].x[0].astype(np.float64), data.clients[c].y[0][:, None]) for c in split.train]
    esn.fit([x for x, _ in train], [y for _, y in train], warmup=task.washout)
    test = data.clients[split.test[0]]
    x, y = test.x[0].astype(np.float64), test.y[0]
    if not task.steps:
        reservoir.reset()
        out = esn.run(x)[task.washout:, 0]
        e = out - y[task.washout:]
        return {"nrmse": float(np.sqrt(np.mean(e ** 2)) / y[task.washout:].std())}

    def generate(warm, steps):
        reservoir.reset()
        out = [float(esn.run(warm[:, None] if warm.ndim == 1 else warm)[-1, 0])]
        for _ in range(steps - 1):
            out.append(float(esn(np.array([[out[-1]]]))[0, 0]))
        return np.array(out)

    return _scores(_errors_windows(generate, x, y, task.steps, task.washout), float(y.std()), lyapunov)


def run_task(task: Task_, seed: int) -> dict[str, dict]:
    data = _dataset(task, seed)
    split = get_split("npz", data)
    lyapunov = None
    if task.name in LYAPUNOV:
        exponent, step = LYAPUNOV[task.name]
        lyapunov = exponent * step
    central, incfed, chosen = _ours(task, data, split)
    return {"centralized": central, "incfed": incfed, "settings": chosen,
            "reservoirpy": _reservoirpy(task, data, split, chosen, seed, lyapunov),
            "AR (lags on val)": _ar(task, data, split, lyapunov), "persistence": _persistence(task, data, split,
                                                                                             lyapunov)}


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    seeds = int(argv[argv.index("--seeds") + 1]) if "--seeds" in argv else (1 if quick else 5)
    only = argv[argv.index("--tasks") + 1].split(",") if "--tasks" in argv else None
    warnings.simplefilter("ignore", RunWarning)
    for task in _tasks(quick):
        if only and task.name not in only:
            continue
        metric = "vpt" if task.name == "lorenz" else "nrmse"
        t0 = time.perf_counter()
        results = []
        for seed in range(seeds):
            results.append(run_task(task, seed))
            print(f"{task.name} seed {seed}: {results[-1]}", flush=True)
        label = (f"{task.name}: {'VPT (Lyapunov times)' if metric == 'vpt' else 'NRMSE'}"
                 f"{f' over a {task.steps}-step free run' if task.steps else ' one step ahead'}, {task.units} units, "
                 f"{seeds} seed(s), {time.perf_counter() - t0:.0f} s")
        print(f"\n{label}\n| model | {metric} (mean ± std) |\n|---|---|")
        for model in ("centralized", "incfed", "reservoirpy", "AR (lags on val)", "persistence"):
            values = [r[model][metric] for r in results if r[model] is not None]
            print(f"| {model} | " + (f"{np.mean(values):.4g} ± {np.std(values):.2g} |" if values else "n/a |"))
        print("settings chosen:", [r["settings"] for r in results])
        exact = all(r["centralized"][metric] == r["incfed"][metric] for r in results)
        print(f"IncFed = centralized (exactly): {exact}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
