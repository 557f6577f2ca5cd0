"""Runs every benchmark module in ``bench/`` (each defines ``main(argv)``); ``--quick`` shrinks sizes."""

import importlib
import pkgutil
import sys

import bench


def main(argv: list[str]) -> int:
    names = [m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_")]
    wanted = [a for a in argv if not a.startswith("-")] or names
    flags = [a for a in argv if a.startswith("-")]
    from tff_esn import runtime

    runtime.install_exit_hooks()
    for name in sorted(wanted):
        if name not in names:
            print(f"unknown benchmark {name!r}; available: {', '.join(sorted(names))}", file=sys.stderr)
            return 2
        print(f"\n=== bench/{name}.py ===", flush=True)
        importlib.import_module(f"bench.{name}").main(flags)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
