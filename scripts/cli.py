"""``tff-esn reproduce thesis|incfed|pfedrr|fedip|all|EXPERIMENT [--profile P] [--backend B] [--wesad-dir DIR]
[--hhar-dir DIR] --out DIR``: the command :mod:`tff_esn.cli.reproduce` runs from a clone of the repository."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tff_esn.cli import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The reproduce flags (shared by ``tff-esn reproduce`` and ``python -m scripts.reproduce_all``)."""
    from scripts.framework import GROUPS, PROFILES
    from tff_esn.federated.configs import BACKENDS

    parser.add_argument("target", metavar="TARGET",
                        help=f"all, a seed ({', '.join(GROUPS)}) or one experiment name")
    parser.add_argument("--profile", choices=PROFILES, default="quick",
                        help="quick (default, ~30 min on 2 cores), full (the seeds' settings) or tiny (tests)")
    parser.add_argument("--wesad-dir", default=None, metavar="DIR",
                        help="a real WESAD copy (S2/S2.pkl ...); default: the synthetic generator")
    parser.add_argument("--hhar-dir", default=None, metavar="DIR",
                        help="a real HHAR copy (Phones_accelerometer.csv ...); default: the synthetic generator")
    parser.add_argument("--npz", default=None, metavar="FILE",
                        help="your own sequences for the privacy experiment (load_npz format: X, y, client, split); "
                             "default: scikit-learn's digits as 8-step sequences")
    parser.add_argument("--cache-dir", default=None, metavar="DIR",
                        help="cache of generated/preprocessed data (default: $TFF_ESN_CACHE or ~/.cache/tff_esn)")
    parser.add_argument("--out", required=True, metavar="DIR", help="run folder; report.md is written there")
    parser.add_argument("--seed", type=int, default=0, help="base seed (repetition r uses seed + r)")
    parser.add_argument("--force", action="store_true", help="re-run experiments that already finished in --out")
    parser.add_argument("--backend", choices=BACKENDS, default="auto",
                        help="where the federated runs execute: tff (TFF's runtime everywhere), sim (FedAvg/FedCurv in "
                             "one process, IncFed/FedIP on their numpy twin) or auto (default: sim's, except where only "
                             "TFF reaches; tff_esn.federated.configs.resolve_backend)")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    """Runs the request; prints the report path; exit code 1 when an experiment failed."""
    from scripts.framework import FAILED, DataSources, ReproductionRequest

    try:
        npz = {} if args.npz is None else {"npz": f"npz:{Path(args.npz).expanduser().resolve()}"}
        data = DataSources.from_dirs(args.wesad_dir, args.hhar_dir, cache_dir=args.cache_dir, **npz)
        request = ReproductionRequest(args.target, args.profile, data, Path(args.out), seed=args.seed,
                                      force=args.force, progress=args.progress, backend=args.backend)
    except (ValueError, FileNotFoundError) as err:  # the target's name, a --*-dir flag or the seeds
        raise UsageError(str(err)) from None
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # retracing warnings of many short Keras fits would bury the progress bars
    from tff_esn import runtime

    runtime.ensure_context()
    from scripts.runner import run_experiments

    report, records = run_experiments(request)
    for r in records:
        state = "skipped (done earlier)" if r.get("skipped") else r["status"]
        reason = f": {r['reason']}" if r.get("reason") else ""
        print(f"  {r['name']:<24} {state} ({r.get('seconds', 0):.0f} s){reason}", file=sys.stderr)
    print(f"report: {report}")
    return 1 if any(r["status"] == FAILED for r in records) else 0


def add_command_arguments(parser: argparse.ArgumentParser) -> None:
    """``tff-esn reproduce``'s description, flags and function."""
    parser.description = ("Re-run the published experiments (thesis, IncFed, pFedRR, FedIP) on the synthetic default "
                          "or a real copy, write tables (CSV + Markdown, published numbers beside ours), figures (PNG) "
                          "and DIR/report.md. Finished experiments are skipped unless --force.")
    add_arguments(parser)
    parser.set_defaults(func=run, holds_out=True)
