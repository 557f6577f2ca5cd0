"""The partition flags (``--partition dirichlet:0.1 --clients 20``) of ``run``; light: numpy and the
partitioners (:mod:`tff_esn.data.partition`) are imported when the flags are parsed."""

from __future__ import annotations

import argparse


def partitioner(text: str) -> str:
    """``--partition``'s value checked by :meth:`~tff_esn.data.partition.Partitioner.parse` (argparse reports a
    bad one), as text."""
    from tff_esn.data.partition import Partitioner

    try:
        return str(Partitioner.parse(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _groups(text: str) -> tuple[str, ...]:
    from tff_esn.data.partition import PARTITION_GROUPS

    groups = tuple(g.strip() for g in text.split(",") if g.strip())
    unknown = sorted(set(groups) - set(PARTITION_GROUPS))
    if unknown or not groups:
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(PARTITION_GROUPS)}, got {text!r}")
    return groups


def add_partition_arguments(group: argparse._ActionsContainer) -> None:
    group.add_argument("--partition", type=partitioner, default="natural", metavar="KIND[:VALUE]",
                       help="how the training clients' sequences are dealt to clients: natural (the default: the data's "
                            "own clients), iid, dirichlet:α (label skew, e.g. dirichlet:0.1), pathological:k (k "
                            "classes per client), quantity:α or powerlaw:a (size skew); seeded "
                            "by --seed; validation and test clients are kept unless --partition-groups names them")
    group.add_argument("--clients", type=int, default=None, metavar="N",
                       help="number of training clients of --partition (not with natural)")
    group.add_argument("--partition-groups", type=_groups, default=("train",), metavar="G,G",
                       help="split groups --partition deals anew: train (the default) and val and/or test, each "
                            "into --clients clients (otherwise they keep their own clients)")
