"""Forecasting: the closed-form federations on NARMA10 and Mackey–Glass beside esnfed 1.7.1.

Not a seed's table: the reservoir-computing benchmarks the peer library esnfed ships (its
concepts page: NARMA and Mackey–Glass generators, ``federated_ridge``, ``nrmse``), run one
step ahead on the same generated data. Each series is generated once per client count
(:func:`tff_esn.data.seed_sources.generators.series_dataset`, contiguous segments): the training stretch
is cut into 1, 5 or 20 clients, one validation and one test client follow. Every model has
``units`` reservoir units, a washout of ``washout`` steps per client and λ chosen on the
validation client from the same grid.

* ``table_forecasting`` — test NRMSE of centralized ridge, IncFed, FedAvg-of-ridge, FedAvg (SGD on
  the mean squared error, the series' defaults: their registrations' ``series_data``) and esnfed's
  ``federated_ridge`` (its own reservoir of the same size: ``random_reservoir`` density 0.1,
  ρ 0.9, its readout on ``[1; u(t); x(t)]``), beside persistence and ridge on lagged inputs;
* ``table_horizon`` and ``figure_horizon`` — centralized NRMSE by horizon H beside persistence;
* ``figure_trajectory`` — the test client's predicted vs true trajectory (centralized, one step).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from scripts.common import plt
from scripts.framework import Context, Experiment, register
from tff_esn.closed_form.harvest import Harvester
from tff_esn.closed_form.selection import L2_GRID
from tff_esn.data.seed_sources.generators import series_dataset
from tff_esn.data.splits import get_split
from tff_esn.registry.algorithms import get_algorithm
from tff_esn.registry.defaults import source_defaults
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.ridge import RidgeStats, predict
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.common.tasks import Task

ALGORITHMS = ("centralized", "incfed", "fedavg-ridge")
THRESHOLDS = {"narma10": 0.3, "mackey-glass": 1e-2}
"""The test NRMSE each series must reach one step ahead (the benchmarks' usual figures)."""


@dataclasses.dataclass(frozen=True)
class Settings:
    series: tuple[str, ...] = ("narma10", "mackey-glass")
    clients: tuple[int, ...] = (1, 5, 20)
    train_steps: int = 10_000
    held_steps: int = 2_000
    units: int = 500
    washout: int = 100
    horizons: tuple[int, ...] = (1, 2, 5, 10, 20)
    rounds: int = 300

    @property
    def steps(self) -> int:
        return len(self.series) * (len(self.clients) + len(self.horizons))


def _dataset(name: str, settings: Settings, clients: int, seed: int, horizon: int = 1):
    return series_dataset(name, Task("forecast", horizon), clients=clients, steps=settings.train_steps // clients,
                          held_steps=settings.held_steps, seed=seed)


def _flags(settings: Settings, seed: int) -> dict:
    return {"units": settings.units, "state_mode": "all", "washout": settings.washout, "bias_scaling": 1.0,
            "l2": "auto", "seed": seed}


def _fedavg_flags(name: str, settings: Settings, seed: int) -> dict:
    """FedAvg's settings on a generated series (its defaults there) with this table's reservoir."""
    return {**source_defaults(get_algorithm("fedavg"), name), "units": settings.units, "washout": settings.washout,
            "rounds": settings.rounds, "seed": seed}


def esnfed_nrmse(dataset, split, *, units: int, washout: int, seed: int) -> tuple[float, float]:
    """esnfed 1.7.1's exact federated ridge on ``split``'s training clients, λ best on the
    validation client: ``(test NRMSE, λ)``, scored on the steps after ``washout`` as ours."""
    from esnfed.esn import EchoStateNetwork
    from esnfed.federated import Client, federated_ridge
    from esnfed.metrics import nrmse
    from esnfed.topologies import random_reservoir

    esn = EchoStateNetwork(n_inputs=len(dataset.feature_names), n_outputs=1,
                           reservoir=random_reservoir(units, density=0.1, rng=seed), spectral_radius=0.9,
                           washout=washout, seed=seed)

    def series(cid):
        client = dataset.clients[cid]
        return client.x[0].astype(np.float64), client.y[0]

    clients = [Client(esn, *series(cid)) for cid in split.train]
    held = {group: (esn.harvest(series(ids[0])[0])[washout:], series(ids[0])[1][washout:])
            for group, ids in (("val", split.val), ("test", split.test))}
    best = None
    for l2 in L2_GRID:
        esn.ridge = l2
        readout = federated_ridge(clients, esn)
        val = nrmse(held["val"][1], held["val"][0] @ readout)
        if best is None or val <= best[0]:
            best = (val, l2, nrmse(held["test"][1], held["test"][0] @ readout))
    return best[2], best[1]


def _test_predictions(dataset, split, record, settings: Settings, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The centralized readout's test predictions and targets (its λ from ``record``)."""
    weights = ReservoirWeights.from_config(ReservoirConfig(units=settings.units, bias_scaling=1.0, seed=seed),
                                           len(dataset.feature_names))
    harvester = Harvester(dataset, StateSpec("all", settings.washout, True))
    readout = RidgeStats.sum([harvester.stats(weights, c) for c in split.train]).solve(record["l2_selection"]["l2"])
    features = harvester.features(weights, split.test[0])
    return predict(readout, features.states, bias=True)[:, 0], features.labels


def run(ctx: Context, settings: Settings) -> None:
    rows, horizon_rows = [], []
    for name in settings.series:
        for clients in settings.clients:
            dataset = _dataset(name, settings, clients, ctx.seed)
            split = get_split("npz", dataset)
            row = {"series": name, "clients": clients}
            records = {algo: ctx.run(algo, dataset, split, f"{name}-{clients}-{algo}", **_flags(settings, ctx.seed))
                       for algo in ALGORITHMS}
            records["fedavg"] = ctx.run("fedavg", dataset, split, f"{name}-{clients}-fedavg",
                                        **_fedavg_flags(name, settings, ctx.seed))
            for algo, record in records.items():
                row[algo] = record["test"]["nrmse"]
            row["fedavg lr"] = f"{records['fedavg']['extra']['selection']['client_lr']['value']:g}"
            row["esnfed federated_ridge"], l2 = esnfed_nrmse(dataset, split, units=settings.units,
                                                             washout=settings.washout, seed=ctx.seed)
            row["esnfed λ"] = f"{l2:g}"
            row["our λ"] = f"{records['centralized']['l2_selection']['l2']:g}"
            baselines = records["centralized"]["baselines"]
            row["persistence"] = baselines["persistence"]["test"]["nrmse"]
            row["lagged ridge"] = baselines["lagged_ridge"]["test"]["nrmse"]
            row["|incfed − centralized| / centralized"] = f"{abs(row['incfed'] / row['centralized'] - 1):.1e}"
            rows.append(row)
            if clients == settings.clients[0]:
                _trajectory(ctx, name, *_test_predictions(dataset, split, records["centralized"], settings, ctx.seed))
            ctx.step(series=name, clients=clients)
        for horizon in settings.horizons:
            dataset = _dataset(name, settings, settings.clients[-1], ctx.seed, horizon)
            record = ctx.run("centralized", dataset, get_split("npz", dataset), f"{name}-h{horizon}",
                             **_flags(settings, ctx.seed))
            horizon_rows.append({"series": name, "horizon": horizon, "centralized": record["test"]["nrmse"],
                                 "persistence": record["baselines"]["persistence"]["test"]["nrmse"]})
            ctx.step(series=name, horizon=horizon)
    ours = (f"generated series, {settings.train_steps} training steps cut into contiguous clients, "
            f"{settings.held_steps}-step validation and test clients, {settings.units} units, washout "
            f"{settings.washout}, λ on validation")
    note = (f"fedavg: plain SGD on the mean squared error of the standardised states, {settings.rounds} rounds at "
            "most (patience 100, the best validation round kept), 5 clients per round, 10 local epochs, the client "
            "lr ('fedavg lr') chosen on the validation client: gradient steps on an ill-conditioned least-squares "
            "problem, which the closed form solves exactly.")
    ctx.table("table_forecasting", "Test NRMSE one step ahead by number of clients", rows, ours=ours,
              published="esnfed 1.7.1 run here on the same data (no published numbers)", note=note, digits=6)
    ctx.table("table_horizon", "Centralized test NRMSE by horizon", horizon_rows, ours=ours, digits=6)
    _horizon_figure(ctx, horizon_rows)
    _claims(ctx, rows)


def _trajectory(ctx: Context, name: str, predicted: np.ndarray, true: np.ndarray) -> None:
    fig, (top, bottom) = plt().subplots(2, 1, figsize=(8, 4.5), sharex=True, height_ratios=(3, 1))
    steps = np.arange(min(300, true.size))
    top.plot(steps, true[steps], label="true", lw=1.6)
    top.plot(steps, predicted[steps], "--", label="centralized = IncFed", lw=1.2)
    top.set_ylabel(name)
    top.legend(loc="upper right", fontsize=8)
    bottom.plot(steps, predicted[steps] - true[steps], lw=0.8, color="C3")
    bottom.set_ylabel("error")
    bottom.set_xlabel("test step after the washout")
    ctx.figure(f"figure_trajectory_{name}", f"{name}: predicted vs true on the test client (one step ahead)", fig)


def _horizon_figure(ctx: Context, rows: list[dict]) -> None:
    fig, ax = plt().subplots(figsize=(6, 3.5))
    for i, name in enumerate(dict.fromkeys(r["series"] for r in rows)):
        mine = [r for r in rows if r["series"] == name]
        h = [r["horizon"] for r in mine]
        ax.plot(h, [r["centralized"] for r in mine], "o-", color=f"C{i}", label=f"{name}: ESN")
        ax.plot(h, [r["persistence"] for r in mine], "x:", color=f"C{i}", label=f"{name}: persistence")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("horizon H (steps)")
    ax.set_ylabel("test NRMSE")
    ax.legend(fontsize=8)
    ctx.figure("figure_horizon", "Test NRMSE by horizon", fig)


def _claims(ctx: Context, rows: list[dict]) -> None:
    exact = max(abs(r["incfed"] / r["centralized"] - 1) for r in rows)
    ctx.claim("IncFed's readout equals centralized ridge on forecasting, for any number of clients", "IncFed §III",
              exact <= 1e-6, f"largest relative NRMSE difference {exact:.1e} (TFF's float64 sum vs numpy's order)")
    for name, bound in THRESHOLDS.items():
        mine = [r for r in rows if r["series"] == name]
        if not mine:
            continue
        worst = max(r["incfed"] for r in mine)
        ctx.claim(f"{name}: test NRMSE ≤ {bound:g} one step ahead", "reservoir-computing benchmarks",
                  worst <= bound, f"IncFed's worst over {len(mine)} client counts: {worst:.4g}")
        behind = [r["clients"] for r in mine if r["incfed"] > r["esnfed federated_ridge"]]
        ctx.claim(f"{name}: IncFed at least as good as esnfed 1.7.1's federated_ridge (same units)",
                  "esnfed 1.7.1", not behind,
                  "every client count" if not behind else f"behind at {behind} client(s)",
                  cause="defect", reason="esnfed's readout also sees the input u(t) and a 10 %-dense reservoir")


register(Experiment(
    name="forecasting", group="forecasting", title="Forecasting: NARMA10 and Mackey–Glass, 1/5/20 clients",
    reproduces="esnfed 1.7.1's benchmarks (concepts page), run here", run=run,
    settings={"tiny": Settings(clients=(1, 3), train_steps=600, held_steps=300, units=30, washout=50,
                               horizons=(1, 4), rounds=5),
              "quick": Settings(),
              "full": Settings()},
    data=(), requires=("esnfed",),
))
