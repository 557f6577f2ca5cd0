"""``tff-esn discriminator train|phase``: a thin layer over the discriminator's Python API.

``train`` generates the real/fake deltas, optionally searches the architecture, trains and saves the
discriminator; ``phase`` runs FedAvg+Disc or FedCurv+Disc with fake clients and writes the
accepted-vs-real report. The flags are generated from the configs they set (no TensorFlow for ``--help``).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from discriminator.configs import DeltaConfig, DiscriminatorConfig
from tff_esn import runtime
from tff_esn.cli import UsageError, lazy_command
from tff_esn.cli.flags import add_setting_flags
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.federated.configs import FedCurvConfig, ThesisModelConfig, federated_algorithms, for_data
from tff_esn.common.settings import Setting, config_from_flags, pick_settings, settings

GROUP = "discriminator"
"""The split group holding the subjects the discriminator is trained on (thesis §6.1)."""


def _add_data_arguments(parser: argparse.ArgumentParser, out_help: str) -> None:
    g = parser.add_argument_group("data and output")
    g.add_argument("--data", default="synthetic-wesad", metavar="SOURCE",
                   help="synthetic-wesad (default), wesad:DIR or npz:FILE")
    g.add_argument("--pipeline", default="thesis", help="preprocessing pipeline (default %(default)s)")
    g.add_argument("--split", default="thesis-discriminative", help="client split (default %(default)s)")
    g.add_argument("--cache-dir", default=None, help="cache of generated/preprocessed data")
    g.add_argument("--out", required=True, metavar="PATH", help=out_help)


def _load(args: argparse.Namespace):
    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split

    dataset = load_source(args.data, args.pipeline, cache_dir=args.cache_dir)
    return dataset, get_split(args.split, dataset, seed=args.seed)


MODEL = pick_settings(settings(ThesisModelConfig), [n for n in settings(ThesisModelConfig) if n != "epochs"])
"""The real/fake ESNs' settings (their epochs are not used; the discriminator has its own)."""
DELTAS = pick_settings(settings(DeltaConfig), ("noise_std", "steps", "restart_every", "test_fraction"))
NETWORK = pick_settings(settings(DiscriminatorConfig), ("hidden", "dropout", "epochs"), disc_batch_size="batch_size")
FEDERATION = pick_settings(settings(FedCurvConfig), ("noise_std", "rounds", "clients_per_round", "server_lr", "reservoir",
                                             "penalty", "seed", "resume", "progress"),
                   threshold="discriminator_threshold")


def _values(args: argparse.Namespace, chosen: Mapping[str, Setting]) -> dict[str, Any]:
    """``chosen``'s values in ``args`` under their settings' names (``disc_batch_size`` → ``batch_size``)."""
    return {s.field.metadata.get("flag", s.field.name): getattr(args, flag) for flag, s in chosen.items()}


def _train(args: argparse.Namespace) -> int:
    from discriminator.deltas import generate_deltas
    from discriminator.model import train_discriminator
    from discriminator.search import search_discriminator

    try:
        model = config_from_flags(ThesisModelConfig, _values(args, MODEL))
        delta_config = DeltaConfig(model=model, seed=args.seed, **_values(args, DELTAS))
        disc_config = DiscriminatorConfig(seed=args.seed, **_values(args, NETWORK))
    except (TypeError, ValueError) as err:
        raise UsageError(str(err)) from None
    runtime.ensure_context()
    dataset, split = _load(args)
    if GROUP not in split.extra:
        raise UsageError(f"split {split.name!r} has no {GROUP!r} group (groups: {sorted(split.extra)}); "
                         "use --split thesis-discriminative.")
    delta_config = dataclasses.replace(delta_config, model=for_data(model, dataset, split.extra[GROUP]))
    deltas = generate_deltas(dataset.select(split.extra[GROUP]), delta_config,
                             test_subjects=dataset.select(split.test) if split.test else None)
    if args.search:
        disc_config = search_discriminator(deltas, disc_config, max_trials=args.search)
    info = {"delta_config": dataclasses.asdict(delta_config), "data": dataset.source, "split": split.name,
            "subjects": list(split.extra[GROUP]), "test_subjects": list(split.test)}
    disc = train_discriminator(deltas, disc_config, info=info)
    path = disc.save(args.out)
    print(" ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in disc.metrics.items())
          + f" → {path}")
    return 0


def model_config_from_info(info: dict[str, Any]) -> ThesisModelConfig:
    """The thesis model a saved discriminator was trained for (``info["delta_config"]["model"]``)."""
    try:
        model = dict(info["delta_config"]["model"])
        model["reservoir"] = ReservoirConfig.from_dict(model["reservoir"])
        model["class_weight"] = tuple(model["class_weight"])
        return ThesisModelConfig(**model)
    except (KeyError, TypeError, ValueError) as err:
        raise UsageError(f"the discriminator's description does not name the model it was trained for: {err}") from None


def _phase(args: argparse.Namespace) -> int:
    from discriminator.filter import DiscriminatorFilter
    from discriminator.model import load_discriminator
    from discriminator.phase import run_discriminative_phase
    from tff_esn.registry.algorithms import get_algorithm, resolve_run
    from tff_esn.common.io import write_json_atomic

    disc = load_discriminator(args.discriminator)
    model = model_config_from_info(disc.info)
    if args.seed != model.reservoir.seed:
        raise UsageError(f"--seed {args.seed}: the discriminator was trained for the reservoir of seed "
                         f"{model.reservoir.seed}, which also seeds the federation (sampling, noise, shuffling); "
                         f"give --seed {model.reservoir.seed}.")
    out = Path(args.out)
    try:
        config = config_from_flags(get_algorithm(args.algorithm).config, _values(args, FEDERATION),
                                   strict=False)  # fedavg takes no --penalty
        config = dataclasses.replace(config, model=model, out=str(out),
                                     cache_dir=args.cache_dir if args.cache_dir else str(out))
        client_filter = None if args.no_filter else DiscriminatorFilter(disc, threshold=args.threshold)
    except (TypeError, ValueError) as err:
        raise UsageError(str(err)) from None
    runtime.ensure_context()
    dataset, split = _load(args)
    result = run_discriminative_phase(dataset, split, config, client_filter, fake_clients=args.fake_clients)
    record = {"algorithm": f"{args.algorithm}+disc", "data": dataset.source, "split": split.name,
              "config": dict(resolve_run(args.algorithm, dataset, config=config).record),
              "discriminator": str(args.discriminator), "threshold": args.threshold, **result}
    path = write_json_atomic(out / "metrics.json", record)
    test = result.get("test") or {}
    print(f"{args.algorithm}-{args.server_lr:g}+Disc: test f1_micro {test.get('f1_micro', float('nan')):.4f}, "
          f"valid-client count MAE {result['extra']['discriminator']['mae']:.4f} → {path}")
    return 0


HELP = "anomalous-client discriminator: train it, run the discriminative phase"


def register(subparsers: argparse._SubParsersAction) -> None:
    """``tff-esn discriminator``; its flags are built when the command runs."""
    lazy_command(subparsers, "discriminator", _add_arguments, help=HELP)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n\n")[0]
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    train = sub.add_parser("train", help="train and save a discriminator (thesis §6.1)")
    train.set_defaults(func=_train)
    add_setting_flags(train, {**MODEL, **DELTAS}, title="real and fake ESNs (thesis Table 6.2, §6.1)")
    add_setting_flags(train, NETWORK, title="discriminator (thesis Fig. 6.2)")
    train.add_argument("--search", type=int, default=0, metavar="N",
                       help="random-search hidden sizes and dropout over N trials first (default: no search)")
    _add_data_arguments(train, "discriminator folder to write (model.keras + discriminator.json)")

    phase = sub.add_parser("phase", help="FedAvg/FedCurv+Disc with 5 fake of 10 clients (thesis §6.2, Fig. 6.13)")
    phase.set_defaults(func=_phase)
    g = phase.add_argument_group("discriminative phase (thesis §6.1–6.2)")
    g.add_argument("--discriminator", required=True, metavar="PATH", help="folder from `discriminator train`")
    g.add_argument("--algorithm", choices=federated_algorithms(), default="fedavg")
    g.add_argument("--no-filter", action="store_true", help="the same federation without the discriminator")
    g.add_argument("--fake-clients", type=int, default=5, help="fake training clients (default %(default)s)")
    add_setting_flags(phase, FEDERATION, title="federation (thesis §6.1–6.2)")
    _add_data_arguments(phase, "run folder (metrics.json, rounds.csv, acceptance.csv/png)")
