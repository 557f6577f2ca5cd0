"""Scale-out: IncFed (streaming subrounds) and FedAvg on 1 vs 2 loopback TFF workers, 100–10,000 clients.

Clients are :class:`~tff_esn.data.simulated.SimulatedClients` (4 sequences × 20 steps × 3
features each). For each number of clients and each algorithm the same work runs on one
worker (the reference, measured in the same run) and on two workers started for it
(``MergeableCompExecutionContext`` splits every computation's clients between them).
Reported per row: wall time and its ratio to the 1-worker row, peak resident memory of
this (driver) process and of the largest worker, and how far the 2-worker result is from
the 1-worker one (max |Δ| of the readout / model weights; predictions compared exactly).

* IncFed: :func:`tff_esn.streaming.stream_incfed`, subrounds of 500 clients, 20 units —
  driver memory should stay flat as clients grow (one subround + the statistics);
* FedAvg: :func:`tff_esn.federated.run_federated` (TFF's weighted FedAvg of the thesis
  readout), one round with every client, 20 units — its client data is built up front,
  so its memory grows with the clients.

Peak memory is ``VmHWM`` from ``/proc`` (reset between rows through ``clear_refs``).
On a 2-core machine two workers and the driver share the cores: expect little speed-up.
``--quick``: 100 and 1,000 clients only; ``--only=incfed`` / ``--only=fedavg``: one algorithm.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from tff_esn import runtime  # noqa: E402
from tff_esn.config import ReservoirConfig  # noqa: E402
from tff_esn.data.sequences import Split  # noqa: E402
from tff_esn.data.simulated import SimulatedClients  # noqa: E402
from tff_esn.harvest import Harvester, ReservoirWeights, StateSpec  # noqa: E402
from tff_esn.streaming import stream_incfed  # noqa: E402

UNITS = 20
SUBROUND = 500


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


def _incfed(n_clients: int):
    source = SimulatedClients(n_clients, seed=0)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=UNITS, seed=1), source.features)
    spec = StateSpec()
    probe = source.dataset(0, 50)
    harvester = Harvester(probe, spec)

    def run():
        return stream_incfed(weights, source, spec, 1e-3, subround_size=SUBROUND).readout

    def compare(a, b):
        pa, pb = (harvester.scores(w, weights, probe.client_ids)[0].argmax(1) for w in (a, b))
        return float(np.abs(a - b).max()), bool(np.array_equal(pa, pb))

    return run, compare


def _fedavg(n_clients: int):
    from tff_esn.federated import FederatedConfig, ThesisModelConfig, run_federated

    source = SimulatedClients(n_clients + 2, n_classes=2, seed=0)
    data = source.dataset(0, n_clients + 2)
    ids = data.client_ids
    split = Split("scale", train=ids[:n_clients], val=(ids[-2],), test=(ids[-1],))
    model = ThesisModelConfig(reservoir=ReservoirConfig(units=UNITS, seed=1), batch_size=4, learning_rate=0.05,
                              state_mode="last")
    config = FederatedConfig(model=model, rounds=1, clients_per_round=n_clients, noise_std=0.0)

    def run():
        result = run_federated(data, split, config, progress=False)
        w = result["extra"]["weights"]
        return np.concatenate([w["kernel"].ravel(), w["bias"].ravel()]), result["test"]["accuracy"]

    def compare(a, b):
        return float(np.abs(a[0] - b[0]).max()), a[1] == b[1]

    return run, compare


def main(flags: list[str]) -> None:
    sizes = (100, 1000) if "--quick" in flags else (100, 1000, 10000)
    print(f"clients: 4 sequences × 20 steps × 3 features each; {UNITS} units; IncFed subrounds of {SUBROUND}; "
          "FedAvg: 1 round, every client")
    print("reference: the same work on 1 worker in this run; memory = peak RSS (driver, largest worker)")
    print(f"{'algorithm':8s} {'clients':>7s} {'workers':>7s} {'seconds':>9s} {'× 1-worker':>10s} "
          f"{'driver MB':>9s} {'worker MB':>9s}  {'max |Δ| vs 1 worker':>19s}  same predictions")
    first_memory: dict[tuple[str, int], float] = {}
    last_memory: dict[tuple[str, int], float] = {}
    only = {f.split("=", 1)[1].lower() for f in flags if f.startswith("--only=")}
    for name, build in (("IncFed", _incfed), ("FedAvg", _fedavg)):
        if only and name.lower() not in only:
            continue
        build(10)[0]()  # warm-up: traces and computations of this algorithm
        for n in sizes:
            run, compare = build(n)
            reference = None
            for count in (1, 2):
                result, seconds, driver, worker = _on_workers(count, run)
                if reference is None:
                    reference = (result, seconds)
                    delta, same = "—", "—"
                else:
                    d, s = compare(reference[0], result)
                    delta, same = f"{d:.2e}", "yes" if s else "NO"
                first_memory.setdefault((name, count), driver)
                last_memory[name, count] = driver
                print(f"{name:8s} {n:7d} {count:7d} {seconds:9.2f} {seconds / reference[1]:9.2f}× "
                      f"{driver:9.0f} {worker:9.0f}  {delta:>19s}  {same}", flush=True)
    print(f"driver memory at {sizes[-1]} / at {sizes[0]} clients: " + ", ".join(
        f"{name} {count} worker(s) {last_memory[name, count] / first_memory[name, count]:.2f}×"
        for name, count in last_memory), flush=True)
