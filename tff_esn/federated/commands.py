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
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tff_esn import runtime
from tff_esn.data.cache import cache_root
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.federated.configs import FedAvgConfig, ThesisCentralConfig, for_data

if TYPE_CHECKING:
    from tff_esn.federated.training import FederatedConfig


def federated_config(algorithm: str, config: FedAvgConfig, clients: int) -> FederatedConfig:
    """The training :class:`FederatedConfig` of a run config (``clients``: training clients, the
    DP sampling rate's denominator: ε is calibrated over the rounds at clients_per_round / clients)."""
    from tff_esn.federated.training import FederatedConfig
    from tff_esn.privacy.learning import LearningPrivacy

    privacy = None
    settings = config.privacy
    if settings.requested:
        z = None
        if settings.dp_requested:
            z = settings.noise_multiplier(config.rounds, min(1.0, config.clients_per_round / clients))
        privacy = LearningPrivacy(noise_multiplier=z, clip=0.1 if settings.dp_clip is None else settings.dp_clip,
                                  adaptive=settings.dp_adaptive_clip, secure=settings.secure_aggregation,
                                  delta=settings.dp_delta,
                                  seed=config.seed if settings.dp_seed is None else settings.dp_seed)
    return FederatedConfig(
        algorithm=algorithm, model=config.model, rounds=config.rounds, clients_per_round=config.clients_per_round,
        server_learning_rate=config.server_lr, noise_std=config.noise_std, noisy_clients=config.noisy_clients,
        reservoirs=config.reservoirs, states=config.states, penalty=getattr(config, "penalty", FederatedConfig().penalty),
        seed=config.seed, shuffle=config.shuffle, privacy=privacy, keep_best=config.keep_best,
    )


def client_filter(config: FedAvgConfig):
    """The client filter of ``config.discriminator`` (``None`` without one), through the
    ``tff_esn.client_filters`` entry point ``discriminator`` (``tff_esn`` never imports that package);
    ``config.model`` is resolved (its class count sets the readout delta's length)."""
    if not config.discriminator:
        return None
    loaders = {ep.name: ep for ep in entry_points(group="tff_esn.client_filters")}
    if "discriminator" not in loaders:
        raise ValueError("discriminator: no 'discriminator' loader in the tff_esn.client_filters entry-point group "
                         "(is the discriminator package installed?).")
    return loaders["discriminator"].load()(config.discriminator, threshold=config.discriminator_threshold,
                                           units=config.model.reservoir.units, outputs=config.model.n_outputs)


def _run(algorithm: str, dataset: SequenceDataset, split: Split, config: FedAvgConfig) -> dict[str, Any]:
    config = dataclasses.replace(config, model=for_data(config.model, dataset, split.train,
                                                        faithful=config.states == "faithful"))
    from tff_esn.federated.training import run_federated

    out = Path(config.out)
    local = runtime.on_this_host(runtime.current_workers())
    states_dir = cache_root(config.cache_dir) / "federated-states" if config.cache_dir or local else None
    result = run_federated(dataset, split, federated_config(algorithm, config, len(split.train)), out_dir=out,
                           resume=config.resume, cache_dir=states_dir, progress=config.progress,
                           client_filter=client_filter(config))
    result["extra"]["rounds_csv"] = str(out / "rounds.csv")
    return result


def run_fedavg(dataset: SequenceDataset, split: Split, config: FedAvgConfig) -> dict[str, Any]:
    """FedAvg of the thesis readout with a server learning rate (thesis Alg. 1)."""
    return _run("fedavg", dataset, split, config)


def run_fedcurv(dataset: SequenceDataset, split: Split, config: FedAvgConfig) -> dict[str, Any]:
    """FedCurv of the thesis readout (thesis ch. 3, Alg. 2)."""
    return _run("fedcurv", dataset, split, config)


def run_central(dataset: SequenceDataset, split: Split, config: ThesisCentralConfig) -> dict[str, Any]:
    """The centralized thesis ESN on the design set (thesis Table 6.3)."""
    from tff_esn.federated.centralized import train_centralized

    _, report = train_centralized(dataset, split, config.model, seed=config.seed, patience=config.patience)
    report["extra"] = {key: report.pop(key) for key in ("design", "class_weight", "epochs")}
    return report
