"""Command line ``tff-esn`` (also ``python -m tff_esn``): a thin layer over library calls.

Each module with ``register(subparsers)`` adds a sub-command (``func``, optional ``refuse``;
``holds_out``: it writes ``--out`` and runs holding its lock); ``tuning`` and
``discriminator`` add theirs through the ``tff_esn.commands`` entry points. ``--help`` imports no TensorFlow.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points
from typing import Any

from tff_esn.data.errors import DataError
from tff_esn.registry.launch import RequestError
from tff_esn.runtime import WorkerError, install_exit_hooks
from tff_esn.common.lazy import quiet_tensorflow
from tff_esn.common.run_warnings import said_once
from tff_esn.common.validation import SEED_MAX, is_count, is_finite, is_seed

Register = Callable[[argparse._SubParsersAction], None]


class UsageError(ValueError):
    """Bad command-line input; printed without a traceback (exit code 2)."""


def _count(low: int) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: is_count(v, low)), f"an integer ≥ {low}"


def _positive(what: str) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: is_finite(v) and v > 0), f"a finite {what} > 0"


FLAG_LIMITS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "seed": (is_seed, f"an integer in [0, {SEED_MAX}]"),
    "seeds": (lambda v: all(is_seed(s) for s in v), f"integers in [0, {SEED_MAX}]"),
    **dict.fromkeys(("clients", "fake_clients", "rounds", "trials", "top", "horizon", "series_clients",
                     "series_steps"), _count(1)),
    "search": _count(0),
    "minutes": _positive("number"),
    **dict.fromkeys(("worker_timeout", "start_timeout"), _positive("number of seconds")),
    "port": (lambda v: is_count(v, 1) and v <= 65535, "a TCP port in [1, 65535]"),
}
"""The limits of the flags whose values go straight to a library with its own (NumPy, scikit-learn and TensorFlow
seeds, KerasTuner's trials, gRPC's port, timers), checked by every command before it runs; the flags of a config
are checked by the config itself."""


def call_command(args: argparse.Namespace) -> int:
    """``args.func(args)`` once flags are within :data:`FLAG_LIMITS`, holding ``--out``'s run lock if ``holds_out``."""
    for name, (ok, expected) in FLAG_LIMITS.items():
        value = getattr(args, name, None)
        if value is not None and not ok(value):
            raise UsageError(f"--{name.replace('_', '-')}: expected {expected}, got {value!r}.")
    with contextlib.ExitStack() as stack:
        if getattr(args, "holds_out", False):
            from tff_esn.runs.run_folder import RunFolderError, run_lock

            try:
                stack.enter_context(run_lock(args.out))
            except RunFolderError as err:
                raise UsageError(str(err)) from None
        return int(args.func(args) or 0)


def lazy_command(subparsers: argparse._SubParsersAction, name: str, build: Callable[[argparse.ArgumentParser], None],
                 *, help: str) -> None:
    """Adds sub-command ``name`` whose flags ``build(parser)`` adds only when used, so ``tff-esn --help``
    skips their heavy imports."""
    stub = subparsers.add_parser(name, help=help, add_help=False)

    def run(args: argparse.Namespace) -> int:
        full = argparse.ArgumentParser(prog=stub.prog, description=help)
        build(full)
        return call_command(full.parse_args(getattr(args, "rest", [])))

    stub.set_defaults(func=run, lazy=True)


def _registrars() -> Iterator[Register]:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "register"):
            yield module.register
    for ep in sorted(entry_points(group="tff_esn.commands"), key=lambda e: e.name):
        yield ep.load()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tff-esn",
        description="Federated Echo State Networks on TensorFlow Federated.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in _registrars():
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parses ``argv`` and runs the command: bad input (:class:`UsageError`, ``RequestError``, :class:`DataError`)
    exits 2, a failed worker or full disk 1 (one line each); other exceptions keep their traceback."""
    quiet_tensorflow()  # before a command imports TensorFlow
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and not getattr(args, "lazy", False):
        refusal = getattr(args, "refuse", lambda _: None)(rest)
        if refusal:
            print(f"tff-esn {args.command}: error: {refusal}", file=sys.stderr)
            return 2
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if rest:
        args.rest = rest
    install_exit_hooks()
    try:
        with said_once():
            return call_command(args)
    except (UsageError, RequestError, DataError) as err:
        print(f"tff-esn {args.command}: error: {err}", file=sys.stderr)
        return 2
    except WorkerError as err:
        print(f"tff-esn {args.command}: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        print(f"tff-esn {args.command}: error: {err.filename or 'a file'}: no space left on the device "
              f"({err.strerror}); free space there and run again (the temporary files were removed).",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"tff-esn {args.command}: interrupted", file=sys.stderr)
        return 130
