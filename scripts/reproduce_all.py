"""``python -m scripts.reproduce_all TARGET --profile quick --out runs``: same as ``tff-esn reproduce``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from scripts.cli import add_arguments, run
from tff_esn import runtime


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.reproduce_all", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    runtime.install_exit_hooks()
    try:
        return run(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"reproduce: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
