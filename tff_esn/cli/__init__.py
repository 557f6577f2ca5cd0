"""Command line ``tff-esn`` (also ``python -m tff_esn``): a thin layer over library calls.

Each module with ``register(subparsers)`` adds a sub-command (``func``, optional ``refuse``); ``tuning`` and
``discriminator`` add theirs through the ``tff_esn.commands`` entry points. ``--help`` imports no TensorFlow.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import pkgutil
import sys
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points

from tff_esn.data.errors import DataError
from tff_esn.runtime import WorkerError, install_exit_hooks

Register = Callable[[argparse._SubParsersAction], None]


class UsageError(ValueError):
    """Bad command-line input; printed without a traceback (exit code 2)."""


def lazy_command(subparsers: argparse._SubParsersAction, name: str, build: Callable[[argparse.ArgumentParser], None],
                 *, help: str) -> None:
    """Adds sub-command ``name`` whose flags ``build(parser)`` adds only when the command is used.

    For commands whose flags need heavy imports (defaults of TF-backed configs, KerasTuner
    spaces): ``tff-esn --help`` lists the command without importing them; ``tff-esn NAME
    ...`` (``--help`` included) builds the full parser then and parses the rest of the line.
    """
    stub = subparsers.add_parser(name, help=help, add_help=False)

    def run(args: argparse.Namespace) -> int:
        full = argparse.ArgumentParser(prog=stub.prog, description=help)
        build(full)
        inner = full.parse_args(getattr(args, "rest", []))
        return int(inner.func(inner) or 0)

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
    """Parses ``argv`` and runs the command; bad input exits with code 2 and a one-line message.

    Bad input is a :class:`UsageError` or a :class:`~tff_esn.data.errors.DataError`; a failed worker or a
    full disk is one line with code 1; any other exception keeps its traceback.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported by a command
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
        return int(args.func(args) or 0)
    except (UsageError, DataError) as err:
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
