"""How fast the CLI answers ``--help`` (target ≤ 0.5 s, without importing TensorFlow).

Each command runs as a subprocess (``python -m tff_esn ...``, import to exit), best of
``--repeats`` (3; 1 with ``--quick``) against a bare ``python -c pass`` in the same run, and
one more subprocess builds the whole parser and reports whether ``tensorflow`` was imported
and how many modules were.
"""

from __future__ import annotations

import subprocess
import sys
import time

COMMANDS = (["--help"], ["run", "--help"], ["run", "incfed", "--help"], ["run", "fedavg", "--help"])
TARGET_S = 0.5
_PROBE = ("import sys; from tff_esn.cli import build_parser; build_parser(); "
          "print('tensorflow' in sys.modules, len(sys.modules))")


def wall(args: list[str], repeats: int) -> float:
    """Best-of-``repeats`` wall seconds of ``python ARGS`` (exit code 0 required)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], check=True, capture_output=True, timeout=300)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str]) -> None:
    repeats = 1 if "--quick" in argv else 3
    bare = wall(["-c", "pass"], repeats)
    print(f"python -c pass: {bare:.3f} s (best of {repeats}; shared machine)")
    print("command | wall s | target")
    print("--- | --- | ---")
    for command in COMMANDS:
        seconds = wall(["-m", "tff_esn", *command], repeats)
        print(f"tff-esn {' '.join(command)} | {seconds:.3f} | {'met' if seconds <= TARGET_S else 'MISSED'} "
              f"(≤ {TARGET_S} s)", flush=True)
    tf, modules = subprocess.run([sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True,
                                 timeout=300).stdout.split()
    print(f"building the parser: tensorflow imported {tf}, {modules} modules loaded")


if __name__ == "__main__":
    main(sys.argv[1:])
