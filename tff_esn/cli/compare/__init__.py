"""``tff-esn compare --data SOURCE --out DIR``: every fitting algorithm × a heterogeneity grid × seeds.

A thin layer over :func:`tff_esn.cli.compare.heterogeneity.run_comparison`; ``--profile`` picks the grid; ``--reservoirs`` compares reservoirs instead
(:mod:`tff_esn.cli.compare.reservoirs`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tff_esn.registry.algorithms import default_algorithms
from tff_esn.cli import UsageError
from tff_esn.cli.run import partitioner, source_options
from tff_esn.data.source_names import own_data
from tff_esn.registry.defaults import default_pipeline, default_split

DEFAULT_SOURCES = ("synthetic-hhar", "synthetic-wesad")
PROFILE_NAMES = ("quick", "full")


def _names(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _partitions(text: str) -> tuple[str, ...]:
    return tuple(partitioner(t) for t in _names(text))


def _seeds(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(t) for t in _names(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers 'S,S,...', got {text!r}") from None


def folder_name(source: str) -> str:
    """``DIR/``'s sub-folder of a source: ``synthetic-hhar``, ``wesad``, ``ts-BasicMotions``, ``npz-digits``."""
    kind, _, arg = source.partition(":")
    return kind if not arg or kind in ("wesad", "hhar") else f"{kind}-{Path(arg).stem}"


def _compare(args: argparse.Namespace) -> int:
    from tff_esn.cli.compare.heterogeneity import PROFILES, Comparison, run_comparison

    profile = PROFILES[args.profile]
    sources = tuple(args.data or DEFAULT_SOURCES)
    folders = [folder_name(s) for s in sources]
    if len(set(folders)) != len(folders):
        raise UsageError(f"--data: sources {list(sources)} share a folder name {folders}; compare them one at a time.")
    if args.reservoirs is not None:
        return _compare_reservoirs(args, tuple(zip(folders, sources)), args.seeds or profile.seeds)
    comparisons = []
    for source in sources:  # every source's settings checked before the first run
        pipeline = None if own_data(source) else args.pipeline or default_pipeline(source)  # own data: read as is
        options = source_options(argparse.Namespace(**{**vars(args), "data": source}))
        try:
            comparisons.append(Comparison(source, pipeline, args.split or default_split(source, pipeline),
                                          **{k: getattr(profile, k) if getattr(args, k) is None else getattr(args, k)
                                             for k in ("partitions", "clients", "seeds", "rounds")},
                                          algorithms=args.algorithms, options=options, cache_dir=args.cache_dir))
        except ValueError as err:
            raise UsageError(str(err)) from None
    for comparison, folder in zip(comparisons, folders):
        try:
            paths = run_comparison(comparison, Path(args.out) / folder, progress=args.progress)
        except FileExistsError as err:
            raise UsageError(str(err)) from None
        print(paths["table"].read_text())
        print(f"→ {paths['csv']}, {paths['table']}, {paths['figure']}")
    return 0


def _compare_reservoirs(args: argparse.Namespace, sources: tuple[tuple[str, str], ...], seeds: tuple[int, ...]) -> int:
    from tff_esn.cli.compare.reservoirs import DEFAULT_RESERVOIRS, ReservoirComparison, run_reservoir_comparison

    if args.partitions is not None and len(args.partitions) != 1:
        raise UsageError("--partitions: a reservoir comparison deals the training sequences by one partitioner.")
    given = {"partition": (args.partitions or (None,))[0], "algorithms": args.algorithms, "clients": args.clients,
             "rounds": args.rounds, "pipeline": args.pipeline, "split": args.split}
    try:
        comparison = ReservoirComparison(sources, args.reservoirs or DEFAULT_RESERVOIRS, seeds=seeds,
                                         **{k: v for k, v in given.items() if v is not None})
        paths = run_reservoir_comparison(comparison, args.out, progress=args.progress)
    except (ValueError, FileExistsError) as err:
        raise UsageError(str(err)) from None
    print(paths["table"].read_text())
    print(f"→ {paths['csv']}, {paths['table']}, {paths['figure']}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help="every fitting algorithm under a grid of client heterogeneity, over seeds",
        description="Run every algorithm that fits the data on partitions of its training sequences from nearly "
                    "IID to strongly skewed, over several seeds; write results.csv, table.md and accuracy.png.",
    )
    parser.add_argument("--data", action="append", default=None, metavar="SOURCE",
                        help="data source, repeatable: synthetic-hhar, synthetic-wesad (both by default), "
                             "wesad:DIR, hhar:DIR, npz:FILE, ts:DIR/NAME")
    parser.add_argument("--profile", choices=PROFILE_NAMES, default="full",
                        help="grid size: quick (α 100, 1, 0.1; seeds 0, 1; 5 clients) or full (the default: iid and "
                             "α 100, 1, 0.3, 0.1; seeds 0–4; 20 clients)")
    parser.add_argument("--partitions", type=_partitions, default=None, metavar="P,P,...",
                        help="partitioners from least to most heterogeneous, e.g. iid,dirichlet:1,dirichlet:0.1")
    parser.add_argument("--clients", type=int, default=None, metavar="N", help="training clients of every partition")
    parser.add_argument("--rounds", type=int, default=None, metavar="N",
                        help="rounds of FedAvg/FedCurv (default: the profile's, 10 in quick; full: their own)")
    parser.add_argument("--seeds", type=_seeds, default=None, metavar="S,S,...",
                        help="seeds (each the partition's and the algorithm's)")
    parser.add_argument("--algorithms", type=_names, default=None, metavar="A,A,...",
                        help="algorithms (default: every one that fits the labels and the sequence lengths)")
    parser.add_argument("--reservoirs", type=_names, nargs="?", const=(), default=None, metavar="R,R,...",
                        help="compare reservoirs instead of partitions: topologies (random, ring, delay-line, "
                             "cycle-jumps, small-world, scale-free), leak-DIST, deep-L, deep-L-last and esnfed (alone: "
                             "all of them with deep-2, deep-3, leak-uniform); one iid deal of 10 clients, "
                             f"{' and '.join(default_algorithms())} (20 rounds) unless --partitions/--clients/"
                             "--algorithms/--rounds say; one table "
                             "and figure over every --data in DIR")
    parser.add_argument("--pipeline", default=None, help="preprocessing pipeline (default: the source's, as run)")
    parser.add_argument("--split", default=None, help="client split (default: the source's, as run)")
    parser.add_argument("--ragged", choices=("pad", "crop"), default=None,
                        help="npz/ts sequences of unequal length: kept whole (pad) or cut to the shortest (crop)")
    parser.add_argument("--missing", default=None, metavar="MODE",
                        help="ts missing values: refuse (the default) or interpolate")
    parser.add_argument("--cache-dir", default=None, help="cache of generated/preprocessed data")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (one sub-folder per source)")
    parser.set_defaults(func=_compare, holds_out=True)
