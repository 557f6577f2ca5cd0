"""``python -m scripts.reservoirs [--seeds N] [--out RUN_DIR] [--page PAGE]``: IncFed and FedAvg across
reservoir topologies and depths, beside esnfed's topologies built with the same sizes, on JapaneseVowels and
BasicMotions (UEA archive) and the synthetic WESAD and HHAR.

The comparison is :func:`tff_esn.cli.compare.reservoirs.run_reservoir_comparison` (``tff-esn compare --reservoirs``)
with its defaults: 10 iid clients, FedAvg 20 rounds. Writes ``RUN_DIR``'s files (the figure among them) and the
table into the page ``PAGE`` (between its ``<!-- reservoirs-table -->`` markers).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from tff_esn.common.io import write_text_atomic
from tff_esn.cli.compare.reservoirs import ReservoirComparison, run_reservoir_comparison

UEA = "/work/uea/ex/aeon/datasets/data"
SOURCES = {
    "JapaneseVowels": f"ts:{UEA}/JapaneseVowels/JapaneseVowels",
    "BasicMotions": f"ts:{UEA}/BasicMotions/BasicMotions",
    "synthetic WESAD": "synthetic-wesad",
    "synthetic HHAR": "synthetic-hhar",
}
ROOT = Path(__file__).resolve().parent.parent
MARKER = "<!-- reservoirs-table -->"
"""The page's table sits between two of these lines."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.reservoirs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 … N − 1")
    parser.add_argument("--out", type=Path, default=Path("runs/reservoirs"))
    parser.add_argument("--page", type=Path, default=ROOT / "docs" / "reservoirs.md")
    parser.add_argument("--data", nargs="+", default=list(SOURCES), choices=list(SOURCES))
    args = parser.parse_args(argv)
    comparison = ReservoirComparison(tuple((name, SOURCES[name]) for name in args.data), seeds=tuple(range(args.seeds)))
    paths = run_reservoir_comparison(comparison, args.out)
    page = args.page.read_text()
    start, stop = page.index(MARKER) + len(MARKER), page.rindex(MARKER)
    write_text_atomic(args.page, page[:start] + "\n\n" + paths["table"].read_text() + "\n" + page[stop:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
