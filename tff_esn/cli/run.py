"""``tff-esn run ALGORITHM --data SOURCE --out DIR``: one algorithm on one data set.

Loads, splits and runs through the registry with the config its flags (over ``--hparams``, over the
source's defaults) map to, writes ``DIR/metrics.json`` atomically and prints a summary; another
algorithm's flag is refused. Data, model and TFF are imported when a run starts.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tff_esn import algorithms
from tff_esn.cli import UsageError
from tff_esn.cli.flags import GIVEN, SHARED, add_algorithm_flags, read_hparams, run_of
from tff_esn.cli.partition import add_partition_arguments, partitioned
from tff_esn.cli.task_flags import add_task_arguments, task_options
from tff_esn.cli.preflight import add_output_arguments, check_arguments, check_layout
from tff_esn.cli.worker_flags import add_worker_arguments, context_from_args
from tff_esn.defaults import OWN_DATA_SOURCES, default_pipeline, default_split, own_data, source_kind
from tff_esn.run_warnings import merged, recording

TRAIN_FRACTIONS = (0.25, 0.5, 0.75, 1.0)
DATA_KEYS = ("pipeline", "split")
"""``--hparams`` keys that are data flags (a search writes the pipeline and split it ran on)."""


def _add_data_arguments(parser: argparse.ArgumentParser, algo: algorithms.Algorithm) -> None:
    own = "/".join(k + ":" for k in OWN_DATA_SOURCES)
    pipeline = algo.pipeline or "incfed-wesad / incfed-hhar after the source"
    g = parser.add_argument_group("data and output")
    g.add_argument("--data", default="synthetic-wesad", metavar="SOURCE",
                   help="synthetic-wesad (default), synthetic-hhar, wesad:DIR, hhar:DIR, npz:FILE, ts:DIR/NAME "
                        "(UEA/UCR NAME_TRAIN.ts and NAME_TEST.ts) or a generated series: narma10 (narmaN), "
                        "mackey-glass, lorenz, sine")
    g.add_argument("--pipeline", default=None,
                   help=f"preprocessing pipeline of the seeds' sources (default: {pipeline}); {own} data has none")
    g.add_argument("--split", default=None,
                   help=f"client split (default: the pipeline's; npz on {own} data: the file's groups, else a "
                        "seeded rule)")
    g.add_argument("--train-fraction", type=float, default=1.0, choices=TRAIN_FRACTIONS,
                   help="fraction of the training clients used (IncFed Tables V–VI)")
    g.add_argument("--ragged", choices=("pad", "crop"), default=None,
                   help="npz:FILE / ts:DIR/NAME sequences of unequal length: each at its own length (pad, the "
                        "default) or cut to the shortest (crop)")
    g.add_argument("--missing", default=None, metavar="MODE",
                   help="ts:DIR/NAME missing values ('?', NaN): refused (refuse, the default) or interpolated over "
                        "time within their dimension (interpolate)")
    add_task_arguments(g)
    add_partition_arguments(g)
    g.add_argument("--squared-inputs", action="store_true",
                   help="pfedrr-hhar / fedip-hhar: append each standardized axis' square as 6 more inputs, so the "
                        "reservoir's mean states carry the signal power (ours, not in the seeds)")
    g.add_argument("--cache-dir", default=None, help="cache of generated/preprocessed data")
    g.add_argument("--hparams", default=None, metavar="FILE",
                   help="JSON object of settings (the flags' names with '_'); flags given win over it")
    g.add_argument("--out", required=True, metavar="DIR", help="run folder; metrics.json is written there")
    add_output_arguments(g)


def data_settings(args: argparse.Namespace, algo: algorithms.Algorithm,
                  file: dict | None = None) -> tuple[str, str, dict]:
    """The pipeline and split of ``args.data`` (flag, else ``file``'s, else the default) and their
    settings records. An own-data source has no pipeline: ``--pipeline`` is a :class:`UsageError`
    there, a search file's is not applied, and the record's pipeline is ``None``."""
    own = own_data(args.data)
    if own and args.pipeline is not None:
        raise UsageError(f"--pipeline: {source_kind(args.data)}: data has no preprocessing pipeline to choose (it is "
                         "read as the file holds it); drop --pipeline.")
    values, origins = {}, {}
    for name in DATA_KEYS:
        if getattr(args, name) is not None:
            values[name], origins[name] = getattr(args, name), "flag"
        elif (file or {}).get(name) is not None and not (own and name == "pipeline"):
            values[name], origins[name] = file[name], "file"
    pipeline = values.get("pipeline") or default_pipeline(args.data, algo.pipeline)
    split = values.get("split") or default_split(args.data, pipeline)
    record = {"pipeline": {"value": None if own else pipeline, "origin": origins.get("pipeline", "default")},
              "split": {"value": split, "origin": origins.get("split", "default")}}
    return pipeline, split, record


def source_options(args: argparse.Namespace, pipeline: str) -> dict:
    """The options of ``load_source``: ``ragged`` for an ``npz:`` source given ``--ragged``,
    ``squared`` for a pipeline that has it given ``--squared-inputs``; either flag is refused
    where it does not apply."""
    import dataclasses

    from tff_esn.data.pipelines import PIPELINES

    options = task_options(args)
    own = own_data(args.data)
    if args.ragged is not None:
        if not own:
            raise UsageError(f"--ragged: applies to npz:FILE sources only (and ts:DIR/NAME), got --data {args.data}.")
        options["ragged"] = args.ragged
    if args.missing is not None:
        from tff_esn.data.ts import MISSING_MODES

        if source_kind(args.data) != "ts" or args.missing not in MISSING_MODES:
            raise UsageError(f"--missing: expected one of {', '.join(MISSING_MODES)} with a ts:DIR/NAME source, got "
                             f"--missing {args.missing} with --data {args.data}.")
        options["missing"] = args.missing
    if args.squared_inputs:
        squares = [n for n, cls in sorted(PIPELINES.items()) if "squared" in {f.name for f in dataclasses.fields(cls)}]
        if own or pipeline not in squares:
            raise UsageError(f"--squared-inputs: applies to the pipelines {', '.join(squares)}, got "
                             f"{'an npz:FILE source' if own else '--pipeline ' + pipeline}.")
        options["squared"] = True
    return options


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    algo = algorithms.get_algorithm(args.algorithm)
    file = read_hparams(args.hparams, [*algo.settings(), *DATA_KEYS]) if args.hparams else {}
    pipeline, split_name, data_record = data_settings(args, algo, file)
    run = run_of(algo, args, file, pipeline)
    if not run.tff and getattr(args, "workers", None) is not None:
        parser.error(f"--workers: {args.algorithm} with these settings runs no TFF computation "
                     "(numpy or sim backend, or no federated computation at all); drop --workers, or give "
                     "--backend tff.")
    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split
    from tff_esn.io import write_json_atomic
    from tff_esn.memory import MemoryLimitError
    from tff_esn.privacy.coverage import publish
    from tff_esn.run_checks import check_run
    from tff_esn.run_folder import clear_run

    out = check_arguments(args, run.config)
    options = source_options(args, pipeline)
    check_layout(args, options, run, split_name)
    with recording() as said:
        dataset = load_source(args.data, pipeline, cache_dir=args.cache_dir, **options)
        split = get_split(split_name, dataset, train_fraction=args.train_fraction,
                          seed=getattr(run.config, "seed", 0))
        dataset, split, partition = partitioned(args, dataset, split)
        try:  # the run's only checks, before TensorFlow is imported
            algorithms.check_takes(run.algorithm, dataset)
            check_run(run, dataset, split, test_required=not args.no_test)
        except MemoryLimitError as err:
            raise UsageError(str(err)) from None
    if run.tff:
        context_from_args(args, prestart=True)
    if args.force:
        clear_run(out)
    record = algorithms.run_algorithm(run, dataset, split, checked=True)
    record["partition"] = partition
    record["warnings"] = merged(said, record["warnings"])
    record["config"].update(data_record)
    record["cli"] = {k: v for k, v in sorted(vars(args).items()) if k not in run.record
                     and k not in ("func", "command", "algorithm", "refuse", GIVEN)}
    record = publish(record)
    path = write_json_atomic(out / "metrics.json", record)
    print(summary_line(record, path))
    return 0


def summary_line(record: dict, path: Path) -> str:
    """``ALGO on DATA: test accuracy … f1 … (random …) | up … down … floats/client × rounds | … s →
    path``; a real-valued task shows NRMSE, RMSE and R² beside its baselines' NRMSE."""
    test = record.get("test") or record.get("val") or record.get("train") or {}
    comm = record["communication"]

    def fmt(value) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    def count(value: float) -> str:
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"

    which = "test" if record.get("test") else "val" if record.get("val") else "train"
    baselines = record.get("baselines") or {}
    if "nrmse" in test:
        versus = "".join(f", {key.replace('_', ' ')} {fmt(((baselines.get(key) or {}).get(which) or {}).get('nrmse'))}"
                         for key in ("persistence", "training_mean", "lagged_ridge")
                         if (baselines.get(key) or {}).get(which))
        quality = f"{which} nrmse {fmt(test.get('nrmse'))} rmse {fmt(test.get('rmse'))} r2 {fmt(test.get('r2'))} " \
                  f"({versus[2:]})"
    else:
        versus = "".join(f", {label} {fmt(((baselines.get(key) or {}).get(which) or {}).get('accuracy'))}"
                         for key, label in (("majority", "majority"),
                                            ("logistic_regression", "logistic regression"))
                         if (baselines.get(key) or {}).get(which))
        quality = (f"{which} accuracy {fmt(test.get('accuracy'))} f1_macro {fmt(test.get('f1_macro'))} "
                   f"(random {fmt(test.get('random_baseline_accuracy'))}{versus})")
    return (
        f"{record['algorithm']} on {record['data']}: {quality} | "
        f"up {count(comm['up_floats_per_client'])} down {count(comm['down_floats_per_client'])} floats/client × "
        f"{comm['rounds']} round(s) | {record['seconds']:.1f} s{_privacy_note(record.get('privacy') or {})} → {path}"
    )


def _privacy_note(privacy: dict) -> str:
    """`` | ε … NOT PRIVATE (reasons)`` of a DP run's summary line (empty without DP)."""
    if privacy.get("mechanism", "none") == "none":
        return ""
    eps = "∞" if privacy.get("epsilon") is None else f"{privacy['epsilon']:.3g}"
    note = f" | DP ε {eps} δ {privacy.get('delta')}"
    if not privacy.get("private", True):
        note += f" NOT PRIVATE ({'; '.join(privacy.get('not_private_reasons', []))})"
    return note


def _refusal(algorithm: str, owners: dict[str, list[str]]):
    """The one-line refusal of a flag ``algorithm`` does not take but another algorithm does."""
    private = algorithms.names_where(lambda a: bool(a.privacy))

    def refuse(rest: list[str]) -> str | None:
        reasons = dict(algorithms.get_algorithm(algorithm).privacy.refused)
        for token in rest:
            flag = token.split("=", 1)[0]
            if flag not in owners:
                continue
            if flag[2:].replace("-", "_") in reasons:
                return reasons[flag[2:].replace("-", "_")]
            if flag.startswith(("--secure-", "--dp-")) and algorithm not in private:
                return f"{algorithm}: secure aggregation / DP are implemented for {', '.join(private)}; drop {flag}."
            return (f"{algorithm}: {flag} does not apply (a flag of {', '.join(owners[flag])}); "
                    f"see tff-esn run {algorithm} --help.")
        return None

    return refuse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run one algorithm and write metrics.json",
        description="Run one algorithm on one data set and write DIR/metrics.json.",
    )
    algos = parser.add_subparsers(dest="algorithm", required=True, metavar="ALGORITHM")
    owners: dict[str, list[str]] = {}
    for name, algo in algorithms.available_algorithms().items():
        sub = algos.add_parser(name, help=algo.help, description=_description(algo), allow_abbrev=False)
        _add_data_arguments(sub, algo)
        add_algorithm_flags(sub, algo, skip=SHARED)
        if algo.tff is not False:
            add_worker_arguments(sub)
        sub.set_defaults(func=lambda args, _p=sub: _run(args, _p), refuse=_refusal(name, owners),
                         holds_out=True)
        for flag in sub._option_string_actions:
            owners.setdefault(flag, []).append(name)


def _description(algo: algorithms.Algorithm) -> str:
    cost = algo.communication_function
    doc = (cost.__doc__ or "").strip().splitlines()[0] if cost is not None else ""
    return f"{algo.help}." + (f" Communication: {doc}" if doc else "")
