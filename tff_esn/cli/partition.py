"""The partition flags (``--partition dirichlet:0.1 --clients 20``) shared by ``run`` and ``compare``."""

from __future__ import annotations

import argparse
from typing import Any

from tff_esn.cli import UsageError
from tff_esn.data.partition import PARTITIONERS, Partitioner


def partitioner(text: str) -> str:
    """``--partition``'s value checked by :meth:`Partitioner.parse` (argparse reports a bad one), as text."""
    try:
        return str(Partitioner.parse(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_partition_arguments(group: argparse._ActionsContainer) -> None:
    group.add_argument("--partition", type=partitioner, default="natural", metavar="KIND[:VALUE]",
                       help=f"how the training clients' sequences are dealt to clients: {', '.join(PARTITIONERS)} "
                            "(natural, the default: the data's own clients; e.g. iid, dirichlet:0.1 label skew, "
                            "pathological:2 classes per client, quantity:0.5 or powerlaw:1.5 size skew); seeded "
                            "by --seed; validation and test clients are kept")
    group.add_argument("--clients", type=int, default=None, metavar="N",
                       help="number of training clients of --partition (not with natural)")


def partitioned(args: argparse.Namespace, dataset: Any, split: Any) -> tuple[Any, Any, dict[str, Any]]:
    """``(dataset, split, record)`` after ``args.partition`` with ``args.clients`` (seed ``args.seed``);
    the record goes into ``metrics.json["partition"]``."""
    from tff_esn.data.partition import partition_dataset

    if (Partitioner.parse(args.partition).kind == "natural") != (args.clients is None):
        raise UsageError("--clients: give it with a --partition other than natural (e.g. --partition iid "
                         "--clients 20), and only then.")
    if args.clients is not None and args.clients < 1:
        raise UsageError(f"--clients: expected an integer ≥ 1, got {args.clients}.")
    return partition_dataset(dataset, split, args.partition, args.clients, seed=args.seed)
