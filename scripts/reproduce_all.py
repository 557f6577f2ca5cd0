"""``python -m scripts.reproduce_all TARGET --profile quick --out runs``: same as ``tff-esn reproduce``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from scripts.cli import add_arguments, run
from tff_esn import runtime
from tff_esn.cli import call_command


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.reproduce_all", description=__doc__)
    add_arguments(parser)
    parser.set_defaults(func=run, holds_out=True)
    args = parser.parse_args(argv)
    runtime.install_exit_hooks()
    try:
        return call_command(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"reproduce: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
