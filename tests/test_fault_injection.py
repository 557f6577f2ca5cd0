"""Kill -9 anywhere: ``tff-esn run fedavg`` and ``tff-esn reproduce`` killed at seeded
random moments leave no partial file that reads back as valid and no TFF worker, and a re-run
(``--resume`` for ``run``; ``reproduce`` resumes by itself) ends with the metrics of an
uninterrupted run.

Each kill is independent: a fresh output folder, the command killed with SIGKILL after a delay
drawn uniformly from (0.5 s, the wall time of an uninterrupted run on the warm cache), the files
checked, then the same command run to its end and compared with the reference (the first,
uninterrupted run). The data cache is shared by all runs
of a module (it is written atomically too, and killed writers must not damage it). The
default suite kills ``run fedavg`` once; ``make test-slow`` kills each command 10 times.
"""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tff_esn.runs.run_folder import rounds_done

SEED = 16
SLOW_KILLS = 10
FEDAVG = ["run", "fedavg", "--data", "synthetic-wesad", "--pipeline", "thesis", "--rounds", "5", "--units", "12",
          "--no-progress"]
REPRODUCE = ["reproduce", "thesis-federated", "--profile", "tiny", "--no-progress"]
TIMED_COLUMNS = ("seconds",)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid`` or ``None`` when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rfind(")") + 2:].split()
    return fields[0], int(fields[1])


def _descendants(root: int) -> set[int]:
    """Pids of the children, grandchildren, ... of ``root``."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (info := _stat(int(entry))) is not None:
            parents[int(entry)] = info[1]
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    info = _stat(pid)
    return info is not None and info[0] != "Z"


def _command(args: list[str], out: Path, cache: Path) -> list[str]:
    return [sys.executable, "-m", "tff_esn", *args, "--out", str(out), "--cache-dir", str(cache)]


def _env() -> dict[str, str]:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def _complete(cmd: list[str], log: Path) -> float:
    """Runs ``cmd`` to its end (exit code 0 required); returns its wall time."""
    began = time.monotonic()
    with open(log, "ab") as fh:
        code = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(), timeout=900).returncode
    assert code == 0, f"{' '.join(cmd)} exited with {code}:\n{log.read_text()[-3000:]}"
    return time.monotonic() - began


def _kill_after(cmd: list[str], delay: float, log: Path, until=None) -> bool:
    """Starts ``cmd``, SIGKILLs it after ``delay`` s; asserts that every process it started is gone.

    Returns False when the command ended by itself before the delay (nothing was killed).
    ``until``: a condition that, once true, kills the command before the delay.
    """
    with open(log, "ab") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env())
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline and proc.poll() is None and not (until is not None and until()):
            seen |= _descendants(proc.pid)
            time.sleep(0.05)
        if proc.poll() is not None:
            assert proc.returncode == 0, log.read_text()[-3000:]
            return False
        seen |= _descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in seen if _alive(p)]
    for pid in left:  # clean up before failing, by pid
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes of the killed run survived it: {left}"
    return True


def _check_files(out: Path) -> None:
    """Every file a later run reads back is whole: JSON parses, CSV rows have the header's
    width, every round checkpoint loads with its round."""
    for path in out.rglob("*.json"):
        json.loads(path.read_text())
    for path in out.rglob("*.csv"):
        rows = list(csv.reader(path.open()))
        assert rows and all(len(r) == len(rows[0]) for r in rows), f"{path}: ragged or empty CSV {rows[-2:]}"
    for checkpoint in out.rglob("checkpoints/state.npz"):
        with np.load(checkpoint, allow_pickle=False) as saved:
            assert int(saved["round"]) >= 1 and all(saved[name].size >= 1 for name in saved.files), \
                f"{checkpoint}: an incomplete checkpoint is in place"


def _csv_without_times(path: Path) -> list[dict[str, str]]:
    return [{k: v for k, v in row.items() if k not in TIMED_COLUMNS} for row in csv.DictReader(path.open())]


def _results(out: Path) -> dict[str, object]:
    """What must be identical between runs: every metrics.json's scores, communication and
    weights, every CSV (minus wall times), every experiment status."""
    found: dict[str, object] = {}
    for path in sorted(out.rglob("metrics.json")):
        record = json.loads(path.read_text())
        found[str(path.relative_to(out))] = {
            **{k: record.get(k) for k in ("train", "val", "test", "communication")},
            "weights": (record.get("extra") or {}).get("weights")}
    for path in sorted(out.rglob("*.csv")):
        found[str(path.relative_to(out))] = _csv_without_times(path)
    for path in sorted(out.rglob("status.json")):
        found[str(path.relative_to(out))] = json.loads(path.read_text())["status"]
    return found


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def fedavg_reference(cache, tmp_path_factory):
    out = tmp_path_factory.mktemp("fedavg-reference")
    seconds = _complete(_command(FEDAVG, out, cache), out.parent / "fedavg-reference.log")
    return out, seconds


def _warm_seconds(args: list[str], cache: Path, tmp: Path) -> float:
    """Wall time of an uninterrupted run once the caches are filled (the window of the kills)."""
    return _complete(_command(args, tmp / "warm", cache), tmp / "warm.log")


def _kill_and_rerun(args: list[str], rerun_flags: list[str], reference: Path, window: float, cache: Path,
                    tmp: Path, kills: int, seed: int) -> dict[str, int]:
    """Independent kill → check → re-run → compare cycles until ``kills`` runs were killed (a run
    that ends before its delay counts as finished, and another cycle is drawn; at most 2 × kills
    cycles); returns the tally."""
    expected = _results(reference)
    rng = np.random.default_rng(seed)
    tally = {"kills": 0, "finished_before_kill": 0, "reruns": 0, "identical": 0}
    for i in range(2 * kills):
        if tally["kills"] == kills:
            break
        out = tmp / f"kill{i}"
        log = tmp / f"kill{i}.log"
        delay = float(rng.uniform(0.5, window))
        killed = _kill_after(_command(args, out, cache), delay, log)
        tally["kills" if killed else "finished_before_kill"] += 1
        _check_files(out)
        _complete(_command(args, out, cache) + rerun_flags, log)
        tally["reruns"] += 1
        got = _results(out)
        assert got == expected, f"kill {i} at {delay:.1f} s: the re-run differs from the uninterrupted run"
        tally["identical"] += 1
    print(f"{' '.join(args[:2])}: {tally} (kill window {window:.1f} s)")
    return tally


def test_run_fedavg_killed_once_resumes_to_the_uninterrupted_metrics(fedavg_reference, cache, tmp_path):
    reference, seconds = fedavg_reference
    tally = _kill_and_rerun(FEDAVG, ["--resume"], reference, seconds / 2, cache, tmp_path, kills=1, seed=SEED)
    assert tally["kills"] == tally["reruns"] == tally["identical"] == 1


@pytest.mark.slow
def test_run_fedavg_killed_at_ten_random_moments(fedavg_reference, cache, tmp_path):
    window = _warm_seconds(FEDAVG, cache, tmp_path)
    tally = _kill_and_rerun(FEDAVG, ["--resume"], fedavg_reference[0], window, cache, tmp_path, kills=SLOW_KILLS,
                            seed=SEED)
    assert tally["kills"] == SLOW_KILLS and tally["identical"] == tally["reruns"]


@pytest.mark.slow
def test_reproduce_killed_at_ten_random_moments(cache, tmp_path):
    reference = tmp_path / "reference"
    _complete(_command(REPRODUCE, reference, cache), tmp_path / "reference.log")
    window = _warm_seconds(REPRODUCE, cache, tmp_path)
    tally = _kill_and_rerun(REPRODUCE, [], reference, window, cache, tmp_path, kills=SLOW_KILLS, seed=SEED)
    assert tally["kills"] == SLOW_KILLS and tally["identical"] == tally["reruns"]


def _rounds_without_times(out: Path) -> list[dict]:
    record = json.loads((out / "metrics.json").read_text())
    return [{k: v for k, v in row.items() if k not in TIMED_COLUMNS} for row in record["extra"]["rounds"]]


@pytest.mark.slow
def test_a_run_killed_after_two_rounds_resumes_with_every_round_in_metrics(fedavg_reference, cache, tmp_path):
    reference, _ = fedavg_reference
    out = tmp_path / "killed"
    assert _kill_after(_command(FEDAVG, out, cache), 300, tmp_path / "killed.log",
                       until=lambda: (rounds_done(out) or 0) >= 2), "the run ended before it could be killed"
    assert 2 <= rounds_done(out) < 5
    _complete(_command(FEDAVG, out, cache) + ["--resume"], tmp_path / "killed.log")
    expected = _rounds_without_times(reference)
    assert len(expected) == 5 and _rounds_without_times(out) == expected
    assert [row["round"] for row in csv.DictReader((out / "rounds.csv").open())] == ["1", "2", "3", "4", "5"]


@pytest.mark.slow
def test_two_runs_into_one_folder_one_runs_the_other_is_refused_naming_its_pid(cache, tmp_path):
    out = tmp_path / "shared"
    procs = [subprocess.Popen(_command(FEDAVG, out, cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=_env(), text=True) for _ in range(2)]
    try:
        results = [(p.pid, *p.communicate(timeout=600)) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], results
    winner = next(p.pid for p in procs if p.returncode == 0)
    refused = next(err for (pid, _, err), p in zip(results, procs) if p.returncode == 2)
    assert refused.strip().splitlines() == [
        f"tff-esn run: error: --out {out}: another run (pid {winner}) is writing into it; wait for it to end or "
        "choose another folder."]
    assert [row["round"] for row in csv.DictReader((out / "rounds.csv").open())] == ["1", "2", "3", "4", "5"]
