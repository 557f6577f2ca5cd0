"""``tff-esn reproduce``: the repository's reproduction package ``scripts`` (beside ``tff_esn/`` in a clone,
never installed) re-runs the seeds' tables and figures. The command's flags load only when it runs."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

from tff_esn.cli import UsageError, lazy_command

HELP = "re-run the seeds' tables and figures and write report.md (from a clone of the repository)"


def reproduction() -> ModuleType:
    """The repository's ``scripts.cli``, found beside the ``tff_esn`` package of a clone (an editable install)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "scripts" / "cli.py").is_file():
        raise UsageError(f"reproduce: runs from a clone of the repository, whose scripts/ is not installed; {root} "
                         "holds none: clone the repository, pip install -e it (make venv) and run it there.")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module("scripts.cli")


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    reproduction().add_command_arguments(parser)


def register(subparsers: argparse._SubParsersAction) -> None:
    """``tff-esn reproduce``; its flags (the framework's profiles) are built when the command runs."""
    lazy_command(subparsers, "reproduce", _add_arguments, help=HELP)
