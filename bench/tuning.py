"""Seconds per search trial: the thesis hypermodel (whole model or cached states) vs the closed-form ridge tuner.

Same data for all (thesis-like: 14 subjects × 6000 steps × 4 features cut into sequences of
250 steps, per-step binary labels, 10 training / 4 validation subjects). The thesis trials are
a random sample of Table 6.1's space (1 Adam epoch each), searched once with the whole model
trained per trial (reservoir in the graph) and once on cached states (readout-only model
reused per shape, states harvested once per reservoir point); seconds per trial are the
search's wall time over its trials, harvests and tracing included. The closed-form trial
(reservoir of thesis Table 6.2: 200 units, ρ 0.99, leaky 1.0) harvests the training clients'
ridge statistics and solves the readout (first trial), or reuses the harvest when only λ
changes (later trials). Ratios are against the whole-model thesis trial measured in the same run.
"""

from __future__ import annotations

import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras_tuner as kt  # noqa: E402
import numpy as np  # noqa: E402

from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split  # noqa: E402
from tuning.oracle import ExhaustiveRandomSearchOracle  # noqa: E402
from tuning.search import ClosedFormSearchTuner, ThesisTuner  # noqa: E402
from tuning.spaces import get_space, space_size  # noqa: E402
from tuning.thesis import ThesisHyperModel  # noqa: E402

NAMES = ("pEDA", "tEDA", "HR", "HRV")


def thesis_like(subjects: int, steps: int, length: int, seed: int = 0) -> SequenceDataset:
    rng = np.random.default_rng(seed)
    clients = {}
    for s in range(subjects):
        y = (rng.random((steps // length, length)) < 0.115).astype(np.int64)
        x = rng.normal(size=y.shape + (4,)) + y[..., None]
        clients[f"S{s}"] = ClientSequences(x.astype(np.float32), y)
    return SequenceDataset(clients, 2, NAMES, ("no stress", "stress"), "bench")


def _oracle(hp: kt.HyperParameters, objective: str, trials: int | None = None) -> ExhaustiveRandomSearchOracle:
    return ExhaustiveRandomSearchOracle(objective=kt.Objective(objective, "max"), max_trials=trials, seed=0,
                                        hyperparameters=hp, tune_new_entries=False, allow_new_entries=False)


def _reservoir(hp: kt.HyperParameters) -> None:
    hp.Fixed("units", 200)
    hp.Fixed("spectral_radius", 0.99)
    hp.Fixed("leaky", 1.0)


def thesis_seconds(dataset: SequenceDataset, split: Split, trials: int, cached: bool) -> tuple[float, int]:
    """``(seconds per trial, harvests)`` of a ``trials``-trial thesis search (oracle seed 0)."""
    train, val = dataset.pooled(split.train), dataset.pooled(split.val)
    model = ThesisHyperModel(lambda w: (train, val, NAMES), cached_states=cached)
    with tempfile.TemporaryDirectory() as tmp:
        tuner = ThesisTuner(oracle=_oracle(get_space("thesis").build(), "val_f1", trials), hypermodel=model,
                            directory=tmp, project_name="t")
        tuner.progress = False
        start = time.perf_counter()
        tuner.search(verbose=0)
        return (time.perf_counter() - start) / trials, model.harvests


def closed_form_seconds(dataset: SequenceDataset, split: Split, repeats: int) -> tuple[float, float]:
    first, reused = [], []
    for _ in range(repeats + 1):
        hp = kt.HyperParameters()
        _reservoir(hp)
        hp.Choice("l2", [1e-4, 1e-2, 1.0])
        with tempfile.TemporaryDirectory() as tmp:
            tuner = ClosedFormSearchTuner(_oracle(hp, "val_accuracy"), dataset, split, directory=tmp, project_name="c")
            tuner.progress = False
            tuner.search(verbose=0)
            seconds = [tuner.oracle.trials[t].metrics.get_last_value("seconds") for t in sorted(tuner.oracle.trials)]
            assert tuner.harvests == 1
            first.append(seconds[0])
            reused.extend(seconds[1:])
    return min(first[1:]), float(np.median(reused))


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    subjects, steps, repeats, trials = (14, 1500, 1, 12) if quick else (14, 6000, 2, 30)
    dataset = thesis_like(subjects, steps, 250)
    split = Split("bench", tuple(f"S{s}" for s in range(10)), tuple(f"S{s}" for s in range(10, 14)))
    print(f"thesis-like data: {subjects} subjects × {steps} steps × 4 features (sequences of 250), "
          f"train 10 / val 4; thesis trials: {trials} of Table 6.1; closed form: reservoir 200 units")
    whole, _ = thesis_seconds(dataset, split, trials, cached=False)
    cached, harvests = thesis_seconds(dataset, split, trials, cached=True)
    harvest, reuse = closed_form_seconds(dataset, split, repeats)
    size = int(space_size(get_space("thesis").build()))
    print(f"{'trial':52s} {'seconds':>8s} {'vs whole':>9s}")
    for name, sec in (("thesis hypermodel, whole model (1 epoch Adam)", whole),
                      (f"thesis hypermodel, cached states ({harvests} harvests)", cached),
                      ("closed-form ridge, harvest + solve", harvest),
                      ("closed-form ridge, reused harvest (λ only)", reuse)):
        print(f"{name:52s} {sec:8.3f} {whole / sec:8.1f}×")
    print(f"thesis space exhausted ({size} trials) at these rates: whole model {whole * size / 60:.1f} min, "
          f"cached states ≤ {cached * size / 60:.1f} min "
          "(a longer search reuses more harvests)")
