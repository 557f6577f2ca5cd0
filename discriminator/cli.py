"""``tff-esn discriminator train|phase``: a thin layer over the discriminator's Python API.

* ``train --out PATH`` — loads the data (``--data``, thesis pipeline), takes the
  ``discriminator`` group of the ``thesis-discriminative`` split, generates real/fake
  readout deltas (:func:`discriminator.deltas.generate_deltas`), optionally searches the
  architecture (``--search N`` trials), trains and saves the discriminator folder, and
  prints its metrics.
* ``phase --discriminator PATH --out DIR`` — the discriminative phase
  (:func:`discriminator.phase.run_discriminative_phase`): FedAvg+Disc or FedCurv+Disc with
  5 fake clients of 10, the thesis model the discriminator was trained for, and the
  accepted-vs-real report (``acceptance.csv``, ``acceptance.png``, MAE) next to
  ``metrics.json``.

Registered through the ``tff_esn.commands`` entry-point group; the flags (whose defaults
come from the TF-backed configs) are built when the command runs, not for ``tff-esn --help``.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from tff_esn import runtime
from tff_esn.algorithms import config_from_flags
from tff_esn.cli import UsageError, lazy_command
from tff_esn.cli.flags import add_common_arguments, class_weight
from tff_esn.config import ReservoirConfig
from tff_esn.federated.configs import RESERVOIR_MODES, THESIS_RESERVOIR, ThesisModelConfig, for_data

GROUP = "discriminator"
"""The split group holding the subjects the discriminator is trained on (thesis §6.1)."""


def _pair(kind: type):
    def parse(text: str) -> tuple:
        try:
            a, b = (kind(v) for v in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected two values 'A,B', got {text!r}") from None
        return a, b

    return parse


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


def _train(args: argparse.Namespace) -> int:
    from discriminator.deltas import DeltaConfig, generate_deltas
    from discriminator.model import DiscriminatorConfig, train_discriminator
    from discriminator.search import search_discriminator

    try:
        model = ThesisModelConfig(reservoir=config_from_flags(ReservoirConfig, vars(args), strict=False),
                                  learning_rate=args.client_lr, batch_size=args.batch_size,
                                  class_weight=args.class_weight, state_mode=args.state_mode, washout=args.washout)
        delta_config = DeltaConfig(model=model, noise_std=args.noise_std, steps=args.steps,
                                   test_fraction=args.test_fraction, restart_every=args.restart_every,
                                   seed=args.seed)
        disc_config = DiscriminatorConfig(hidden=args.hidden, dropout=args.dropout, epochs=args.epochs,
                                          batch_size=args.disc_batch_size, seed=args.seed)
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
    from tff_esn.federated.training import FederatedConfig
    from tff_esn.io import write_json_atomic

    disc = load_discriminator(args.discriminator)
    model = model_config_from_info(disc.info)
    try:
        config = FederatedConfig(algorithm=args.algorithm, model=model, rounds=args.rounds,
                                 clients_per_round=args.clients_per_round, server_learning_rate=args.server_lr,
                                 noise_std=args.noise_std, reservoirs=args.reservoir, penalty=args.penalty,
                                 seed=args.seed)
        client_filter = None if args.no_filter else DiscriminatorFilter(disc, threshold=args.threshold)
    except (TypeError, ValueError) as err:
        raise UsageError(str(err)) from None
    runtime.ensure_context()
    dataset, split = _load(args)
    out = Path(args.out)
    result = run_discriminative_phase(dataset, split, config, client_filter, fake_clients=args.fake_clients,
                                      out_dir=out, resume=args.resume,
                                      cache_dir=Path(args.cache_dir) / "federated-states" if args.cache_dir
                                      else out / "states", progress=args.progress)
    record = {"algorithm": f"{args.algorithm}+disc", "data": dataset.source, "split": split.name,
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
    from discriminator.deltas import DeltaConfig
    from discriminator.model import DiscriminatorConfig
    from tff_esn.federated.training import FederatedConfig

    parser.description = __doc__.split("\n\n")[0]
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    train = sub.add_parser("train", help="train and save a discriminator (thesis §6.1)")
    add_common_arguments(train)
    train.set_defaults(units=THESIS_RESERVOIR.units, spectral_radius=THESIS_RESERVOIR.spectral_radius,
                       leaky=THESIS_RESERVOIR.leaky, func=_train)
    d_model, d_delta = ThesisModelConfig(), DeltaConfig()
    g = train.add_argument_group("real and fake ESNs (thesis §6.1)")
    g.add_argument("--client-lr", type=float, default=d_model.learning_rate, help="Adam η (default %(default)s)")
    g.add_argument("--batch-size", type=int, default=d_model.batch_size, help="ESN batch (default %(default)s)")
    g.add_argument("--class-weight", type=class_weight, default=d_model.class_weight, metavar="W0,W1,…|balanced",
                   help="loss weight of each class, or 'balanced' from the subjects' labels (default 12,88)")
    g.add_argument("--noise-std", type=float, default=d_delta.noise_std,
                   help="noise std of the fake ESN's inputs (default %(default)s)")
    g.add_argument("--steps", type=int, default=d_delta.steps,
                   help="training steps, i.e. deltas, per ESN (default %(default)s)")
    g.add_argument("--restart-every", type=int, default=d_delta.restart_every, metavar="K",
                   help="reset the ESNs' Adam state every K steps, as a federated client's round does "
                        "(default: never, one continuous training as in the thesis)")
    g.add_argument("--test-fraction", type=float, default=d_delta.test_fraction,
                   help="last fraction of the steps kept as test deltas (default %(default)s)")
    d_disc = DiscriminatorConfig()
    g = train.add_argument_group("discriminator (thesis Fig. 6.2)")
    g.add_argument("--hidden", type=_pair(int), default=d_disc.hidden, metavar="H1,H2",
                   help="hidden Dense units (default %s)" % ",".join(map(str, d_disc.hidden)))
    g.add_argument("--dropout", type=_pair(float), default=d_disc.dropout, metavar="R1,R2",
                   help="dropout rates (default %s)" % ",".join(map(str, d_disc.dropout)))
    g.add_argument("--epochs", type=int, default=d_disc.epochs, help="training epochs (default %(default)s)")
    g.add_argument("--disc-batch-size", type=int, default=d_disc.batch_size, help="default %(default)s")
    g.add_argument("--search", type=int, default=0, metavar="N",
                   help="random-search hidden sizes and dropout over N trials first (default: no search)")
    _add_data_arguments(train, "discriminator folder to write (model.keras + discriminator.json)")

    phase = sub.add_parser("phase", help="FedAvg/FedCurv+Disc with 5 fake of 10 clients (thesis §6.2, Fig. 6.13)")
    phase.set_defaults(func=_phase)
    d_fed = FederatedConfig()
    g = phase.add_argument_group("discriminative phase (thesis §6.1–6.2)")
    g.add_argument("--discriminator", required=True, metavar="PATH", help="folder from `discriminator train`")
    g.add_argument("--algorithm", choices=("fedavg", "fedcurv"), default="fedavg")
    g.add_argument("--threshold", type=float, default=0.5, help="accept when P(real) > threshold (default 0.5)")
    g.add_argument("--no-filter", action="store_true", help="the same federation without the discriminator")
    g.add_argument("--fake-clients", type=int, default=5, help="fake training clients (default %(default)s)")
    g.add_argument("--noise-std", type=float, default=d_fed.noise_std,
                   help="noise std of the fake clients' inputs (default %(default)s)")
    g.add_argument("--rounds", type=int, default=d_fed.rounds, help="default %(default)s")
    g.add_argument("--clients-per-round", type=int, default=d_fed.clients_per_round, help="default %(default)s")
    g.add_argument("--server-lr", type=float, default=d_fed.server_learning_rate, help="default %(default)s")
    g.add_argument("--reservoir", choices=RESERVOIR_MODES, default=d_fed.reservoirs,
                   help="clients use the server's reservoir (same) or their own (different)")
    g.add_argument("--penalty", type=float, default=d_fed.penalty, help="FedCurv λ (default %(default)s)")
    g.add_argument("--seed", type=int, default=d_fed.seed, help="seed of sampling, noise, fake clients")
    g.add_argument("--resume", action="store_true", help="continue the run in --out from its last round")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    _add_data_arguments(phase, "run folder (metrics.json, rounds.csv, acceptance.csv/png)")
