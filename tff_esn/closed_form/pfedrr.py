"""pFedRR: partial federated ridge regression with importance (I-) or random (R-) units (pFedRR §2–3).

``B̃_c = B_c ⊙ (M_S + I)`` (eq. 2), ``W = (Σ A_c)(Σ B̃_c + λI)⁻¹``; I-pFedRR selects ``I_i ≥ 1 − τ`` with
``I_i = Σ_j B_ij²`` min-max scaled (eqs. 4–5), R-pFedRR as many units at random; τ = 1 is FedRR. FedRR, I-
and R- are solved from the same statistics. ``reading``: ``A_c D_c`` (``"consistent"``) or ``A_c`` whole.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import numpy as np

from tff_esn.common import streams
from tff_esn.closed_form.configs import PFedRRConfig, incfed_cost, pfedrr_cost
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.private_sum import dense_if_secure, plain_sections, private_sum
from tff_esn.closed_form.run import GROUPS, Run
from tff_esn.closed_form.streaming import Checkpoint, ClientSource, DatasetClients, drive, stream_identity
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.ridge import RidgeStats

Reading = Literal["consistent", "literal"]


def squared_row_importance(b: np.ndarray) -> np.ndarray:
    """pFedRR's importance ``I_i = Σ_j B_ij²`` (eq. 5), min-max scaled to [0, 1] (all ones when constant)."""
    values = np.square(np.asarray(b, dtype=np.float64)).sum(axis=1)
    span = values.max() - values.min()
    return np.ones_like(values) if span <= 0 else (values - values.min()) / span


def n_units(stats: RidgeStats) -> int:
    """Reservoir units among the readout features (all but the bias input)."""
    return stats.n_features - int(stats.bias)


def with_bias_index(units: np.ndarray, stats: RidgeStats) -> np.ndarray:
    """``units`` plus the bias feature's index when the readout has one (always kept)."""
    units = np.asarray(units, dtype=np.int64)
    return np.append(units, stats.n_features - 1) if stats.bias else units


def select_important(stats: RidgeStats, tau: float) -> np.ndarray:
    """Sorted unit indices ``{i : I_i ≥ 1 − τ}`` of the scaled importance over the units (pFedRR §2)."""
    units = n_units(stats)
    return np.flatnonzero(squared_row_importance(stats.B[:units, :units]) >= 1.0 - tau)


def sparsify(stats: RidgeStats, features: np.ndarray, reading: Reading = "consistent") -> RidgeStats:
    """``(A_c D, B_c ⊙ (M_S + I))`` (consistent) or ``(A_c, B_c ⊙ (M_S + I))`` (literal, pFedRR eq. 2)."""
    keep = np.zeros(stats.n_features, dtype=bool)
    keep[np.asarray(features, dtype=np.int64)] = True
    mask = np.outer(keep, keep) | np.eye(stats.n_features, dtype=bool)
    a = stats.A * keep if reading == "consistent" else stats.A
    return RidgeStats(a, np.where(mask, stats.B, 0.0), stats.n, stats.clients, stats.bias)


def random_units(n_units: int, size: int, seed: int, client: int) -> np.ndarray:
    """R-pFedRR: ``size`` of ``n_units`` units uniformly at random, sorted, from ``streams.PFEDRR_UNITS``."""
    rng = streams.PFEDRR_UNITS.generator(seed, client)
    return np.sort(rng.choice(n_units, size=size, replace=False))


@dataclasses.dataclass(frozen=True, eq=False)
class ClientParts:
    """One client's I- and R-pFedRR statistics (``random`` ``None`` unless asked for) and its selected units."""

    important: RidgeStats
    random: RidgeStats | None
    important_units: np.ndarray
    random_units: np.ndarray


def client_parts(stats: RidgeStats, tau: float, seed: int, client: int,
                 reading: Reading = "consistent", *, random: bool = True) -> ClientParts:
    """The I- and R-pFedRR statistics client number ``client`` sends (pFedRR eqs. 2, 5)."""
    important = select_important(stats, tau)
    units = random_units(n_units(stats), important.size, seed, client)
    return ClientParts(sparsify(stats, with_bias_index(important, stats), reading),
                       sparsify(stats, with_bias_index(units, stats), reading) if random else None,
                       important, units)


@dataclasses.dataclass(frozen=True, eq=False)
class SelectedReadouts:
    """The I-pFedRR readout, the R-pFedRR readout (``None`` when not asked for) and each client's units."""

    important: np.ndarray
    random: np.ndarray | None
    important_units: tuple[np.ndarray, ...]
    random_units: tuple[np.ndarray, ...]
    n_units: int

    @property
    def percent_units(self) -> float:
        """Mean share of selected reservoir units over clients, in % (pFedRR Table 1)."""
        return float(np.mean([u.size for u in self.important_units]) / self.n_units * 100)


@dataclasses.dataclass(frozen=True, eq=False)
class PFedRRResult(SelectedReadouts):
    """The exact (FedRR), I-pFedRR and R-pFedRR readouts and each client's selected units."""

    exact: np.ndarray


def fit_selected(stats: Sequence[RidgeStats], tau: float, l2: float, *, seed: int = 0, per_client: bool = False,
                 reading: Reading = "consistent", random: bool = True,
                 aggregate: Callable[[Iterable[RidgeStats]], RidgeStats] = RidgeStats.sum) -> SelectedReadouts:
    """I-pFedRR's readout and, with ``random``, R-pFedRR's (client i draws with seed ``(seed, i)``)."""
    parts = [client_parts(s, tau, seed, i, reading, random=random) for i, s in enumerate(stats)]

    def solve(items):
        return aggregate(items).solve(l2, per_client=per_client)

    return SelectedReadouts(
        important=solve(p.important for p in parts),
        random=solve(p.random for p in parts) if random else None,
        important_units=tuple(p.important_units for p in parts),
        random_units=tuple(p.random_units for p in parts),
        n_units=n_units(stats[0]),
    )


def fit_pfedrr(stats: Sequence[RidgeStats], tau: float, l2: float, *, seed: int = 0,
               per_client: bool = False, reading: Reading = "consistent",
               aggregate: Callable[[Iterable[RidgeStats]], RidgeStats] = RidgeStats.sum) -> PFedRRResult:
    """FedRR, I-pFedRR and R-pFedRR readouts from one set of client statistics (pFedRR eqs. 2–5)."""
    exact = aggregate(stats).solve(l2, per_client=per_client)
    selected = fit_selected(stats, tau, l2, seed=seed, per_client=per_client, reading=reading, aggregate=aggregate)
    return PFedRRResult(**{f.name: getattr(selected, f.name) for f in dataclasses.fields(selected)}, exact=exact)


# --------------------------------------------------------------------------- streaming subrounds
@dataclasses.dataclass(frozen=True, eq=False)
class StreamedPFedRR:
    """pFedRR over a stream: FedRR, I-pFedRR and R-pFedRR readouts and the mean % of units."""

    exact: np.ndarray
    important: np.ndarray
    random: np.ndarray
    percent_units: float
    subrounds: int
    selected: dict[int, int] = dataclasses.field(default_factory=dict)  # units kept by I-pFedRR → clients


def stream_pfedrr(weights: ReservoirWeights, source: ClientSource | SequenceDataset, spec: StateSpec, tau: float,
                  l2: float, *, seed: int = 0, subround_size: int = 500, per_client: bool = False,
                  batch_size: int = 256, checkpoint: str | os.PathLike | None = None,
                  progress: bool = False, reading: Reading = "consistent") -> StreamedPFedRR:
    """FedRR, I-pFedRR and R-pFedRR (pFedRR eqs. 2–5) over ``source`` in subrounds (:func:`fit_pfedrr`'s)."""
    source = DatasetClients(source) if isinstance(source, SequenceDataset) else source

    def subround(clients: SequenceDataset, first: int):
        harvester = Harvester(clients, spec, batch_size=batch_size)
        exact, important, random = [], [], []
        counters: dict[str, float] = {"units": 0}
        for i, cid in enumerate(clients.client_ids):
            stats = harvester.stats(weights, cid)
            parts = client_parts(stats, tau, seed, first + i, reading)
            exact.append(stats)
            important.append(parts.important)
            random.append(parts.random)
            size = int(parts.important_units.size)
            counters["units"] += size
            counters[f"size{size}"] = counters.get(f"size{size}", 0) + 1
        return [RidgeStats.sum(exact), RidgeStats.sum(important), RidgeStats.sum(random)], counters

    identity = stream_identity("pfedrr", source, subround_size, weights, spec, tau=float(tau), seed=seed,
                               reading=reading)
    parts, counters, done = drive(source, subround_size, subround, Checkpoint(checkpoint, identity), progress,
                                  "pfedrr subrounds")
    exact, important, random = (p.solve(l2, per_client=per_client) for p in parts)
    percent = counters["units"] / (parts[0].clients * n_units(parts[0])) * 100
    selected = {int(k[len("size"):]): int(v) for k, v in counters.items() if k.startswith("size")}
    return StreamedPFedRR(exact, important, random, float(percent), done, selected)


# --------------------------------------------------------------------------- the registry's run function
def run_pfedrr(dataset: SequenceDataset, split: Split, config: PFedRRConfig) -> dict:
    """I-pFedRR (reported), with FedRR and R-pFedRR on the same statistics in ``extra``."""
    run = Run(dataset, split, config, "pfedrr")
    l2 = run.choose_l2(lambda grid: [run.scorer(fit_pfedrr(run.stats(), config.tau, l2, seed=config.seed,
                                                           reading=config.reading).important) for l2 in grid])
    if config.subround_size is not None:  # PFedRRConfig refuses it with privacy settings
        result = stream_pfedrr(run.weights, run.training_clients(), run.spec, config.tau, l2, seed=config.seed,
                               subround_size=config.subround_size, reading=config.reading)
        sizes = [size for size, count in sorted(result.selected.items()) for _ in range(count)]
        sections = functools.partial(plain_sections, run)
    else:
        stats, aggregate, sections = private_sum(run, run.stats)
        result = fit_pfedrr(stats, config.tau, l2, seed=config.seed, reading=config.reading, aggregate=aggregate)
        sizes = [u.size for u in result.important_units]
    comparison = {}
    for name, readout in (("fedrr", result.exact), ("r-pfedrr", result.random)):
        comparison[name] = {g: s for g, s in run.report(run.model(readout), incfed_cost(
            run.n_features, run.n_outputs)).items() if g in GROUPS}
    kept = run.n_features - run.reservoir.readout_units  # the readout's bias input, kept in every selection
    cost = dense_if_secure(run, pfedrr_cost([size + kept for size in sizes], run.n_features,
                                                     run.n_outputs))
    return {**run.report(run.model(result.important), cost, tau=config.tau, reading=config.reading,
                         percent_units=result.percent_units, **comparison),
            **sections()}
