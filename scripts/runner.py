"""``run_experiments``: a selection of experiments run in order into ``OUT``, then ``OUT/report.md``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from scripts.framework import ReproductionRequest, run_one, select
from scripts.report import write_report
from tff_esn.common.progress import progress_bar


def run_experiments(request: ReproductionRequest) -> tuple[Path, list[dict[str, Any]]]:
    """Runs the request's experiments in order and writes ``OUT/report.md``; returns its path and the records."""
    chosen = select(request.target)
    request.out.mkdir(parents=True, exist_ok=True)
    records = []
    start = time.perf_counter()
    overall = progress_bar(chosen, wanted=request.progress, desc=f"reproduce {request.target} ({request.profile})",
                           position=0, unit="experiment")
    for experiment in overall:
        overall.set_postfix(now=experiment.name, refresh=True)
        records.append(run_one(experiment, request))
    overall.close()
    report = write_report(request, records, seconds=time.perf_counter() - start)
    return report, records
