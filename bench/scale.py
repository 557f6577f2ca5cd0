"""Scale: IncFed's default run over 5–10⁵ simulated clients (peak memory, wall), and streaming IncFed over
10³–10⁵ clients on 1 and 2 loopback TFF workers (clients/s, peak memory).

``clients`` rows (the default): :func:`tff_esn.closed_form.incfed.run_incfed` with its defaults (λ given, no
selection) on :meth:`SimulatedClients.lazy` federations of 4 sequences × 20 steps × 3 features per client (a
tenth of the clients test clients, generated when read), each size in a fresh process (one BLAS thread) —
``--backend numpy`` (the default path) at 5 … 10⁵ clients and ``--backend tff`` (its default subrounds above
:data:`~tff_esn.closed_form.incfed.TFF_AT_ONCE` clients) up to 10⁴; per row the run's wall time (the data
generated as it is read, the report's scoring included), µs per training sequence, the peak resident memory of
the run's process tree (``VmHWM`` of the run and of its TFF worker) and its ratio to the peak at 100 clients.
``--million``: a 10⁶-client numpy row as well.

``workers`` rows (``--only=workers``): clients are :class:`~tff_esn.data.seed_sources.simulated.SimulatedClients`
(4 sequences × 20 steps × 3 features each, generated subround by subround). IncFed runs through
:func:`tff_esn.closed_form.incfed.stream_incfed` in subrounds of 500 clients with a checkpoint file
(saved atomically after every subround, as a resumable run does), each TFF client carrying a
block of ``clients_per_call`` clients (their statistics are sums, IncFed eqs. 8–9). Per row:
wall time, clients/s, driver cost per client, peak resident memory of the driver and of the
largest worker (``VmHWM``, reset between rows), and the largest |Δ| of the 2-worker readout
from the 1-worker one.

* ``cost`` rows: the same 1,000 clients with one TFF client per client (``clients_per_call=1``,
  unblocked) and with the default blocks — the driver cost per client of each;
* FedAvg (``--only=fedavg``; :func:`tff_esn.federated.run_federated`, one round, every client) at 1,000 clients
  for comparison: its clients cannot be blocked (the server averages per-client models,
  thesis Alg. 2), and its client data are built up front, so its memory and time grow with
  the clients.

On a 2-core machine two workers and the driver share the cores: expect little speed-up; on
a shared machine absolute times vary, ratios within one run are what count.
``--quick``: 10³ and 10⁴ clients only (``clients``: up to 10⁴).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from tff_esn import runtime  # noqa: E402
from tff_esn.esn.hyperparameters import ReservoirConfig  # noqa: E402
from tff_esn.data.sequences import Split  # noqa: E402
from tff_esn.data.seed_sources.simulated import SimulatedClients  # noqa: E402
from tff_esn.esn.weights import ReservoirWeights, StateSpec  # noqa: E402
from tff_esn.closed_form.incfed import stream_incfed  # noqa: E402

UNITS = 20
SUBROUND = 500
PER_CALL = 100
CLIENTS = (5, 100, 1000, 10_000, 100_000)
TFF_CLIENTS = (5, 100, 1000, 10_000)
ROOT = Path(__file__).resolve().parents[1]


def _peak_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _on_workers(count: int, fn):
    """Runs ``fn()`` on ``count`` fresh loopback workers: (result, seconds, driver MB, worker MB)."""
    workers = [runtime.LocalWorker().start() for _ in range(count)]
    try:
        for w in workers:
            runtime.connect(w.address, worker=w)
        runtime.ensure_context([w.address for w in workers])
        _reset_peak()
        began = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - began
        return result, seconds, _peak_mb(), max(_peak_mb(w.pid) for w in workers)
    finally:
        for w in workers:
            w.stop()
        runtime.ensure_context(force=True)


def _incfed(n_clients: int, per_call: int = PER_CALL):
    source = SimulatedClients(n_clients, seed=0)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=UNITS, seed=1), source.features)

    def run():
        with tempfile.TemporaryDirectory() as tmp:
            return stream_incfed(weights, source, StateSpec(), 1e-3, subround_size=SUBROUND,
                                 clients_per_call=per_call, checkpoint=os.path.join(tmp, "stream.npz")).readout

    return run


def _fedavg(n_clients: int):
    from tff_esn.federated import FedAvgConfig, ThesisModelConfig, run_federated

    source = SimulatedClients(n_clients + 2, n_classes=2, seed=0)
    data = source.dataset(0, n_clients + 2)
    ids = data.client_ids
    split = Split("scale", train=ids[:n_clients], val=(ids[-2],), test=(ids[-1],))
    model = ThesisModelConfig(reservoir=ReservoirConfig(units=UNITS, seed=1), batch_size=4, learning_rate=0.05,
                              state_mode="last")
    config = FedAvgConfig(model=model, rounds=1, clients_per_round=n_clients, noise_std=0.0, progress=False)

    def run():
        w = run_federated(data, split, config)["extra"]["weights"]
        return np.concatenate([w["kernel"].ravel(), w["bias"].ravel()])

    return run


def _row(name: str, n: int, count: int, seconds: float, driver: float, worker: float, delta: str) -> None:
    print(f"{name:16s} {n:7d} {count:7d} {seconds:9.2f} {n / seconds:10.0f} {seconds / n * 1e3:9.3f} "
          f"{driver:9.0f} {worker:9.0f}  {delta:>10s}", flush=True)


def _child(backend: str, n_clients: int) -> None:
    """One ``clients`` row's run in this process: prints its wall time, sequences and peak memory as JSON."""
    from tff_esn.closed_form.configs import IncFedConfig
    from tff_esn.closed_form.incfed import run_incfed

    source = SimulatedClients(n_clients, seed=0)
    split = source.split(test=max(1, n_clients // 10))
    config = IncFedConfig(reservoir=ReservoirConfig(seed=1), backend=backend)
    began = time.perf_counter()
    result = run_incfed(source.lazy(), split, config)
    seconds = time.perf_counter() - began
    workers = [int(p) for t in os.listdir("/proc/self/task")
               for p in Path(f"/proc/self/task/{t}/children").read_text().split()]
    peak = _peak_mb() + sum(_peak_mb(p) for p in workers)
    print(json.dumps({"seconds": seconds, "sequences": source.sequences * len(split.train), "peak": peak,
                      "accuracy": result["test"]["accuracy"]}), flush=True)


def _clients(sizes: tuple[int, ...], tff_sizes: tuple[int, ...]) -> None:
    """The ``clients`` rows, each in a fresh process."""
    print(f"IncFed defaults on simulated clients (4 sequences × 20 steps × 3 features, a tenth test clients), "
          f"{ReservoirConfig().units} units, one process per row, one BLAS thread; peak = VmHWM of the run (+ worker)")
    print(f"{'backend':8s} {'clients':>8s} {'sequences':>10s} {'seconds':>9s} {'µs/seq':>8s} {'peak MB':>8s} "
          f"{'÷ at 100':>8s} {'test acc':>8s}")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    for backend, row_sizes in (("numpy", sizes), ("tff", tff_sizes)):
        base = None
        for n in row_sizes:
            out = subprocess.run([sys.executable, "-m", "bench.scale", "--child", backend, str(n)], env=env,
                                 cwd=ROOT, capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            base = row["peak"] if n == 100 else base
            ratio = f"{row['peak'] / base:8.2f}" if base else f"{'—':>8s}"
            print(f"{backend:8s} {n:8d} {row['sequences']:10d} {row['seconds']:9.2f} "
                  f"{row['seconds'] / row['sequences'] * 1e6:8.1f} {row['peak']:8.0f} {ratio} "
                  f"{row['accuracy']:8.3f}", flush=True)


def main(flags: list[str]) -> None:
    quick = "--quick" in flags
    only = {f.split("=", 1)[1].lower() for f in flags if f.startswith("--only=")} or {"clients"}
    if "clients" in only:
        sizes = tuple(n for n in CLIENTS if not quick or n <= 10_000) + ((1_000_000,) if "--million" in flags else ())
        _clients(sizes, tuple(n for n in TFF_CLIENTS if not quick or n <= 1000))
    if only <= {"clients"}:
        return
    sizes = (1000, 10000) if quick else (1000, 10000, 100000)
    print(f"clients: 4 sequences × 20 steps × 3 features each; {UNITS} units; IncFed subrounds of {SUBROUND}, "
          f"{PER_CALL} clients per TFF client, checkpoint after every subround; FedAvg: 1 round, every client")
    print("memory = peak RSS (driver, largest worker); Δ = max |readout − 1-worker readout|; shared machine")
    print(f"{'algorithm':16s} {'clients':>7s} {'workers':>7s} {'seconds':>9s} {'clients/s':>10s} {'ms/client':>9s} "
          f"{'driver MB':>9s} {'worker MB':>9s}  {'Δ':>10s}")
    if "workers" in only:
        _incfed(1200)()  # warm-up: traces and computations
        for per_call, label in ((1, "IncFed 1/call"), (PER_CALL, f"IncFed {PER_CALL}/call")):
            _, seconds, driver, worker = _on_workers(1, _incfed(1000, per_call))
            _row(label, 1000, 1, seconds, driver, worker, "—")
        for n in sizes:
            reference = None
            for count in (1, 2):
                result, seconds, driver, worker = _on_workers(count, _incfed(n))
                delta = "—" if reference is None else f"{np.abs(result - reference).max():.1e}"
                reference = result if reference is None else reference
                _row("IncFed", n, count, seconds, driver, worker, delta)
    if "fedavg" in only:
        _fedavg(10)()
        reference = None
        for count in (1, 2):
            result, seconds, driver, worker = _on_workers(count, _fedavg(1000))
            delta = "—" if reference is None else f"{np.abs(result - reference).max():.1e}"
            reference = result if reference is None else reference
            _row("FedAvg", 1000, count, seconds, driver, worker, delta)


if __name__ == "__main__":
    _child(sys.argv[2], int(sys.argv[3]))
