"""The run functions of ``fedavg``, ``fedcurv`` and ``thesis-central`` (registered in
:mod:`tff_esn.federated.configs`).

The configs default to the thesis' setting: Table 6.2's model (200 units, ρ 0.99, α 1.0,
Adam η 0.1, batch 20, one local epoch, class weights 12/88) on the ``thesis`` pipeline, and
§6.1's federation (78 rounds, 5 clients per round, input noise std 0.5, server SGD lr 1.0).
Besides ``metrics.json`` (written by ``tff-esn run``), a federated run writes
``rounds.csv``, ``tensorboard/`` and ``checkpoints/`` into ``config.out``; ``resume``
continues an interrupted run from its last completed round. Harvested client states are
kept under ``CACHE/federated-states`` (``cache_dir``, else ``$TFF_ESN_CACHE``, else
``~/.cache/tff_esn``), keyed by inputs, reservoir and noise, so runs that share them (every
server learning rate, both algorithms) harvest once. TFF is imported by the federated runs
only: ``thesis-central`` trains its Keras model without it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tff_esn import runtime
from tff_esn.data.cache import cache_root
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.federated.configs import FedAvgConfig, ThesisCentralConfig


def _run(dataset: SequenceDataset, split: Split, config: FedAvgConfig) -> dict[str, Any]:
    from tff_esn.federated.training import run_federated

    if config.cache_dir is None and runtime.on_this_host(runtime.current_workers()):
        config = dataclasses.replace(config, cache_dir=str(cache_root()))
    result = run_federated(dataset, split, config)
    result["extra"]["rounds_csv"] = str(Path(config.out) / "rounds.csv")
    return result


def run_fedavg(dataset: SequenceDataset, split: Split, config: FedAvgConfig) -> dict[str, Any]:
    """FedAvg of the thesis readout with a server learning rate (thesis Alg. 1)."""
    return _run(dataset, split, config)


def run_fedcurv(dataset: SequenceDataset, split: Split, config: FedAvgConfig) -> dict[str, Any]:
    """FedCurv of the thesis readout (thesis ch. 3, Alg. 2)."""
    return _run(dataset, split, config)


def run_central(dataset: SequenceDataset, split: Split, config: ThesisCentralConfig) -> dict[str, Any]:
    """The centralized thesis ESN on the design set (thesis Table 6.3)."""
    from tff_esn.federated.centralized import train_centralized

    _, report = train_centralized(dataset, split, config.model, seed=config.seed, patience=config.patience)
    report["extra"] = {key: report.pop(key) for key in ("design", "class_weight", "epochs", "selection",
                                                        "standardization")}
    return report
