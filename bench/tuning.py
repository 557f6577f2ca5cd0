"""Seconds per search trial: the thesis hypermodel (1 Adam epoch) vs the closed-form ridge tuner.

Same data for both (thesis-like: 14 subjects × 6000 steps × 4 features cut into sequences of
250 steps, per-step binary labels, 10 training / 4 validation subjects) and the same
reservoir (thesis Table 6.2: 200 units, ρ 0.99, leaky 1.0). The thesis trial builds the model
and trains one epoch with batch 20; the closed-form trial harvests the training clients'
ridge statistics and solves the readout (first trial), or reuses the harvest when only λ
changes (later trials). Ratios are against the thesis trial measured in the same run.
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras_tuner as kt  # noqa: E402
import numpy as np  # noqa: E402

from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split  # noqa: E402
from tuning.oracle import ExhaustiveRandomSearchOracle  # noqa: E402
from tuning.search import ClosedFormSearchTuner, ThesisTuner  # noqa: E402
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


def _oracle(hp: kt.HyperParameters, objective: str) -> ExhaustiveRandomSearchOracle:
    return ExhaustiveRandomSearchOracle(objective=kt.Objective(objective, "max"), max_trials=None, seed=0,
                                        hyperparameters=hp, tune_new_entries=False, allow_new_entries=False)


def _reservoir(hp: kt.HyperParameters) -> None:
    hp.Fixed("units", 200)
    hp.Fixed("spectral_radius", 0.99)
    hp.Fixed("leaky", 1.0)


def thesis_seconds(dataset: SequenceDataset, split: Split, repeats: int) -> float:
    train, val = dataset.pooled(split.train), dataset.pooled(split.val)
    times = []
    for _ in range(repeats + 1):  # first: warm-up (tracing)
        hp = kt.HyperParameters()
        _reservoir(hp)
        for name, value in (("learning_rate", 0.1), ("window", 1600), ("batch_size", 20),
                            ("features", ",".join(NAMES)), ("epochs", 1)):
            hp.Fixed(name, value)
        with tempfile.TemporaryDirectory() as tmp:
            tuner = ThesisTuner(oracle=_oracle(hp, "val_f1"), hypermodel=ThesisHyperModel(lambda w: (train, val, NAMES)),
                                directory=tmp, project_name="t")
            tuner.progress = False
            tuner.search(verbose=0)
            times.append(next(iter(tuner.oracle.trials.values())).metrics.get_last_value("seconds"))
    return min(times[1:])


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
    subjects, steps, repeats = (14, 1500, 1) if quick else (14, 6000, 2)
    dataset = thesis_like(subjects, steps, 250)
    split = Split("bench", tuple(f"S{s}" for s in range(10)), tuple(f"S{s}" for s in range(10, 14)))
    print(f"thesis-like data: {subjects} subjects × {steps} steps × 4 features (sequences of 250), "
          f"train 10 / val 4; reservoir 200 units")
    thesis = thesis_seconds(dataset, split, repeats)
    harvest, reuse = closed_form_seconds(dataset, split, repeats)
    print(f"{'trial':46s} {'seconds':>8s} {'vs thesis':>10s}")
    for name, sec in (("thesis hypermodel (1 epoch Adam, batch 20)", thesis),
                      ("closed-form ridge, harvest + solve", harvest),
                      ("closed-form ridge, reused harvest (λ only)", reuse)):
        print(f"{name:46s} {sec:8.3f} {thesis / sec:9.1f}×")
