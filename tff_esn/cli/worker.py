"""``tff-esn worker --port P [--host H]``: serve TFF computations for ``--workers`` runs.

Runs TFF's own C++ ``worker_binary`` in the foreground (:func:`tff_esn.runtime.serve_worker`)
until Ctrl-C or SIGTERM, then stops it and exits with 0. Other machines (or processes)
use it with ``tff-esn run ALGORITHM --workers H:P,H2:P2``. The worker listens on every
network interface of this machine and has no authentication: run it only on a trusted
network.
"""

from __future__ import annotations

import argparse
import sys

from tff_esn import runtime


def _run(args: argparse.Namespace) -> int:
    def ready(address: str) -> None:
        print(f"tff-esn worker: serving TFF computations at {address} (listening on all interfaces, port "
              f"{args.port}); stop with Ctrl-C or SIGTERM", flush=True)

    try:
        code = runtime.serve_worker(args.port, host=args.host, timeout=args.start_timeout,
                                    max_concurrent_computation_calls=args.max_concurrent_calls, ready=ready)
    except runtime.WorkerError as err:
        print(f"tff-esn worker: error: {err}", file=sys.stderr)
        return 1
    if code:
        print(f"tff-esn worker: the TFF worker exited by itself with code {code}.", file=sys.stderr)
        return 1
    print("tff-esn worker: stopped", flush=True)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "worker", help="serve TFF computations for runs with --workers",
        description="Start a TFF worker in the foreground (stops on Ctrl-C / SIGTERM). "
                    "Runs use it with --workers HOST:PORT,...",
    )
    parser.add_argument("--port", type=int, required=True, help="TCP port to serve on")
    parser.add_argument("--host", default="localhost",
                        help="name under which this machine is reached (printed and checked; the worker "
                             "binary itself listens on all interfaces) (default %(default)s)")
    parser.add_argument("--max-concurrent-calls", type=int, default=-1,
                        help="limit of parallel calls of one computation on this worker (≤ 0: none)")
    parser.add_argument("--start-timeout", type=float, default=runtime.DEFAULT_TIMEOUT, metavar="SECONDS",
                        help="seconds to wait for the worker to come up (default %(default)s)")
    parser.set_defaults(func=_run)
