"""The ``--workers`` / ``--worker-timeout`` flags of commands that run TFF computations."""

from __future__ import annotations

import argparse

from tff_esn import runtime


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    """``--workers HOST:PORT,...`` and ``--worker-timeout SECONDS``."""
    g = parser.add_argument_group("TFF workers")
    g.add_argument("--workers", type=_workers_argument, default=None, metavar="HOST:PORT,...",
                   help="run the federated computations on these TFF workers (started with "
                        "`tff-esn worker --port P`), splitting the clients across them; default: one local worker")
    g.add_argument("--worker-timeout", type=float, default=runtime.DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="give up with an error when a worker does not answer for this long (default %(default)s)")


def _workers_argument(text: str) -> list[str]:
    try:
        return runtime.parse_workers(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
