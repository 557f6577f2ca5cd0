"""``tff-esn run ALGORITHM --data SOURCE --out DIR``: one algorithm on one data set.

The flags become one :class:`~tff_esn.registry.launch.RunRequest` (flags over ``--hparams``), which
:func:`~tff_esn.registry.launch.launch` carries out; prints the summary line. Another algorithm's flag is
refused. Data, model and TFF are imported when a run starts.
"""

from __future__ import annotations

import argparse

from typing import Any

from tff_esn.registry import algorithms
from tff_esn import runtime
from tff_esn.cli import UsageError
from tff_esn.cli.flags import add_algorithm_flags, given, read_hparams
from tff_esn.cli.summary import summary_line
from tff_esn.data.source_names import is_series
from tff_esn.registry.defaults import DATA_KEYS, OWN_DATA_SOURCES
from tff_esn.registry.launch import SHARED, RunRequest, launch
from tff_esn.common.tasks import TASK_KINDS, Task

TRAIN_FRACTIONS = (0.25, 0.5, 0.75, 1.0)
SERIES_FLAGS = {"series_clients": "clients", "series_steps": "steps", "series_split": "split_by"}


def partitioner(text: str) -> str:
    """``--partition``'s value checked by :meth:`~tff_esn.data.partition.Partitioner.parse`, as text."""
    from tff_esn.data.partition import Partitioner

    try:
        return str(Partitioner.parse(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _groups(text: str) -> tuple[str, ...]:
    from tff_esn.data.partition import PARTITION_GROUPS

    groups = tuple(g.strip() for g in text.split(",") if g.strip())
    if not groups or not set(groups) <= set(PARTITION_GROUPS):
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(PARTITION_GROUPS)}, got {text!r}")
    return groups


def _workers(text: str) -> list[str]:
    try:
        return runtime.parse_workers(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _add_data_arguments(parser: argparse.ArgumentParser, algo: algorithms.Algorithm) -> None:
    own = "/".join(k + ":" for k in OWN_DATA_SOURCES)
    pipeline = algo.pipeline or "incfed-wesad / incfed-hhar after the source"
    g = parser.add_argument_group("data and output")
    g.add_argument("--data", default="synthetic-wesad", metavar="SOURCE",
                   help="synthetic-wesad (default), synthetic-hhar, wesad:DIR, hhar:DIR, npz:FILE, csv:FILE (own "
                        "series, a column per channel), ts:DIR/NAME "
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
                   help="npz:FILE / csv:FILE / ts:DIR/NAME sequences of unequal length: each at its own length "
                        "(pad, the default) or cut to the shortest (crop)")
    g.add_argument("--missing", default=None, metavar="MODE",
                   help="ts:DIR/NAME missing values ('?', NaN): refused (refuse, the default) or interpolated over "
                        "time within their dimension (interpolate)")
    g.add_argument("--task", choices=TASK_KINDS, default=None,
                   help="what the readout predicts: classes (classify), a channel --horizon steps ahead "
                        "(forecast) or a file's real y (regress); default: what the data holds (forecast on a "
                        "generated series)")
    g.add_argument("--standardize", choices=("auto", "on", "off"), default="auto",
                   help="standardise inputs and real targets on the training clients' summed statistics (metrics in "
                        "both units); auto (the default): a forecast of own data (npz:, csv:, ts:), refused under DP")
    g.add_argument("--series-range", type=_series_range, default=None, metavar="LO,HI[,LO,HI…]",
                   help="standardise a forecast by stated public ranges instead of the training clients' statistics: "
                        "each channel's [LO, HI] to [−1, 1] (one pair for every channel, or one per input channel); "
                        "configuration, no client data, so a DP run standardises too")
    g.add_argument("--free-run", type=int, default=None, metavar="STEPS",
                   help="--task forecast --horizon 1: also score free runs of STEPS steps (the forecast fed back as "
                        "the next input) on the validation and test series: NRMSE per step and over the window, "
                        "valid prediction time")
    g.add_argument("--horizon", type=int, default=None, metavar="H",
                   help="--task forecast: predict the target channel H steps after the states (default 1)")
    g.add_argument("--target", default=None, metavar="CHANNEL",
                   help="--task forecast: the channel predicted (default: the series' own: y of narma, x of "
                        "mackey-glass and lorenz)")
    g.add_argument("--series-clients", type=int, default=None, metavar="N",
                   help="generated series: training clients (default 10; one validation and one test client follow)")
    g.add_argument("--series-steps", type=int, default=None, metavar="T",
                   help="generated series: steps per client (default 1000)")
    g.add_argument("--series-split", choices=("segments", "realisations"), default=None,
                   help="generated series: clients are contiguous segments of one realisation (default) or "
                        "realisations of their own (other initial conditions / inputs: non-IID)")
    g.add_argument("--partition", type=partitioner, default="natural", metavar="KIND[:VALUE]",
                   help="how the training clients' sequences are dealt to clients: natural (the default: the data's "
                        "own clients), iid, dirichlet:α (label skew, e.g. dirichlet:0.1), pathological:k (k "
                        "classes per client), quantity:α or powerlaw:a (size skew); seeded "
                        "by --seed; validation and test clients are kept unless --partition-groups names them")
    g.add_argument("--clients", type=int, default=None, metavar="N",
                   help="number of training clients of --partition (not with natural)")
    g.add_argument("--partition-groups", type=_groups, default=("train",), metavar="G,G",
                   help="split groups --partition deals anew: train (the default) and val and/or test, each "
                        "into --clients clients (otherwise they keep their own clients)")
    g.add_argument("--squared-inputs", action="store_true",
                   help="pfedrr-hhar / fedip-hhar: append each standardized axis' square as 6 more inputs, so the "
                        "reservoir's mean states carry the signal power (ours, not in the seeds)")
    g.add_argument("--cache-dir", default=None, help="cache of generated/preprocessed data")
    g.add_argument("--hparams", default=None, metavar="FILE",
                   help="JSON object of settings (the flags' names with '_'); flags given win over it")
    g.add_argument("--out", required=True, metavar="DIR", help="run folder; metrics.json is written there")
    g.add_argument("--force", action="store_true",
                   help="overwrite the run in --out (its metrics.json, rounds.csv, checkpoints/, tensorboard/)")
    g.add_argument("--no-test", action="store_true", help="run a split without test clients on purpose (else refused)")


def _series_range(text: str) -> tuple[float, ...]:
    """``--series-range``'s comma list of numbers (pairs checked against the data's channels at the run)."""
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers LO,HI[,LO,HI…], got {text!r}") from None


def source_options(args: argparse.Namespace) -> dict[str, Any]:
    """``load_source``'s options from flags (``task``, series, ``ragged``, ``missing``, ``squared``);
    an inapplicable flag is a :class:`UsageError`."""
    kind = args.data.partition(":")[0]
    series = is_series(kind) and ":" not in args.data
    flag = {k: getattr(args, k, None) for k in ("task", "horizon", "target", *SERIES_FLAGS)}  # compare has none
    task = flag["task"] or ("forecast" if series else None)
    if task is None and kind in ("npz", "csv"):
        from tff_esn.data.sources import AMBIGUOUS_Y, ambiguous_targets, source_task

        if ambiguous_targets(args.data):
            raise UsageError(f"{args.data}: {AMBIGUOUS_Y}.")
        task = source_task(args.data)
    if task != "forecast" and (flag["horizon"] is not None or flag["target"] is not None):
        raise UsageError("--horizon/--target: apply to --task forecast only.")
    options: dict[str, Any] = {}
    if task is not None:
        try:
            options["task"] = Task(task, flag["horizon"] or 1, flag["target"]) if task == "forecast" else Task(task)
        except ValueError as err:
            raise UsageError(str(err)) from None
    given = {k: flag[k] for k in SERIES_FLAGS if flag[k] is not None}
    if given and not series:
        raise UsageError(f"--{next(iter(given)).replace('_', '-')}: applies to a generated series (narma10, "
                         f"mackey-glass, lorenz, sine), got --data {args.data}.")
    if series:
        options.update({SERIES_FLAGS[k]: v for k, v in given.items()}, seed=getattr(args, "seed", None) or 0)
    if args.ragged is not None:
        if kind not in OWN_DATA_SOURCES:
            raise UsageError(f"--ragged: applies to npz:FILE sources only (and csv:FILE, ts:DIR/NAME), got --data "
                             f"{args.data}.")
        options["ragged"] = args.ragged
    if args.missing is not None:
        from tff_esn.data.ts import MISSING_MODES

        if kind != "ts" or args.missing not in MISSING_MODES:
            raise UsageError(f"--missing: expected one of {', '.join(MISSING_MODES)} with a ts:DIR/NAME source, got "
                             f"--missing {args.missing} with --data {args.data}.")
        options["missing"] = args.missing
    if getattr(args, "squared_inputs", False):
        options["squared"] = True
    return options


def request_of(args: argparse.Namespace, recorded: tuple[str, ...] = (),
               known: tuple[str, ...] | None = None) -> RunRequest:
    """The run ``args`` ask for: settings over ``--hparams``'s (``known`` keys); ``recorded`` flags go to ``cli``."""
    options = source_options(args)
    natural = args.partition.split(":")[0] == "natural"
    if natural != (args.clients is None) or (natural and set(args.partition_groups) != {"train"}):
        raise UsageError("--clients/--partition-groups: give them with a --partition other than natural (e.g. "
                         "--partition iid --clients 20), and only then.")
    flags = {**given(args), **{k: getattr(args, k) for k in DATA_KEYS if getattr(args, k) is not None}}
    return RunRequest(
        args.algorithm, args.out, args.data, (("flag", flags), ("file", read_hparams(args.hparams, known))),
        options, args.train_fraction, args.partition, args.clients, args.partition_groups,
        args.cache_dir, args.force, not args.no_test, getattr(args, "workers", None),
        getattr(args, "worker_timeout", None), {k: v for k, v in sorted(vars(args).items()) if k in recorded},
        getattr(args, "standardize", "auto"), getattr(args, "free_run", None), getattr(args, "series_range", None))


def _run(args: argparse.Namespace, recorded: tuple[str, ...], known: tuple[str, ...]) -> int:
    request = request_of(args, recorded, known)
    record, path = launch(request)
    print(summary_line(record, path))
    return 0


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
            w = sub.add_argument_group("TFF workers")
            w.add_argument("--workers", type=_workers, default=None, metavar="HOST:PORT,...",
                           help="run the federated computations on these TFF workers (started with "
                                "`tff-esn worker --port P`), splitting the clients across them; default: one local "
                                "worker")
            w.add_argument("--worker-timeout", type=float, default=runtime.DEFAULT_TIMEOUT, metavar="SECONDS",
                           help="give up with an error when a worker does not answer for this long (default "
                                "%(default)s)")
        recorded = tuple(sorted({a.dest for a in sub._actions} - {"help", *DATA_KEYS, *algo.settings()}))
        known = (*algo.settings(), *DATA_KEYS)
        sub.set_defaults(func=lambda args, _r=recorded, _k=known: _run(args, _r, _k), refuse=_refusal(name, owners),
                         holds_out=True)
        for flag in sub._option_string_actions:
            owners.setdefault(flag, []).append(name)


def _description(algo: algorithms.Algorithm) -> str:
    cost = algo.communication_function
    doc = (cost.__doc__ or "").strip().splitlines()[0] if cost is not None else ""
    return f"{algo.help}." + (f" Communication: {doc}" if doc else "")
