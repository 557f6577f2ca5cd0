"""``report.md``: every experiment's tables and figures, the run's provenance and the claim list.

The report is rebuilt from the ``status.json`` of every experiment folder in the run folder
(also those finished by an earlier invocation), so it always describes the whole folder. It
states the data each experiment used (synthetic or a real path), the profile, the seed, the
package versions, the wall time per experiment, and lists the published claims this run
agrees with, disagrees with, or could not decide.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from scripts.framework import CAUSES
from tff_esn.common.io import write_text_atomic

PACKAGES = ("tff_esn", "tensorflow", "tensorflow-federated", "keras", "keras-tuner", "tensorflow-addons",
            "neurokit2", "numpy", "scipy", "scikit-learn", "pandas", "matplotlib")

PROFILE_TEXT = {
    "tiny": "tiny (test profile: minimal sizes, checks the machinery only)",
    "quick": "quick (`make reproduce`: fewer repetitions, rounds, units and trials than the seeds, "
             "sized to finish in about 30 minutes on a 2-core machine; each experiment lists its settings)",
    "full": "full (the seeds' settings: repetitions, rounds, units and trial budgets as published)",
}


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def duration(seconds: float | None) -> str:
    """A wall time as ``6 min 34 s`` (``5.0 s`` under a minute, ``-`` when unknown)."""
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{seconds:.1f} s"


def _records_in(out: Path, current: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This invocation's records, then earlier finished ones found in ``out`` (experiment order)."""
    from scripts.framework import experiments, read_status

    seen = {r["name"] for r in current}
    earlier = []
    for name in experiments():
        if name not in seen:
            record = read_status(out / name)
            if record is not None:
                earlier.append(record)
    order = {name: i for i, name in enumerate(experiments())}
    return sorted(current + earlier, key=lambda r: order.get(r["name"], len(order)))


def backends(record: dict[str, Any]) -> str:
    """The backend(s) that ran an experiment's FedAvg/FedCurv rounds, as its runs recorded them (``-``: none)."""
    return ", ".join(record.get("backends") or []) or "-"


def settings_line(settings: dict[str, Any]) -> str:
    """An experiment's settings as ``name=value, ...`` (without the progress bar's ``steps``)."""
    return ", ".join(f"{k}={v}" for k, v in settings.items() if k != "steps")


def full_settings_line(name: str) -> str | None:
    """Experiment ``name``'s settings in profile ``full`` (the seeds' settings) as :func:`settings_line`;
    ``None`` for a name that is not a registered experiment."""
    from scripts.framework import experiments

    known = experiments().get(name)
    return None if known is None else settings_line(dataclasses.asdict(known.settings["full"]))


def claim_text(claim: dict[str, Any]) -> str:
    """One claim of a ``status.json``: the statement, where it is published, our evidence and,
    for a disagreement, why."""
    why = f" *Why:* {claim['reason']}" if claim.get("reason") else ""
    return f"**{claim['statement']}** ({claim['reference']}) — {claim['evidence']}{why}"


def _claims(records: list[dict[str, Any]]) -> list[str]:
    lines = ["## Published claims checked by this run", ""]
    lines += ["Each claim is checked with the criterion stated beside it on *our* numbers; on synthetic data an "
              "agreement means the qualitative behaviour is reproduced by our implementation on our data, not "
              "that the published values are.", ""]
    def item(r: dict[str, Any], c: dict[str, Any]) -> str:
        return f"- {claim_text(c)} [`{r['name']}`]"

    for verdict, heading in (("agrees", "Agrees"), ("disagrees", "Disagrees"), ("undetermined", "Undetermined")):
        items = [(r, c) for r in records for c in r.get("claims", []) if c["verdict"] == verdict]
        lines += [f"### {heading} ({len(items)})", ""]
        if verdict == "disagrees" and items:
            for cause, label in (*CAUSES.items(), (None, "not yet explained (a defect of ours until shown otherwise)")):
                group = [(r, c) for r, c in items if c.get("cause") == cause]
                lines += [f"#### Because of {label} ({len(group)})", ""]
                lines += [item(r, c) for r, c in group] or ["- none"]
                lines.append("")
            continue
        lines += [item(r, c) for r, c in items]
        lines += ["- none"] if not items else []
        lines.append("")
    unchecked = [r for r in records if r.get("status") != "done"]
    if unchecked:
        lines += ["### Not checked (experiment not run or failed)", ""]
        lines += [f"- `{r['name']}` ({r['reproduces']}): {r.get('status')} — {r.get('reason', '')}" for r in unchecked]
        lines.append("")
    return lines


def _experiment_section(out: Path, record: dict[str, Any]) -> list[str]:
    name = record["name"]
    lines = [f"### `{name}` — {record['title']}", ""]
    lines.append(f"Reproduces: {record['reproduces']}. Status: **{record.get('status')}**"
                 + (f" — {record['reason']}" if record.get("reason") else "")
                 + f". Wall time: {duration(record.get('seconds'))}"
                 + (" (finished earlier, skipped in this invocation)" if record.get("skipped") else "") + ".")
    lines.append("")
    data = record.get("data_descriptions", {})
    if data:
        lines.append("Data: " + "; ".join(data.values()) + ".")
    lines.append(f"Profile `{record.get('profile')}`, seed {record.get('seed')}: {settings_line(record.get('settings', {}))}.")
    if record.get("backends"):
        lines.append(f"Federated rounds ran on the {' and '.join(record['backends'])} backend"
                     f"{'s' if len(record['backends']) > 1 else ''} (as the runs' metrics.json record).")
    full = full_settings_line(name)
    if record.get("profile") != "full" and full is not None:
        lines.append(f"Profile `full` (the seeds' settings): {full}.")
    lines.append("")
    if record.get("status") == "failed":
        lines += [f"The traceback is in [{name}/error.txt]({name}/error.txt).", ""]
    for table in record.get("tables", []):
        md = out / name / table["md"]
        lines += [md.read_text().rstrip() if md.exists() else f"(missing {table['md']})", "",
                  f"[CSV]({name}/{table['csv']}) · [Markdown]({name}/{table['md']})", ""]
    for figure in record.get("figures", []):
        lines += [f"![{figure['title']}]({name}/{figure['png']})", "", f"*{figure['title']}*", ""]
    for note in record.get("notes", []):
        lines += [f"- {note}"]
    if record.get("notes"):
        lines.append("")
    return lines


def write_report(request, records: list[dict[str, Any]], *, seconds: float) -> Path:
    """Writes ``OUT/report.md`` for ``request`` (a :class:`scripts.framework.ReproductionRequest`)."""
    out = request.out
    records = _records_in(out, records)
    kinds = (tuple(k for k in ("wesad", "hhar", "npz") if any(k in r.get("data", {}) for r in records))
             or ("wesad", "hhar"))
    synthetic = [k for k in kinds if request.data.synthetic(k)]
    lines = ["# Reproduction report", "",
             f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')} by `tff-esn reproduce {request.target} "
             f"--profile {request.profile}` into `{out}`.", ""]
    lines += ["## Data, profile, seeds", ""]
    for kind in kinds:
        lines.append(f"- {kind.upper()}: {request.data.describe(kind)} (`{request.data.source(kind)}`)")
    lines.append(f"- Profile: {PROFILE_TEXT[request.profile]}")
    lines.append(f"- Seed: {request.seed} (reservoirs, splits, sampling, noise; repetition r uses seed {request.seed} + r)")
    lines.append(f"- Wall time of this invocation: {duration(seconds)}")
    lines.append("")
    if synthetic:
        names = " and ".join(k.upper() for k in synthetic)
        lines += [f"> **The {names} numbers below were obtained on synthetic data generated by tff_esn.** They are "
                  "not a reproduction of the published numbers, which the seeds' authors obtained on the real data "
                  "sets; the published columns are printed beside ours for reference only. Run with "
                  "`--wesad-dir DIR` / `--hhar-dir DIR` on a real copy to compare numbers.", ""]
    lines += ["## Summary", "", "| experiment | reproduces | data | backend | status | wall time | tables | figures |",
              "|---|---|---|---|---|---|---|---|"]
    for r in records:
        data = ", ".join(("synthetic " if r.get("data", {}).get(k, "").startswith("synthetic") else "real ") + k
                         for k in r.get("data", {}))
        lines.append(f"| [`{r['name']}`](#{r['name']}) | {r['reproduces']} | {data} | {backends(r)} | "
                     f"{r.get('status')} | "
                     f"{duration(r.get('seconds'))}{' (earlier)' if r.get('skipped') else ''} | "
                     f"{len(r.get('tables', []))} | {len(r.get('figures', []))} |")
    lines.append("")
    lines += _claims(records)
    lines += ["## Experiments", ""]
    for record in records:
        lines += [f'<a id="{record["name"]}"></a>', ""] + _experiment_section(out, record)
    lines += ["## Environment", "", f"- Python {sys.version.split()[0]} on {platform.platform()}, "
              f"{os.cpu_count()} CPU(s)", ""]
    lines += ["| package | version |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in package_versions().items()]
    lines.append("")
    return write_text_atomic(out / "report.md", "\n".join(lines))
