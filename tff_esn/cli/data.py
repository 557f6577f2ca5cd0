"""``tff-esn data synth-wesad|synth-hhar|prepare``: write synthetic copies, preprocess a source."""

from __future__ import annotations

import argparse
import sys
import time

from tff_esn.cli import UsageError


def _ids(text: str | None, known: tuple[str, ...], flag: str, what: str) -> list[str]:
    ids = text.split(",") if text else list(known)
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise UsageError(f"--{flag}: unknown {what}(s) {unknown}; expected ids among {', '.join(known)}.")
    return ids


def _synth_wesad(args: argparse.Namespace) -> int:
    from tff_esn.data.seed_sources.synthetic_wesad import generate_wesad
    from tff_esn.data.seed_sources.wesad import SUBJECTS

    subjects = _ids(args.subjects, SUBJECTS, "subjects", "subject")
    t0 = time.perf_counter()
    paths = generate_wesad(args.out, subjects=subjects, minutes=args.minutes, seed=args.seed,
                           progress=lambda s: print(f"  {s} written", file=sys.stderr, flush=True))
    print(f"wrote {len(paths)} WESAD subject file(s) ({args.minutes:g} min each, seed {args.seed}) to {args.out} "
          f"in {time.perf_counter() - t0:.1f} s")
    return 0


def _synth_hhar(args: argparse.Namespace) -> int:
    from tff_esn.data.seed_sources.hhar import USERS
    from tff_esn.data.seed_sources.synthetic_hhar import write_hhar

    users = _ids(args.users, USERS, "users", "user")
    t0 = time.perf_counter()
    paths = write_hhar(args.out, users=users, minutes=args.minutes, seed=args.seed)
    print(f"wrote {', '.join(p.name for p in paths)} ({len(users)} users, {args.minutes:g} min per activity, "
          f"seed {args.seed}) to {args.out} in {time.perf_counter() - t0:.1f} s")
    return 0


def _prepare(args: argparse.Namespace) -> int:
    from tff_esn.data.sources import load_source

    t0 = time.perf_counter()
    data = load_source(args.source, args.pipeline, cache_dir=args.cache_dir)
    print(f"{data.source} · {args.pipeline}: {len(data.clients)} clients, {data.n_classes} classes, "
          f"features {', '.join(data.feature_names)} ({time.perf_counter() - t0:.1f} s)")
    for cid, c in data.clients.items():
        lengths = f", lengths {c.steps.min()}–{c.steps.max()}" if c.ragged else ""
        print(f"  {cid}: x {c.x.shape}{lengths}, labels {c.y.shape}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("data", help="synthetic WESAD/HHAR files and preprocessing",
                                   description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="data_command", required=True, metavar="ACTION")

    p = sub.add_parser("synth-wesad", help="write synthetic S{n}/S{n}.pkl files in the WESAD layout")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--subjects", default=None, metavar="S2,S3,...", help="subject ids (default: all 15)")
    p.add_argument("--minutes", type=float, default=100.0, help="recording length per subject (default %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_synth_wesad, holds_out=True)

    p = sub.add_parser("synth-hhar", help="write synthetic HHAR CSVs (Phones_/Watch_ accelerometer/gyroscope)")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--users", default=None, metavar="a,b,...", help="user ids (default: a–i)")
    p.add_argument("--minutes", type=float, default=5.0, help="minutes per activity (default %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_synth_hhar, holds_out=True)

    p = sub.add_parser("prepare", help="preprocess a source with a pipeline into the cache")
    p.add_argument("source", help="synthetic-wesad, synthetic-hhar, wesad:DIR, hhar:DIR or npz:FILE")
    p.add_argument("pipeline", help="thesis, incfed-wesad, incfed-hhar, pfedrr-wesad, pfedrr-hhar, fedip-wesad, fedip-hhar")
    p.add_argument("--cache-dir", default=None)
    p.set_defaults(func=_prepare)
