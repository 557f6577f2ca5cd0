"""The run functions of ``fedavg``, ``fedcurv`` and ``thesis-central`` (registered in :mod:`tff_esn.federated.configs`);
without validation clients a seeded hold-out of the training clients validates."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tff_esn import runtime
from tff_esn.closed_form.selection import AUTO
from tff_esn.data.cache import cache_root
from tff_esn.data.carving import carve
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.federated.configs import FedAvgConfig, ThesisCentralConfig, ThesisRunConfig


def validation_data(dataset: SequenceDataset, split: Split, seed: int,
                    selects: bool) -> tuple[SequenceDataset, Split, dict[str, Any] | None]:
    """``(dataset, split, record)`` of a run that ``selects`` on validation data: its own or a seeded hold-out."""
    if not selects:
        return dataset, split, None
    carving = carve(dataset, split, seed=seed)
    return (*carving.holdout(), carving.to_dict())


def choose_states(dataset: SequenceDataset, split: Split, config: ThesisRunConfig
                  ) -> tuple[ThesisRunConfig, dict[str, Any] | None]:
    """``config`` with ``state_mode="auto"`` and ``reservoir_search`` chosen in closed form, and the record."""
    from tff_esn.closed_form.configs import ReadoutConfig
    from tff_esn.closed_form.run import Run

    model = config.model
    if model.state_mode != AUTO and not model.reservoir_search:
        return config, None
    per_step = any(c.per_step for c in dataset.select(split.train).values())
    readout = ReadoutConfig(reservoir=model.reservoir, l2=AUTO, state_mode="all" if per_step else model.state_mode,
                            objective="balanced_accuracy", reservoir_search=model.reservoir_search,
                            washout=model.washout, privacy=config.privacy)
    run = Run(dataset, split, readout, "state selection", modes=("mean", "last"))
    model = model.replace(state_mode=run.spec.state_mode, reservoir=run.reservoir, reservoir_search=())
    return dataclasses.replace(config, model=model), run.selection


def run_federation(dataset: SequenceDataset, split: Split, config: FedAvgConfig) -> dict[str, Any]:
    """FedAvg of the thesis readout with a server learning rate (thesis Alg. 1), or FedCurv's (thesis ch. 3, Alg. 2)."""
    from tff_esn.federated.training import run_federated
    from tff_esn.runs.identity import check_resume, run_identity

    identity = None if config.out is None else run_identity(config, dataset, split)  # the run as asked
    if config.resume:  # another run's folder is refused before the state selection and the harvest
        check_resume(config.out, config, dataset, split)
    config, states = choose_states(dataset, split, config)
    if config.cache_dir is None and runtime.on_this_host(runtime.current_workers()):
        config = dataclasses.replace(config, cache_dir=str(cache_root()))
    selects = (config.model.learning_rate == AUTO or getattr(config, "penalty", None) == AUTO or config.keep_best
               or config.patience > 0)
    if config.privacy.dp_requested and not split.val:
        selects = False  # a hold-out carved from the training clients would be scored outside the DP mechanism
    dataset, split, validation = validation_data(dataset, split, config.seed, selects)
    result = run_federated(dataset, split, config, identity=identity)
    if config.out is not None:  # without a run folder the rounds stay in memory (``extra.rounds``)
        result["extra"].setdefault("rounds_csv", str(Path(config.out) / "rounds.csv"))
    if validation is not None:
        result["validation"] = validation
    if states is not None:
        result["selection"] = states
    return result


def run_central(dataset: SequenceDataset, split: Split, config: ThesisCentralConfig) -> dict[str, Any]:
    """The centralized thesis ESN on the design set (thesis Table 6.3)."""
    from tff_esn.federated.centralized import train_centralized

    config, states = choose_states(dataset, split, config)
    selects = config.model.learning_rate == AUTO or config.patience > 0
    dataset, split, validation = validation_data(dataset, split, config.seed, selects)
    _, report = train_centralized(dataset, split, config.model, seed=config.seed, patience=config.patience,
                                   refit=config.refit, l2=config.l2, progress=config.progress)
    if validation is not None:
        report["validation"] = validation
    report["extra"] = {key: report.pop(key) for key in ("design", "class_weight", "epochs", "selection",
                                                        "standardization", "refit", "l2",
                                                        "closed_form_reference")}
    if states is not None:
        report["selection"] = states
    return report
