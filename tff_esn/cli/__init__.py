"""Command line ``tff-esn`` (also ``python -m tff_esn``): a thin layer over library calls.

Every module in this package that defines ``register(subparsers)`` adds one sub-command;
packages that build on ``tff_esn`` (``tuning``, ``discriminator``) add theirs through the
``tff_esn.commands`` entry-point group, so ``tff_esn`` never imports them. A command's
``register`` adds a sub-parser and sets ``func`` (called with the parsed arguments; its
return value is the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points

from tff_esn.data.errors import DataError
from tff_esn.runtime import WorkerError, install_exit_hooks

Register = Callable[[argparse._SubParsersAction], None]


class UsageError(ValueError):
    """Bad command-line input; printed without a traceback."""


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

    Bad input is a :class:`UsageError` (flags) or a :class:`~tff_esn.data.errors.DataError`
    (a malformed data file). ``ValueError``/``KeyError``/``FileNotFoundError`` are still
    reported the same way because the library's parameter checks raise them (issue 15
    replaces them by typed configs); every other exception keeps its traceback.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    install_exit_hooks()
    try:
        return int(args.func(args) or 0)
    except (UsageError, DataError, ValueError, FileNotFoundError, KeyError) as err:
        print(f"tff-esn {args.command}: error: {err}", file=sys.stderr)
        return 2
    except WorkerError as err:
        print(f"tff-esn {args.command}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"tff-esn {args.command}: interrupted", file=sys.stderr)
        return 130
