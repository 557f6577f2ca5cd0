"""``python -m scripts.docs_results RUN_DIR [--out docs/results]``: the results snapshots the docs show.

Reads the ``status.json`` and Markdown tables a ``tff-esn reproduce`` run left in ``RUN_DIR``
and writes one Markdown file per experiment it holds, ``OUT/EXPERIMENT.md``: a header with the
profile, the data (synthetic or a real copy, as the run recorded it), the seed, the git commit
of the source that ran, when it finished and its wall time; the experiment's tables (our numbers
beside the published ones where the seed has them); the published claims the run checked, with
their verdicts (a failed or not-run experiment's file says so and why). The docs'
``<!-- results: EXPERIMENT -->`` marker includes the file
(``docs/hooks.py``). Only the tables travel: CSVs, figures and run folders stay in ``RUN_DIR``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scripts.framework import CAUSES, DONE, experiments, read_status
from scripts.report import claim_text, duration, full_settings_line, settings_line
from tff_esn.common.io import write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "docs" / "results"
"""Where the docs read the snapshots from (committed; ``make docs-results`` rewrites them)."""
COMMAND = "make docs-results REPORT=RUN_DIR"
GENERATED = re.compile(r"^Generated (\d{4}-\d\d-\d\d \d\d:\d\d)", re.MULTILINE)
VERDICT_ORDER = ("agrees", "disagrees", "undetermined")


def _finished(run_dir: Path, record: dict[str, Any]) -> str:
    """When the experiment finished (its ``status.json``), else when the run's report was written."""
    if record.get("finished"):
        return record["finished"]
    report = run_dir / "report.md"
    found = GENERATED.search(report.read_text()) if report.is_file() else None
    return f"report written {found.group(1)}" if found else "not recorded"


def _claims(record: dict[str, Any]) -> list[str]:
    claims = sorted(record.get("claims", []), key=lambda c: VERDICT_ORDER.index(c["verdict"]))
    if not claims:
        return []
    counts = ", ".join(f"{v}: {sum(c['verdict'] == v for c in claims)}" for v in VERDICT_ORDER)
    lines = [f"**Published claims checked by this run** ({counts}; each criterion is applied to our numbers):", ""]
    for claim in claims:
        why = ""
        if claim["verdict"] == "disagrees":
            why = f" (because {CAUSES[claim['cause']]})" if claim.get("cause") else " (not yet explained)"
        lines.append(f"- *{claim['verdict']}*{why}: {claim_text(claim)}")
    return lines + [""]


def snapshot(run_dir: Path, record: dict[str, Any]) -> str:
    """The Markdown snapshot of one experiment's ``status.json`` ``record`` from ``run_dir``."""
    name = record["name"]
    data = record.get("data_descriptions", {})
    commit = f"`{record['commit']}`" if record.get("commit") else "not recorded"
    lines = [f"<!-- Written by `{COMMAND}` from {name}/status.json; rewrite it, do not edit. -->", "",
             f"### Our run of `{name}`", "",
             f"{record['title']}. Reproduces {record['reproduces']}.", "",
             "| profile | seed | data | source commit | finished | wall time | status |",
             "| --- | --- | --- | --- | --- | --- | --- |",
             f"| `{record.get('profile')}` | {record.get('seed')} | {'; '.join(data.values()) or '-'} | {commit} | "
             f"{_finished(run_dir, record)} | {duration(record.get('seconds'))} | {record.get('status')} |", "",
             f"Settings (profile `{record.get('profile')}`): {settings_line(record.get('settings', {}))}."]
    full = full_settings_line(name)
    if record.get("profile") != "full" and full is not None:
        lines += ["", f"The seeds' settings (`--profile full`): {full}."]
    lines.append("")
    if record.get("status") != DONE:
        lines += ["!!! failure \"This experiment did not finish in the run\"",
                  f"    {record.get('status')}: {record.get('reason', '')}", ""]
    synthetic = [kind.upper() for kind, source in record.get("data", {}).items() if str(source).startswith("synthetic")]
    if synthetic:
        lines += ["!!! warning \"Synthetic data\"",
                  f"    Our {' and '.join(synthetic)} numbers come from tff_esn's synthetic generator, not the real "
                  "data sets the published columns were measured on: they show how our implementation behaves, not "
                  "the published values. `tff-esn reproduce ... --wesad-dir DIR --hhar-dir DIR` runs them on real "
                  "copies.", ""]
    for table in record.get("tables", []):
        md = run_dir / name / table["md"]
        if not md.is_file():
            raise FileNotFoundError(f"{md}: listed by {name}/status.json but missing; re-run "
                                    f"`tff-esn reproduce {name} --force --out {run_dir}`.")
        lines += [md.read_text().rstrip(), ""]
    figures = record.get("figures", [])
    if figures:
        lines += [f"Figures of this run (PNG in the run folder's `{name}/`, not copied here): "
                  + "; ".join(f"{figure['title']} (`{figure['png']}`)" for figure in figures) + ".", ""]
    return "\n".join(lines + _claims(record)).rstrip() + "\n"


def write_snapshots(run_dir: Path, out: Path = SNAPSHOTS) -> list[Path]:
    """Writes ``out/EXPERIMENT.md`` for every registered experiment ``run_dir`` holds a
    ``status.json`` of; snapshots of experiments the run does not hold are left as they are.

    Raises:
        FileNotFoundError: ``run_dir`` holds no experiment of :func:`scripts.framework.experiments`.
    """
    records = [r for r in (read_status(run_dir / name) for name in experiments()) if r is not None]
    if not records:
        raise FileNotFoundError(f"{run_dir}: no experiment's status.json; run `tff-esn reproduce all --out "
                                f"{run_dir}` (or `make reproduce`) first.")
    out.mkdir(parents=True, exist_ok=True)
    return [write_text_atomic(out / f"{r['name']}.md", snapshot(run_dir, r)) for r in records]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.docs_results", description=__doc__.split("\n\n")[1])
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="the --out folder of `tff-esn reproduce`")
    parser.add_argument("--out", type=Path, default=SNAPSHOTS, help=f"snapshot folder (default: {SNAPSHOTS})")
    args = parser.parse_args(argv)
    try:
        written = write_snapshots(args.run_dir, args.out)
    except FileNotFoundError as err:
        print(f"docs_results: error: {err}", file=sys.stderr)
        return 2
    records = [read_status(args.run_dir / path.stem) for path in written]
    for record in records:
        print(f"  {record['name']:<24} {record.get('status')} ({record.get('profile')})", file=sys.stderr)
    if any(record.get("profile") == "tiny" for record in records):
        print("docs_results: warning: profile tiny only checks the machinery; its numbers are not results "
              "(`make reproduce` runs the quick profile).", file=sys.stderr)
    missing = sorted(set(experiments()) - {path.stem for path in written})
    if missing:
        print(f"docs_results: {args.run_dir} does not hold {', '.join(missing)}; their snapshots are left as they "
              "are.", file=sys.stderr)
    print(f"wrote {len(written)} snapshot(s) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
