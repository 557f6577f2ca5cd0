"""``tff-esn run ALGORITHM --data SOURCE --out DIR``: one algorithm on one data set.

Loads the data (:func:`tff_esn.data.sources.load_source`), splits it by client
(:func:`tff_esn.data.splits.get_split`), runs the algorithm from the registry
(:mod:`tff_esn.algorithms`) with the typed config its flags map to
(:func:`tff_esn.cli.flags.config_of`), writes ``DIR/metrics.json`` atomically and prints a
one-line summary. Data, model and TFF are imported when a run starts, never for ``--help``.
Before any work, :mod:`tff_esn.cli.preflight` checks ``--data``'s form and the ``--out``
folder, then the loaded data and split (one line, exit code 2, before TensorFlow is
imported). ``--hparams FILE`` reads a flat JSON object of flag values (``units``,
``spectral_radius``, ``l2``, ``alpha``, ... — the flags' names with ``_``): they replace
the defaults, and flags given on the command line with a non-default value win.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tff_esn import algorithms
from tff_esn.cli import UsageError
from tff_esn.cli.flags import ALGORITHM_FLAGS, add_common_arguments, add_privacy_arguments, config_of
from tff_esn.cli.partition import add_partition_arguments, partitioned
from tff_esn.cli.preflight import add_output_arguments, check_arguments, check_loaded
from tff_esn.cli.workers import add_worker_arguments, context_from_args
from tff_esn.run_warnings import recording

TRAIN_FRACTIONS = (0.25, 0.5, 0.75, 1.0)


def _source_kind(source: str) -> str:
    kind = source.split(":", 1)[0]
    return kind[len("synthetic-"):] if kind.startswith("synthetic-") else kind


def default_pipeline(source: str) -> str:
    """The IncFed-paper pipeline of a source (``incfed-wesad`` / ``incfed-hhar``; npz ignores it)."""
    kind = _source_kind(source)
    return f"incfed-{kind}" if kind in ("wesad", "hhar") else "incfed-wesad"


def default_split(source: str, pipeline: str) -> str:
    """``npz`` (the file's own groups) for npz and ts files, ``thesis-primal`` for the thesis pipeline, else the
    pipeline's name."""
    if _source_kind(source) in ("npz", "ts"):
        return "npz"
    return "thesis-primal" if pipeline == "thesis" else pipeline


def _add_data_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("data and output")
    g.add_argument("--data", default="synthetic-wesad", metavar="SOURCE",
                   help="synthetic-wesad (default), synthetic-hhar, wesad:DIR, hhar:DIR, npz:FILE or ts:DIR/NAME "
                        "(UEA/UCR NAME_TRAIN.ts and NAME_TEST.ts)")
    g.add_argument("--pipeline", default=None,
                   help="preprocessing pipeline (default: incfed-wesad / incfed-hhar from the source)")
    g.add_argument("--split", default=None, help="client split (default: the pipeline's, npz for npz and ts files)")
    g.add_argument("--train-fraction", type=float, default=1.0, choices=TRAIN_FRACTIONS,
                   help="fraction of the training clients used (IncFed Tables V–VI)")
    g.add_argument("--ragged", choices=("pad", "crop"), default=None,
                   help="npz:FILE / ts:DIR/NAME sequences of unequal length: each at its own length (pad, the "
                        "default) or cut to the shortest (crop)")
    g.add_argument("--missing", default=None, metavar="MODE",
                   help="ts:DIR/NAME missing values ('?', NaN): refused (refuse, the default) or interpolated over "
                        "time within their dimension (interpolate)")
    add_partition_arguments(g)
    g.add_argument("--squared-inputs", action="store_true",
                   help="pfedrr-hhar / fedip-hhar: append each standardized axis' square as 6 more inputs, so the "
                        "reservoir's mean states carry the signal power (ours, not in the seeds; issue 13)")
    g.add_argument("--cache-dir", default=None, help="cache of generated/preprocessed data")
    g.add_argument("--hparams", default=None, metavar="FILE", help="JSON object of flag values (see above)")
    g.add_argument("--out", required=True, metavar="DIR", help="run folder; metrics.json is written there")
    add_output_arguments(g)


def apply_hparams(args: argparse.Namespace, parser: argparse.ArgumentParser, path: str) -> argparse.Namespace:
    """Copies the JSON object in ``path`` onto ``args`` where ``args`` holds the parser default."""
    try:
        values = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UsageError(f"--hparams: cannot read a JSON object from {path}: {err}") from None
    if not isinstance(values, dict):
        raise UsageError(f"--hparams: expected a JSON object in {path}, got {type(values).__name__}.")
    unknown = sorted(k for k in values
                     if not hasattr(args, k) or k in ("func", "hparams", "out", "data", "force", "no_test"))
    if unknown:
        raise UsageError(f"--hparams: unknown key(s) {unknown} in {path}.")
    for key, value in values.items():
        if getattr(args, key) == parser.get_default(key):
            setattr(args, key, value)
    return args


def source_options(args: argparse.Namespace, pipeline: str) -> dict:
    """The options of ``load_source``: ``ragged`` for an ``npz:`` source given ``--ragged``,
    ``squared`` for a pipeline that has it given ``--squared-inputs``; either flag is refused
    where it does not apply."""
    import dataclasses

    from tff_esn.data.pipelines import PIPELINES

    options = {}
    npz = _source_kind(args.data) in ("npz", "ts")
    if args.ragged is not None:
        if not npz:
            raise UsageError(f"--ragged: applies to npz:FILE sources only (and ts:DIR/NAME), got --data {args.data}.")
        options["ragged"] = args.ragged
    if args.missing is not None:
        from tff_esn.data.ts import MISSING_MODES

        if _source_kind(args.data) != "ts" or args.missing not in MISSING_MODES:
            raise UsageError(f"--missing: expected one of {', '.join(MISSING_MODES)} with a ts:DIR/NAME source, got "
                             f"--missing {args.missing} with --data {args.data}.")
        options["missing"] = args.missing
    if args.squared_inputs:
        squares = [n for n, cls in sorted(PIPELINES.items()) if "squared" in {f.name for f in dataclasses.fields(cls)}]
        if npz or pipeline not in squares:
            raise UsageError(f"--squared-inputs: applies to the pipelines {', '.join(squares)}, got "
                             f"{'an npz:FILE source' if npz else '--pipeline ' + pipeline}.")
        options["squared"] = True
    return options


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split
    from tff_esn.io import write_json_atomic
    from tff_esn.run_folder import clear_run

    if args.hparams:
        apply_hparams(args, parser, args.hparams)
    algo = algorithms.get_algorithm(args.algorithm)
    config = config_of(algo, args)
    uses_tff = algo.runs_tff(config)
    if not uses_tff and args.workers is not None:
        parser.error(f"--workers: {args.algorithm} with these settings runs no TFF computation "
                     "(numpy backend, no privacy, no subrounds); drop --workers.")
    out = check_arguments(args, config)
    pipeline = args.pipeline or default_pipeline(args.data)
    split_name = args.split or default_split(args.data, pipeline)
    with recording() as said:
        dataset = load_source(args.data, pipeline, cache_dir=args.cache_dir, **source_options(args, pipeline))
        split = get_split(split_name, dataset, train_fraction=args.train_fraction, seed=args.seed)
        dataset, split, partition = partitioned(args, dataset, split)
    check_loaded(args, dataset, split, config)
    if uses_tff:
        context_from_args(args, prestart=True)
    if args.force:
        clear_run(out)
    record = algorithms.run_algorithm(args.algorithm, dataset, split, config, test_required=not args.no_test)
    record["partition"] = partition
    record["warnings"] = said + [w for w in record["warnings"] if w not in said]
    record["cli"] = {k: v for k, v in sorted(vars(args).items()) if k not in algorithms.config_fields(algo.config)
                     and k not in ("func", "command", "algorithm")}
    path = write_json_atomic(out / "metrics.json", record)
    print(summary_line(record, path))
    return 0


def summary_line(record: dict, path: Path) -> str:
    """``ALGO on DATA: test acc … f1 … (random …) | up … down … floats/client × rounds | … s → path``."""
    test = record.get("test") or record.get("val") or record.get("train") or {}
    comm = record["communication"]

    def fmt(value) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    def count(value: float) -> str:
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"

    which = "test" if record.get("test") else "val" if record.get("val") else "train"
    baselines = record.get("baselines") or {}
    versus = "".join(f", {label} {fmt(((baselines.get(key) or {}).get(which) or {}).get('accuracy'))}"
                     for key, label in (("majority", "majority"), ("logistic_regression", "logistic regression"))
                     if (baselines.get(key) or {}).get(which))
    return (
        f"{record['algorithm']} on {record['data']}: {which} accuracy {fmt(test.get('accuracy'))} "
        f"f1_macro {fmt(test.get('f1_macro'))} (random {fmt(test.get('random_baseline_accuracy'))}{versus}) | "
        f"up {count(comm['up_floats_per_client'])} down {count(comm['down_floats_per_client'])} floats/client × "
        f"{comm['rounds']} round(s) | {record['seconds']:.1f} s → {path}"
    )


def _no_flags(parser: argparse.ArgumentParser) -> None:
    """An algorithm registered outside this package: the common flags only."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run one algorithm and write metrics.json",
        description="Run one algorithm on one data set and write DIR/metrics.json.",
    )
    algos = parser.add_subparsers(dest="algorithm", required=True, metavar="ALGORITHM")
    for name, algo in algorithms.available_algorithms().items():
        sub = algos.add_parser(name, help=algo.help, description=algo.help)
        add_common_arguments(sub)
        _add_data_arguments(sub)
        ALGORITHM_FLAGS.get(name, _no_flags)(sub)
        add_privacy_arguments(sub)
        add_worker_arguments(sub)
        sub.set_defaults(func=lambda args, _p=sub: _run(args, _p))
