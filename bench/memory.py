"""Memory: peak resident memory of ``tff-esn run incfed`` over 5 … 5000 clients, per backend.

Each client of an ``npz`` file holds 4 sequences × 20 steps × 3 features of two classes; a
tenth of the clients are validation and a tenth test clients (the own-data default λ is chosen
on validation clients). Every row runs ``tff-esn run incfed`` with its default flags (``auto``),
``--backend numpy`` and ``--backend tff`` in a subprocess and reports the wall time and the
peak of the summed resident memory of the run's process tree (the run and any TFF worker it
starts), sampled every 50 ms; the ratio column is the row's peak over the numpy backend's in
the same row. ``--backend tff`` stops at 1000 clients (it grows by megabytes per client).
``--quick``: 5 and 100 clients. Every process a run starts is gone before the next row.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CLIENTS = (5, 100, 1000, 5000)
QUICK = (5, 100)
TFF_MAX = 1000
ROOT = Path(__file__).resolve().parents[1]


def write_clients(path: Path, clients: int, seed: int = 0) -> Path:
    """An npz of ``clients`` clients (4 sequences × 20 steps × 3 features each; train/val/test groups)."""
    rng = np.random.default_rng(seed)
    n = 4 * clients
    y = np.arange(n) % 2
    x = rng.normal(size=(n, 20, 3)).astype(np.float32) + y[:, None, None] * 0.5
    client = np.repeat(np.arange(clients), 4)
    group = np.where(client % 10 == 1, "val", np.where(client % 10 == 2, "test", "train"))
    if clients < 10:
        group = np.where(client == 1, "val", np.where(client == 2, "test", "train"))
    np.savez(path, X=x, y=y, client=client, split=group)
    return path


def _tree(root: int) -> set[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(text[text.rfind(")") + 2:].split()[1])
    found, frontier = {root}, {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def peak_run(args: list[str]) -> tuple[float, float, int]:
    """``(seconds, peak MiB of the process tree, exit code)`` of ``tff-esn ARGS``; stops what it started."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    began = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "tff_esn", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    peak, seen = 0, set()
    try:
        while proc.poll() is None:
            tree = _tree(proc.pid)
            seen |= tree
            peak = max(peak, sum(_rss(p) for p in tree))
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pid in seen - {proc.pid}:  # a worker the run failed to stop: stopped here, by pid
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, 9)
    if proc.returncode:
        print(proc.stderr.read().decode()[-2000:], file=sys.stderr)
    return time.monotonic() - began, peak / 2 ** 20, proc.returncode


def main(argv: list[str]) -> None:
    sizes = QUICK if "--quick" in argv else CLIENTS
    print(f"{'clients':>7} | {'backend':>7} | {'seconds':>7} | {'peak MiB':>8} | {'÷ numpy':>7}")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        for clients in sizes:
            data = write_clients(Path(tmp) / f"c{clients}.npz", clients)
            rows = {}
            for backend in ("numpy", "auto", "tff"):
                if backend == "tff" and clients > TFF_MAX:
                    continue
                flags = [] if backend == "auto" else ["--backend", backend]
                out = Path(tmp) / f"out-{clients}-{backend}"
                rows[backend] = peak_run(["run", "incfed", "--data", f"npz:{data}", "--out", str(out), *flags])
            for backend, (seconds, peak, code) in rows.items():
                note = "" if code == 0 else f"  (exit {code})"
                print(f"{clients:>7} | {backend:>7} | {seconds:>7.1f} | {peak:>8.0f} | "
                      f"{peak / rows['numpy'][1]:>7.2f}{note}", flush=True)
