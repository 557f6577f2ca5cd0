"""Predicting with a saved model: load + predict time of 1 000 sequences beside the harvest of the same sequences.

Workload: an IncFed model (300 units, ``mean`` states, numpy backend) trained on 5 clients of 3-feature sequences
of 60 steps, saved to a folder. Timed in the same run, best of 3: ``Model.load(folder)`` followed by
``model.predict`` of 1 000 new sequences (equal length, and ragged 30–60 steps), beside the closed-form
:class:`~tff_esn.closed_form.harvest.Harvester`'s pass over the same sequences (its states, no readout). Target:
load + predict within 1.5× the harvest (each row says ``met`` or ``MISSED``). ``--quick``: 200 sequences, best of 1.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from bench.harvest import best_of
from tff_esn import resolve_run, run_algorithm
from tff_esn.closed_form.harvest import Harvester
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.model import Model

SEQUENCES, STEPS, FEATURES, UNITS = 1000, 60, 3, 300
TARGET = 1.5
"""Load + predict time over the harvest time this benchmark asks for."""


def _sequences(n: int, seed: int, ragged: bool) -> ClientSequences:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    x = (rng.normal(size=(n, STEPS, FEATURES)) + 0.5 * y[:, None, None]).astype(np.float32)
    return ClientSequences(x, y, rng.integers(STEPS // 2, STEPS + 1, n) if ragged else None)


def _dataset(clients: dict[str, ClientSequences]) -> SequenceDataset:
    return SequenceDataset(clients, 3, tuple(f"f{i}" for i in range(FEATURES)), ("a", "b", "c"), "bench")


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    sequences, repeats = (200, 1) if quick else (SEQUENCES, 3)
    train = _dataset({f"c{i}": _sequences(40 if quick else 200, i, False) for i in range(7)})
    split = Split("bench", ("c0", "c1", "c2", "c3", "c4"), ("c5",), ("c6",))
    record = run_algorithm(resolve_run("incfed", train, units=UNITS, backend="numpy", state_mode="mean", l2=1e-3),
                           train, split)
    print(f"{'workload':<24}{'load s':>9}{'predict s':>11}{'harvest s':>11}{'(load+predict)/harvest':>24}"
          f"  target ≤ {TARGET}×")
    with tempfile.TemporaryDirectory() as tmp:
        folder = record.model.save(Path(tmp) / "model")
        for ragged in (False, True):
            new = _sequences(sequences, 99, ragged)
            model = Model.load(folder)
            weights = model.members[0].reservoir
            load = best_of(lambda: Model.load(folder), repeats)
            predict = best_of(lambda: model.predict(new.x, new.lengths), repeats)
            harvest = best_of(lambda: Harvester(_dataset({"new": new}), model.spec).features(weights, "new"),
                              repeats)
            ratio = (load + predict) / harvest
            name = f"{sequences} × {'30–' if ragged else ''}{STEPS} × {FEATURES}"
            print(f"{name:<24}{load:>9.3f}{predict:>11.3f}{harvest:>11.3f}{ratio:>24.2f}  "
                  f"{'met' if ratio <= TARGET else 'MISSED'}", flush=True)
