"""Wall time of every ``reproduce`` experiment: ``python -m bench reproduce [--quick] [--compare-tff] [--out=DIR]``.

Runs ``tff-esn reproduce all`` at ``--profile full`` (the seeds' settings; ``--quick``: the quick
profile) with the default backend in a subprocess, into ``--out`` (default a temporary folder;
a given folder resumes: experiments finished there are skipped and keep their recorded time),
and prints each experiment's wall time and the backends its runs used, read from its
``status.json``, with the total against the profile's budget (full: 60 min, quick: 30 min).
With ``--compare-tff`` the experiments with a federated backend also run with ``--backend tff``
into ``OUT/tff``, and their two wall times are printed side by side with the ratio.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_MINUTES = {"full": 60, "quick": 30}


def _reproduce(target: str, profile: str, out: Path, backend: str) -> float:
    """Runs ``tff-esn reproduce TARGET`` in a subprocess; its wall time in seconds."""
    command = [sys.executable, "-m", "tff_esn", "reproduce", target, "--profile", profile, "--out", str(out),
               "--backend", backend, "--no-progress"]
    start = time.perf_counter()
    subprocess.run(command, check=False, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _records(out: Path) -> dict[str, dict]:
    """Every experiment's ``status.json`` in ``out``, by experiment name."""
    records = {}
    for path in sorted(out.glob("*/status.json")):
        record = json.loads(path.read_text())
        records[record.get("name", path.parent.name)] = record
    return records


def _row(name: str, record: dict | None) -> str:
    if record is None:
        return f"{name:24s} {'-':>9s}  not run"
    backends = ", ".join(record.get("backends") or []) or "-"
    return f"{name:24s} {record.get('seconds', float('nan')):9.0f}  {record.get('status', '?'):8s} {backends}"


def main(argv: list[str]) -> None:
    from scripts.framework import experiments

    profile = "quick" if "--quick" in argv else "full"
    given = [a.split("=", 1)[1] for a in argv if a.startswith("--out=")]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(given[0] if given else tmp)
        wall = _reproduce("all", profile, out / "auto", "auto")
        records = _records(out / "auto")
        print(f"reproduce all --profile {profile} --backend auto: {wall / 60:.1f} min wall "
              f"(budget {BUDGET_MINUTES[profile]} min)")
        print(f"{'experiment':24s} {'seconds':>9s}  {'status':8s} backends")
        for name in experiments():
            print(_row(name, records.get(name)))
        total = sum(r.get("seconds", 0.0) for r in records.values())
        print(f"{'sum':24s} {total:9.0f}  ({total / 60:.1f} min)")
        if "--compare-tff" not in argv:
            return
        print(f"\nfederated experiments, --backend tff vs auto (--profile {profile})")
        print(f"{'experiment':24s} {'auto s':>9s} {'tff s':>9s} {'tff ÷ auto':>10s}")
        for name, experiment in experiments().items():
            if not experiment.federated:
                continue
            _reproduce(name, profile, out / "tff", "tff")
            tff = _records(out / "tff").get(name, {}).get("seconds", float("nan"))
            auto = records.get(name, {}).get("seconds", float("nan"))
            print(f"{name:24s} {auto:9.0f} {tff:9.0f} {tff / auto:10.2f}")
