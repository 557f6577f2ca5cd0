"""Thesis Appendix A (Figures A.1–A.16): FedAvg and FedCurv over rounds × clients per round.

Thesis §6.1 and Appendix A: before fixing 78 rounds and 5 clients per round, the thesis ran
FedAvg and FedCurv at each server learning rate over a grid of numbers of rounds (figure
rows) and clients per round (columns), on the validation (odd figures) and test subjects
(even figures), and concluded that these settings "are not so significant". Client sampling
and noise are pure functions of (seed, round), so a run of R rounds is exactly the first R
rounds of a longer run: one run per (algorithm, lr, clients per round) with the largest
number of rounds gives every row of the grid. Same reservoir, noise std 0.5,
``thesis-primal`` split.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from scripts import published as pub
from scripts.common import plt, read_rounds
from scripts.framework import Context, Experiment, register
from scripts.thesis_federated import ALGORITHMS, model_name


@dataclasses.dataclass(frozen=True)
class Settings:
    server_lrs: tuple[float, ...] = pub.SERVER_LRS
    rounds: tuple[int, ...] = (10, 30, 78)
    clients_per_round: tuple[int, ...] = (2, 5, 10)
    noise_std: float = pub.THESIS_FEDERATION["noise_std"]
    units: int = pub.THESIS_TABLE_6_2["units"]

    @property
    def steps(self) -> int:
        return len(ALGORITHMS) * len(self.server_lrs) * len(self.clients_per_round)


def run(ctx: Context, s: Settings) -> None:
    dataset = ctx.dataset("wesad", "thesis")
    split = ctx.split("thesis-primal", dataset)
    curves = {}
    for algorithm, _ in ALGORITHMS:
        for lr in s.server_lrs:
            for clients in s.clients_per_round:
                tag = f"{model_name(algorithm, lr)}/clients-{clients}"
                ctx.run(algorithm, dataset, split, tag, units=s.units, seed=ctx.seed, server_lr=lr,
                        rounds=max(s.rounds), clients_per_round=clients, noise_std=s.noise_std, reservoir="same")
                curves[(algorithm, lr, clients)] = read_rounds(ctx.out / "runs" / tag / "rounds.csv")
                ctx.step(model=model_name(algorithm, lr), clients=clients)
    rows = []
    for (algorithm, lr, clients), log in curves.items():
        for r in s.rounds:
            last = log[r - 1]
            rows.append({"model": model_name(algorithm, lr), "clients per round": clients, "rounds": r,
                         "val F1": last["val_f1_micro"], "test F1": last["test_f1_micro"]})
    ctx.table("grid", "Thesis Appendix A: server-model F1 (micro) after R rounds with m clients per round", rows,
              ours=ctx.on("wesad") + ", thesis pipeline",
              published="real WESAD; Appendix A shows these as plots only (no published numbers)",
              note=f"Same reservoir, noise std {s.noise_std}, {s.units} units; rows of one (model, m) are prefixes "
                   "of a single run.")
    pyplot = plt()
    for a, (algorithm, _) in enumerate(ALGORITHMS):
        for lr in s.server_lrs:
            for g, group in enumerate(("val", "test")):
                number = 2 * (a * len(pub.SERVER_LRS) + pub.SERVER_LRS.index(lr)) + g + 1
                fig, axes = pyplot.subplots(len(s.rounds), len(s.clients_per_round), squeeze=False, sharey=True,
                                            figsize=(3.2 * len(s.clients_per_round), 2.4 * len(s.rounds)))
                for i, r in enumerate(s.rounds):
                    for j, clients in enumerate(s.clients_per_round):
                        log = curves[(algorithm, lr, clients)][:r]
                        ax = axes[i][j]
                        ax.plot([x["round"] for x in log], [x[f"{group}_f1_micro"] for x in log], color="C0")
                        ax.set_title(f"{r} rounds, {clients} clients/round", fontsize=8)
                        ax.tick_params(labelsize=7)
                name = "validation" if group == "val" else "test"
                fig.suptitle(f"Thesis Figure A.{number}: {model_name(algorithm, lr)} preliminary runs, {name} F1 — "
                             f"ours on {ctx.on('wesad')}", fontsize=9)
                ctx.figure(f"figure_A_{number}", f"Figure A.{number}: {model_name(algorithm, lr)}, {name} set", fig)
    claim(ctx, curves, s)


def fluctuation(rows: list[dict[str, float]], column: str = "test_f1_micro") -> float:
    """Range (max − min) of ``column`` over the last half of a run's rounds (at least two): how
    much the final score of one unchanged run moves with the round it is read at."""
    values = [r[column] for r in rows[-max(2, len(rows) // 2):]]
    return float(np.nanmax(values) - np.nanmin(values))


def claim(ctx: Context, curves: dict[tuple[str, float, int], list[dict[str, float]]], s: Settings) -> None:
    """Thesis §6.1: "In the preliminaries results, shown in Appendix A, it is noticeable that the
    number of clients per round, the input noise and the number of rounds are not so
    significant." The thesis judged this by eye from the curves, so a setting is "not so
    significant" when it moves the final test F1 no more than the runs' own round-to-round
    fluctuation (:func:`fluctuation`): the grid spread (max − min over rounds × clients) of
    each model, averaged, against the mean fluctuation of the grid's runs."""
    spreads, wobble = {}, {}
    for algorithm, _ in ALGORITHMS:
        for lr in s.server_lrs:
            finals = [curves[(algorithm, lr, c)][r - 1]["test_f1_micro"] for c in s.clients_per_round for r in s.rounds]
            spreads[model_name(algorithm, lr)] = float(np.nanmax(finals) - np.nanmin(finals))
            wobble[model_name(algorithm, lr)] = float(np.mean([fluctuation(curves[(algorithm, lr, c)])
                                                               for c in s.clients_per_round]))
    mean_spread, mean_wobble = float(np.mean(list(spreads.values()))), float(np.mean(list(wobble.values())))
    ctx.claim("The number of clients per round and the number of rounds are not so significant",
              "thesis §6.1, Appendix A", mean_spread <= mean_wobble,
              f"spread (max − min) of the final test F1 over the rounds × clients grid, mean over models "
              f"{mean_spread:.3f}, vs the runs' own fluctuation (test-F1 range over the last half of the rounds) "
              f"{mean_wobble:.3f} (criterion: spread ≤ fluctuation); per model spread / fluctuation: "
              + ", ".join(f"{k} {spreads[k]:.3f} / {wobble[k]:.3f}" for k in spreads))


register(Experiment(
    name="thesis-preliminary", group="thesis",
    title="Thesis Appendix A: FedAvg/FedCurv over rounds × clients per round (preliminary sweeps)",
    reproduces="thesis Figures A.1–A.16", run=run,
    settings={"tiny": Settings(server_lrs=(1.0,), rounds=(1, 2), clients_per_round=(2,), units=10),
              # quick reads the grid at 10 and 20 rounds: the thesis' grid starts at 10 (full: 10, 30, 78);
              # at 5 rounds every run was still learning (test F1 +0.04–0.09 from round 5 to 10), so a 5/10
              # grid measured the learning curve, not whether the number of rounds matters
              "quick": Settings(server_lrs=(1.0, 0.1), rounds=(10, 20), clients_per_round=(2, 5)),
              "full": Settings()},
    federated=True,
))
