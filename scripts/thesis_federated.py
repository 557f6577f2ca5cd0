"""Thesis primal phase: Figures 6.3–6.7 and the primal rows of Tables 6.4/6.5.

Thesis §6.1–6.2: FedAvg (Alg. 1) and FedCurv (Alg. 2) of the thesis ESN in TFF, server SGD
with learning rate 1.0, 0.1, 0.01, 0.001; clients with the server's reservoir (Table 6.4)
or each their own (Table 6.5); 10 training clients, 5 sampled per round, input noise std
0.5, 78 rounds; the server model is scored every round on the validation and test
subjects (``thesis-primal`` split, 10/4/1). Each run is the registry's ``fedavg`` /
``fedcurv`` algorithm (readout trained on cached states); the centralized ESN
(``thesis-central``) is the reference line. The same functions draw the discriminative
phase (:mod:`scripts.thesis_discriminative`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from scripts import published as pub
from scripts.common import chance_cause, drawdown, plt, read_rounds, unless_at_chance
from scripts.framework import Context, Experiment, fmt, register

ALGORITHMS = (("fedavg", "FedAvg"), ("fedcurv", "FedCurv"))
RESERVOIRS = ("same", "different")
TABLE = {"same": ("table_6_4", "Table 6.4", pub.THESIS_TABLE_6_4),
         "different": ("table_6_5", "Table 6.5", pub.THESIS_TABLE_6_5)}


@dataclasses.dataclass(frozen=True)
class Settings:
    server_lrs: tuple[float, ...] = pub.SERVER_LRS
    reservoirs: tuple[str, ...] = RESERVOIRS
    rounds: int = pub.THESIS_FEDERATION["rounds"]
    clients_per_round: int = pub.THESIS_FEDERATION["clients_per_round"]
    noise_std: float = pub.THESIS_FEDERATION["noise_std"]
    units: int = pub.THESIS_TABLE_6_2["units"]

    @property
    def steps(self) -> int:
        return 1 + len(self.server_lrs) * len(ALGORITHMS) * len(self.reservoirs)


def model_name(algorithm: str, lr: float, suffix: str = "") -> str:
    """``FedAvg-0.1`` / ``FedCurv-1.0+Disc`` as in Tables 6.4/6.5."""
    return f"{dict(ALGORITHMS)[algorithm]}-{lr!r}{suffix}"


@dataclasses.dataclass
class Phase:
    """One phase's runs: ``runs[(algorithm, lr, reservoir)] = (record, per-round rows)`` and the central record."""

    suffix: str
    central: dict[str, Any]
    runs: dict[tuple[str, float, str], tuple[dict[str, Any], list[dict[str, float]]]]


Runner = Callable[[str, float, str, str], dict[str, Any]]
"""``runner(algorithm, server_lr, reservoir, tag) -> metrics record`` of one federation."""


def run_phase(ctx: Context, s: Settings, split_name: str, runner: Callable[..., Runner], *, suffix: str = "") -> Phase:
    """Runs the central model and every (algorithm, lr, reservoir) federation of one phase.

    ``runner(dataset, split)`` returns the function running one federation (cached under its tag).
    """
    dataset = ctx.dataset("wesad", "thesis")
    split = ctx.split(split_name, dataset)
    central = ctx.run("thesis-central", dataset, split, "central", units=s.units, seed=ctx.seed)
    ctx.step(model="central")
    one = runner(dataset, split)
    runs = {}
    for reservoir in s.reservoirs:
        for lr in s.server_lrs:
            for algorithm, _ in ALGORITHMS:
                tag = f"{reservoir}/{model_name(algorithm, lr, suffix)}"
                record = one(algorithm, lr, reservoir, tag)
                runs[(algorithm, lr, reservoir)] = (record, read_rounds(ctx.out / "runs" / tag / "rounds.csv"))
                ctx.step(model=model_name(algorithm, lr, suffix), reservoir=reservoir)
    return Phase(suffix, central, runs)


def federation_flags(s: Settings, lr: float, reservoir: str, seed: int) -> dict[str, Any]:
    """``tff-esn run fedavg|fedcurv`` flags of one federation (thesis §6.1 settings)."""
    return dict(units=s.units, seed=seed, server_lr=lr, rounds=s.rounds, clients_per_round=s.clients_per_round,
                noise_std=s.noise_std, reservoir=reservoir)


def registry_runner(ctx: Context, s: Settings) -> Callable[..., Runner]:
    """Federations through the ``tff-esn run`` registry (the primal phase)."""
    def runner(dataset, split) -> Runner:
        return lambda algorithm, lr, reservoir, tag: ctx.run(algorithm, dataset, split, tag,
                                                             **federation_flags(s, lr, reservoir, ctx.seed))
    return runner


def central_f1(phase: Phase) -> tuple[float, float]:
    """(design-set F1, test F1) of the central model: Tables 6.4/6.5's Central row."""
    return phase.central["extra"]["design"]["f1_micro"], phase.central["test"]["f1_micro"]


def tables(ctx: Context, phase: Phase, s: Settings) -> None:
    """The phase's rows of Tables 6.4 (same reservoir) and 6.5 (different)."""
    for reservoir in s.reservoirs:
        name, label, published = TABLE[reservoir]
        ds, ts = central_f1(phase)
        rows = [{"model": "Central (binary class.)", "train F1 (ours)": ds, "val F1 (ours)": None, "test F1 (ours)": ts,
                 "train F1 (published)": pub.THESIS_CENTRAL_F1[0], "test F1 (published)": pub.THESIS_CENTRAL_F1[1]}]
        for lr in s.server_lrs:
            for algorithm, _ in ALGORITHMS:
                record, _ = phase.runs[(algorithm, lr, reservoir)]
                key = model_name(algorithm, lr, phase.suffix)
                rows.append({"model": key, "train F1 (ours)": record["train"]["f1_micro"],
                             "val F1 (ours)": record["val"]["f1_micro"] if record.get("val") else None,
                             "test F1 (ours)": record["test"]["f1_micro"],
                             "train F1 (published)": published[key][0], "test F1 (published)": published[key][1]})
        which = "primal" if not phase.suffix else "discriminative"
        ctx.table(f"{name}{'_disc' if phase.suffix else ''}",
                  f"Thesis {label} ({which} rows): clients' reservoirs {'equal to' if reservoir == 'same' else 'different from'} "
                  f"the server's; F1 (micro) of the server model after the last round", rows,
                  ours=ctx.on("wesad") + ", thesis pipeline", published=f"real WESAD, thesis {label}",
                  note=f"{s.rounds} rounds, {s.clients_per_round} clients per round, noise std {s.noise_std}, "
                       f"{s.units} units; rounds run by the {_backends(phase)} backend. "
                       f"Central: design set (train + validation subjects) and test F1. "
                       f"SOTA row (published only): train acc. {pub.THESIS_SOTA['train_accuracy']}, test acc. "
                       f"{pub.THESIS_SOTA['test_accuracy']} (multi-label).")


def _backends(phase: Phase) -> str:
    """The backend(s) that ran the phase's federations, from their records (kept records of runs without
    the field ran in TFF)."""
    return "/".join(sorted({record["extra"].get("backend", "tff") for record, _ in phase.runs.values()}))


def _curves(ax, rows: list[dict[str, float]], column: str, **style: Any) -> None:
    ax.plot([r["round"] for r in rows], [r[column] for r in rows], **style)


def _phase_figure(ctx: Context, phase: Phase, s: Settings, number: str, lr_of: Callable[[str, str], float],
                  suptitle: str, title: str) -> None:
    """Rows val/test, columns same/different reservoir; FedAvg and FedCurv at ``lr_of(algorithm, reservoir)``."""
    pyplot = plt()
    fig, axes = pyplot.subplots(2, len(s.reservoirs), figsize=(5 * len(s.reservoirs), 6), squeeze=False,
                                sharex=True, sharey=True)
    _, ts = central_f1(phase)
    for col, reservoir in enumerate(s.reservoirs):
        for row, group in enumerate(("val", "test")):
            ax = axes[row][col]
            for (algorithm, _), color in zip(ALGORITHMS, ("C0", "C3")):
                lr = lr_of(algorithm, reservoir)
                _curves(ax, phase.runs[(algorithm, lr, reservoir)][1], f"{group}_f1_micro", color=color,
                        label=model_name(algorithm, lr, phase.suffix))
            if group == "test":
                ax.axhline(ts, color="k", ls="--", lw=0.8, label="Central (test)")
            ax.set(title=f"{reservoir} reservoir — {group}", xlabel="round" if row else "", ylabel="F1 (micro)")
            ax.legend(fontsize=7)
    fig.suptitle(f"Thesis Figure {number}: {suptitle} — ours on {ctx.on('wesad')}", fontsize=9)
    fig.tight_layout()
    ctx.figure(f"figure_{number.replace('.', '_')}", f"Figure {number}: {title}", fig)


def lr_figure(ctx: Context, phase: Phase, s: Settings, lr: float, number: str) -> None:
    """One of Figures 6.3–6.6 / 6.8–6.11: rows val/test, columns same/different reservoir."""
    which = "discriminative" if phase.suffix else "primal"
    _phase_figure(ctx, phase, s, number, lambda algorithm, reservoir: lr,
                  f"{which} phase, server lr {lr!r}", f"{which} phase, server learning rate {lr!r}")


def best_runs(phase: Phase, s: Settings) -> dict[tuple[str, str], float]:
    """For each (algorithm, reservoir), the server lr whose final validation F1 is best."""
    best = {}
    for reservoir in s.reservoirs:
        for algorithm, _ in ALGORITHMS:
            best[(algorithm, reservoir)] = max(
                s.server_lrs, key=lambda lr: _final(phase.runs[(algorithm, lr, reservoir)][1], "val_f1_micro"))
    return best


def _final(rows: list[dict[str, float]], column: str) -> float:
    value = rows[-1][column] if rows else np.nan
    return -np.inf if not np.isfinite(value) else value


def best_figure(ctx: Context, phase: Phase, s: Settings, number: str) -> None:
    """Figure 6.7 / 6.12: the best FedAvg and FedCurv (by final validation F1) per reservoir mode."""
    which = "discriminative" if phase.suffix else "primal"
    best = best_runs(phase, s)
    _phase_figure(ctx, phase, s, number, lambda algorithm, reservoir: best[(algorithm, reservoir)],
                  f"best {which}-phase models", f"best models of the {which} phase")


def reservoir_aucs(phase: Phase, reservoir: str = "different") -> dict[str, float | None]:
    """Final test AUC of each of the phase's runs with ``reservoir`` (``model name → AUC``)."""
    return {model_name(a, lr, phase.suffix): rec["test"]["auc"]
            for (a, lr, res), (rec, _) in phase.runs.items() if res == reservoir}


def drawdowns(phase: Phase, s: Settings, column: str = "test_f1_micro") -> dict[tuple[str, float, str], float]:
    return {key: drawdown(r[column] for r in rows) for key, (_, rows) in phase.runs.items()}


def run(ctx: Context, s: Settings) -> None:
    phase = run_phase(ctx, s, "thesis-primal", registry_runner(ctx, s))
    tables(ctx, phase, s)
    for lr in s.server_lrs:
        lr_figure(ctx, phase, s, lr, f"6.{3 + pub.SERVER_LRS.index(lr)}")
    best_figure(ctx, phase, s, "6.7")
    claims(ctx, phase, s)


def claims(ctx: Context, phase: Phase, s: Settings) -> None:
    dd = drawdowns(phase, s)
    small = [lr for lr in s.server_lrs if lr < 1]
    at_chance = chance_cause(reservoir_aucs(phase))[0] is not None  # their curves are an arbitrary readout's
    reservoirs = [res for res in s.reservoirs if not (at_chance and res == "different")]
    cases = {(lr, res): dd[("fedcurv", lr, res)] <= dd[("fedavg", lr, res)] for lr in small for res in reservoirs}
    ctx.claim("FedCurv's curves are more monotone than FedAvg's for server learning rates < 1 "
              "(FedAvg forgets catastrophically)", "thesis §6.2, Figures 6.4–6.6",
              None if not cases else sum(cases.values()) > len(cases) / 2,
              f"test-F1 drawdown (sum of per-round decreases) FedCurv ≤ FedAvg in {sum(cases.values())} of "
              f"{len(cases)} (lr < 1, reservoir) cases (criterion: a majority); "
              + "; ".join(f"lr {lr!r} {res}: FedCurv {dd[('fedcurv', lr, res)]:.3f} vs FedAvg "
                          f"{dd[('fedavg', lr, res)]:.3f}" for lr, res in cases)
              + ("; the runs with different reservoirs are all at chance and left out" if at_chance
                 and "different" in s.reservoirs else ""))
    if 1.0 in s.server_lrs:
        gaps = {res: abs(phase.runs[("fedavg", 1.0, res)][0]["test"]["f1_micro"]
                         - phase.runs[("fedcurv", 1.0, res)][0]["test"]["f1_micro"]) for res in s.reservoirs}
        cause, reason = chance_cause(reservoir_aucs(phase)) if gaps.get("same", 0.0) <= 0.05 else (None, "")
        ctx.claim("With server learning rate 1.0 FedAvg and FedCurv behave similarly", "thesis §6.2, Figure 6.3",
                  all(g <= 0.05 for g in gaps.values()),
                  "|final test F1 FedAvg − FedCurv|: " + ", ".join(f"{k} {v:.4f}" for k, v in gaps.items())
                  + " (criterion ≤ 0.05)", cause=cause,
                  reason=f"the gap holds with the server's reservoir; {reason}" if cause else "")
    if phase.suffix == "" and "same" in s.reservoirs:
        _, ts = central_f1(phase)
        best = max(rec["test"]["f1_micro"] for (a, lr, res), (rec, _) in phase.runs.items() if res == "same")
        ctx.claim("In the primal phase no FL algorithm overcomes the centralized model (same reservoir)",
                  "thesis §6.2, Table 6.4", best <= ts,
                  f"best final FL test F1 {best:.4f} vs centralized {ts:.4f}")
    if set(RESERVOIRS) <= set(s.reservoirs):
        mean = {res: float(np.mean([v for (a, lr, r), v in dd.items() if r == res])) for res in RESERVOIRS}
        holds, cause, reason = unless_at_chance(mean["different"] > mean["same"], reservoir_aucs(phase))
        ctx.claim("With different reservoirs the federation is less stable than with the server's reservoir",
                  "thesis §6.2, Figure 6.7", holds,
                  f"mean test-F1 drawdown: same {mean['same']:.3f}, different {mean['different']:.3f}",
                  cause=cause, reason=reason)
        auc = {res: max((rec["test"]["auc"] for (a, lr, r), (rec, _) in phase.runs.items()
                         if r == res and rec["test"]["auc"] is not None), default=None) for res in RESERVOIRS}
        known = None not in auc.values()
        cause, reason = chance_cause(reservoir_aucs(phase))
        ctx.claim("Clients with their own reservoirs federate a readout as good as with the server's reservoir "
                  "(Table 6.5 ≈ Table 6.4)", "thesis §6.2, Tables 6.4–6.5",
                  auc["different"] >= auc["same"] - 0.05 if known else None,
                  f"best final test AUC: same reservoir {fmt(auc['same'])}, different {fmt(auc['different'])} "
                  "(criterion: within 0.05)", cause=cause,
                  reason=f"{reason}; the thesis' own Tables 6.4–6.5 give test F1 0.8693 to many different algorithms "
                  "and learning rates, which looks like a constant answer on its test subject rather than learning"
                  if cause else "")


register(Experiment(
    name="thesis-federated", group="thesis",
    title="Thesis primal phase: FedAvg and FedCurv × 4 server learning rates × same/different reservoirs",
    reproduces="thesis Figures 6.3–6.7, Tables 6.4/6.5 (primal rows)", run=run,
    settings={"tiny": Settings(server_lrs=(1.0,), rounds=2, clients_per_round=2, units=10),
              "quick": Settings(server_lrs=(1.0, 0.1), rounds=10),
              "full": Settings()},
    federated=True,
))
