"""``tff-esn run fedavg|fedcurv|thesis-central``: the thesis' models in the algorithm registry.

The flags default to the thesis' setting: Table 6.2's model (200 units, ρ 0.99, α 1.0,
Adam η 0.1, batch 20, one local epoch, class weights 12/88) on the ``thesis`` pipeline, and
§6.1's federation (78 rounds, 5 clients per round, input noise std 0.5, server SGD lr 1.0).
Besides ``metrics.json`` (written by ``tff-esn run``), a federated run writes
``rounds.csv``, ``tensorboard/`` and ``checkpoints/`` into ``--out``; ``--resume``
continues an interrupted run from its last completed round. Harvested client states are
kept under ``CACHE/federated-states`` (``--cache-dir``, else ``$TFF_ESN_CACHE``, else
``~/.cache/tff_esn``), keyed by inputs, reservoir and noise, so runs that share them (every
server learning rate, both algorithms) harvest once.
"""

from __future__ import annotations

import argparse
import dataclasses
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from tff_esn import runtime
from tff_esn.algorithms import register_algorithm, reservoir_config_from_args
from tff_esn.cli import UsageError
from tff_esn.data.cache import cache_root
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.federated.clients import RESERVOIR_MODES
from tff_esn.federated.model import THESIS_RESERVOIR, ThesisModelConfig
from tff_esn.federated.training import STATE_SOURCES, FederatedConfig, run_federated
from tff_esn.privacy.learning import LearningPrivacy
from tff_esn.privacy.options import dp_requested, noise_multiplier_from_args, privacy_requested


def _class_weight(text: str) -> tuple[float, float]:
    try:
        w0, w1 = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two numbers 'W0,W1' (e.g. 12,88), got {text!r}") from None
    return w0, w1


def _add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(units=THESIS_RESERVOIR.units, spectral_radius=THESIS_RESERVOIR.spectral_radius,
                        leaky=THESIS_RESERVOIR.leaky, pipeline="thesis")
    d = ThesisModelConfig()
    g = parser.add_argument_group("thesis model (Table 6.2)")
    g.add_argument("--client-lr", type=float, default=d.learning_rate,
                   help="Adam learning rate η of the (client) training (default %(default)s)")
    g.add_argument("--batch-size", type=int, default=d.batch_size, help="sequences per batch (default %(default)s)")
    g.add_argument("--epochs", type=int, default=d.epochs, help="(local) epochs per round (default %(default)s)")
    g.add_argument("--class-weight", type=_class_weight, default=d.class_weight, metavar="W0,W1",
                   help="loss weights of the two classes (default 12,88)")


def _add_federated_arguments(parser: argparse.ArgumentParser) -> None:
    _add_model_arguments(parser)
    d = FederatedConfig()
    g = parser.add_argument_group("federation (thesis §6.1–6.2)")
    g.add_argument("--server-lr", type=float, default=d.server_learning_rate,
                   help="server SGD learning rate: 1.0, 0.1, 0.01, 0.001 in the thesis (default %(default)s)")
    g.add_argument("--rounds", type=int, default=d.rounds, help="rounds (default %(default)s)")
    g.add_argument("--clients-per-round", type=int, default=d.clients_per_round,
                   help="clients sampled per round (default %(default)s)")
    g.add_argument("--noise-std", type=float, default=d.noise_std,
                   help="std of the Gaussian noise on the clients' inputs (default %(default)s)")
    g.add_argument("--noisy-clients", default=None, metavar="ID,ID",
                   help="only these training clients get noise (default: all)")
    g.add_argument("--reservoir", choices=RESERVOIR_MODES, default=d.reservoirs,
                   help="clients use the server's reservoir (same) or their own (different)")
    g.add_argument("--states", choices=STATE_SOURCES, default=d.states,
                   help="cached: readout trained on states harvested once (noise fixed per client); "
                        "faithful: reservoir inside the model, noise redrawn every round")
    g.add_argument("--no-shuffle", dest="shuffle", action="store_false", help="keep each client's order")
    g.add_argument("--resume", action="store_true", help="continue the run in --out from its last round")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    g.add_argument("--discriminator", default=None, metavar="PATH",
                   help="client filter (thesis Alg. 3–4, FedAvg/FedCurv+Disc): a discriminator folder, loaded by the "
                        "'discriminator' entry point of the tff_esn.client_filters group")
    g.add_argument("--discriminator-threshold", type=float, default=0.5,
                   help="accept a client when the discriminator's P(real) exceeds this (default %(default)s)")


def _add_fedcurv_arguments(parser: argparse.ArgumentParser) -> None:
    _add_federated_arguments(parser)
    parser.add_argument("--penalty", type=float, default=FederatedConfig().penalty,
                        help="FedCurv penalty weight λ (thesis Listing 3.7: %(default)s)")


def model_config_from_args(args: argparse.Namespace) -> ThesisModelConfig:
    """The :class:`ThesisModelConfig` of the flags."""
    return ThesisModelConfig(
        reservoir=reservoir_config_from_args(args), learning_rate=args.client_lr, batch_size=args.batch_size,
        epochs=args.epochs, class_weight=tuple(args.class_weight), state_mode=args.state_mode, washout=args.washout,
    )


def federated_config_from_args(algorithm: str, args: argparse.Namespace) -> FederatedConfig:
    """The :class:`FederatedConfig` of the flags."""
    noisy = None if not args.noisy_clients else tuple(c.strip() for c in args.noisy_clients.split(",") if c.strip())
    return FederatedConfig(
        algorithm=algorithm, model=model_config_from_args(args), rounds=args.rounds,
        clients_per_round=args.clients_per_round, server_learning_rate=args.server_lr, noise_std=args.noise_std,
        noisy_clients=noisy, reservoirs=args.reservoir, states=args.states,
        penalty=getattr(args, "penalty", FederatedConfig().penalty), seed=args.seed, shuffle=args.shuffle,
    )


def learning_privacy_from_args(args: argparse.Namespace, config: FederatedConfig, clients: int
                               ) -> LearningPrivacy | None:
    """The :class:`LearningPrivacy` of the privacy flags (``--dp-epsilon`` calibrated over the
    run's rounds with sampling rate clients_per_round / clients); ``None`` without them."""
    if not privacy_requested(args):
        return None
    z = None
    if dp_requested(args):
        z = noise_multiplier_from_args(args, config.rounds, min(1.0, config.clients_per_round / clients))
    return LearningPrivacy(noise_multiplier=z, clip=0.1 if args.dp_clip is None else args.dp_clip,
                           adaptive=args.dp_adaptive_clip, secure=args.secure_aggregation, delta=args.dp_delta,
                           seed=config.seed if args.dp_seed is None else args.dp_seed)


def client_filter_from_args(args: argparse.Namespace):
    """The client filter of ``--discriminator PATH`` (``None`` without it), through the
    ``tff_esn.client_filters`` entry point ``discriminator`` (``tff_esn`` never imports that package)."""
    if not args.discriminator:
        return None
    loaders = {ep.name: ep for ep in entry_points(group="tff_esn.client_filters")}
    if "discriminator" not in loaders:
        raise UsageError("--discriminator: no 'discriminator' loader in the tff_esn.client_filters entry-point group "
                         "(is the discriminator package installed?).")
    return loaders["discriminator"].load()(args.discriminator, threshold=args.discriminator_threshold,
                                           units=args.units)


def _runner(algorithm: str):
    def run(dataset: SequenceDataset, split: Split, args: argparse.Namespace) -> dict[str, Any]:
        try:
            config = federated_config_from_args(algorithm, args)
            config = dataclasses.replace(config, privacy=learning_privacy_from_args(args, config, len(split.train)))
        except (TypeError, ValueError) as err:
            raise UsageError(str(err)) from None
        out = Path(args.out)
        local = runtime.on_this_host(runtime.current_workers())
        states_dir = cache_root(args.cache_dir) / "federated-states" if args.cache_dir or local else None
        result = run_federated(dataset, split, config, out_dir=out, resume=args.resume, cache_dir=states_dir,
                               progress=args.progress, client_filter=client_filter_from_args(args))
        result["extra"]["rounds_csv"] = str(out / "rounds.csv")
        return result

    return run


def _run_central(dataset: SequenceDataset, split: Split, args: argparse.Namespace) -> dict[str, Any]:
    from tff_esn.federated.centralized import train_centralized

    _, report = train_centralized(dataset, split, model_config_from_args(args), seed=args.seed)
    report["extra"] = {"design": report.pop("design")}
    return report


register_algorithm("fedavg", _add_federated_arguments, _runner("fedavg"),
                   help="FedAvg of the thesis ESN readout in TFF, with a server learning rate (thesis Alg. 1)")
register_algorithm("fedcurv", _add_fedcurv_arguments, _runner("fedcurv"),
                   help="FedCurv of the thesis ESN readout in TFF (thesis ch. 3, Alg. 2)")
register_algorithm("thesis-central", _add_model_arguments, _run_central,
                   help="centralized thesis ESN on the design set (thesis Table 6.3)")
