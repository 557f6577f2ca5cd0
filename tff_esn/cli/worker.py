"""``tff-esn worker --port P --listen-all [--host H]``: serve TFF computations for ``--workers`` runs.

Runs TFF's ``worker_binary`` in the foreground until Ctrl-C or SIGTERM. The binary binds ``[::]:PORT``
with insecure gRPC, so the command refuses to start without ``--listen-all``.
"""

from __future__ import annotations

import argparse
import sys

from tff_esn import runtime


EXPOSED = ("the TFF worker_binary listens on every network interface (it has no bind-address flag) with no TLS "
           "and no authentication; anyone who reaches port {port} can run any TensorFlow graph as this user")


def _run(args: argparse.Namespace) -> int:
    if not args.listen_all:
        print(f"tff-esn worker: error: {EXPOSED.format(port=args.port)}. Start it only behind a firewall that "
              "admits just the driver (or reach it through an SSH tunnel) and pass --listen-all to confirm.",
              file=sys.stderr)
        return 2
    print(f"tff-esn worker: WARNING: {EXPOSED.format(port=args.port)}; make sure a firewall admits only the driver.",
          file=sys.stderr, flush=True)

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
                    "Runs use it with --workers HOST:PORT,... The worker listens on every interface "
                    "without authentication, so --listen-all is required.",
    )
    parser.add_argument("--port", type=int, required=True, help="TCP port to serve on")
    parser.add_argument("--listen-all", action="store_true",
                        help="required: confirm that the worker may listen on every interface without "
                             "authentication (TFF's worker_binary cannot do otherwise; see docs/scale-out.md, threat model)")
    parser.add_argument("--host", default="localhost",
                        help="name under which this machine is reached (printed and checked; the worker "
                             "binary itself listens on all interfaces) (default %(default)s)")
    parser.add_argument("--max-concurrent-calls", type=int, default=-1,
                        help="limit of parallel calls of one computation on this worker (≤ 0: none)")
    parser.add_argument("--start-timeout", type=float, default=runtime.DEFAULT_TIMEOUT, metavar="SECONDS",
                        help="seconds to wait for the worker to come up (default %(default)s)")
    parser.set_defaults(func=_run)
