"""``tff-esn run``'s checks before any work: arguments and the data's memory (from the shape of
its sequences) before the data loads. Each refusal is one line with exit code 2."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tff_esn.cli import UsageError
from tff_esn.run_warnings import RunWarning

if TYPE_CHECKING:
    from tff_esn.algorithms import ResolvedRun


def check_arguments(args: argparse.Namespace, config: Any) -> Path:
    """The run folder after :func:`tff_esn.run_folder.check_run_folder`; also refuses a ``--data``
    of no known form (a bare path: ``npz:PATH`` is suggested)."""
    from tff_esn.data.source_names import parse_source
    from tff_esn.run_folder import RunFolderError, check_run_folder

    try:
        parse_source(args.data)
    except ValueError as err:
        raise UsageError(f"--data: {err}") from None
    try:
        return check_run_folder(args.out, force=args.force, resume=getattr(config, "resume", False),
                                rounds=getattr(config, "rounds", None), resumable=hasattr(config, "resume"))
    except RunFolderError as err:
        raise UsageError(str(err)) from None


def check_layout(args: argparse.Namespace, options: dict, run: ResolvedRun, split_name: str) -> None:
    """Refuses an own-data source whose run cannot fit in memory, from the shape of its sequences
    read before their values load (:func:`tff_esn.data.sources.source_layout`), then an ``npz`` whose
    split would mislead (:func:`tff_esn.data.checks.check_split` on its labels, clients and groups, ``X`` unread)."""
    from tff_esn.cli.partition import partitioned
    from tff_esn.data.checks import check_split
    from tff_esn.data.sequences import npz_stand_in
    from tff_esn.data.source_names import parse_source
    from tff_esn.data.sources import source_layout
    from tff_esn.data.splits import get_split
    from tff_esn.memory import MemoryLimitError, check_memory

    layout = source_layout(args.data, **options)
    if layout is None:
        return
    try:
        check_memory(run.config, layout, tff=run.tff)
    except MemoryLimitError as err:
        raise UsageError(str(err)) from None
    kind, path = parse_source(args.data)
    stand_in = npz_stand_in(path) if kind == "npz" else None
    if stand_in is not None:
        split = get_split(split_name, stand_in, train_fraction=args.train_fraction, seed=getattr(run.config, "seed", 0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RunWarning)
            stand_in, split, _ = partitioned(args, stand_in, split)
            check_split(stand_in, split, federated=not run.algorithm.pooled,
                        test_required=not args.no_test)


def add_output_arguments(group: argparse._ArgumentGroup) -> None:
    """``--force`` and ``--no-test``."""
    group.add_argument("--force", action="store_true",
                       help="overwrite the run in --out (its metrics.json, rounds.csv, checkpoints/, tensorboard/)")
    group.add_argument("--no-test", action="store_true",
                       help="run a split without test clients on purpose (else refused)")
