"""Load: streaming IncFed over 10³–10⁵ simulated clients on 1 and 2 loopback TFF workers (clients/s, peak memory).

Clients are :class:`~tff_esn.data.seed_sources.simulated.SimulatedClients` (4 sequences × 20 steps × 3
features each, generated subround by subround). IncFed runs through
:func:`tff_esn.closed_form.incfed.stream_incfed` in subrounds of 500 clients with a checkpoint file
(saved atomically after every subround, as a resumable run does), each TFF client carrying a
block of ``clients_per_call`` clients (their statistics are sums, IncFed eqs. 8–9). Per row:
wall time, clients/s, driver cost per client, peak resident memory of the driver and of the
largest worker (``VmHWM``, reset between rows), and the largest |Δ| of the 2-worker readout
from the 1-worker one.

* ``cost`` rows: the same 1,000 clients with one TFF client per client (``clients_per_call=1``,
  unblocked) and with the default blocks — the driver cost per client of each;
* FedAvg (:func:`tff_esn.federated.run_federated`, one round, every client) at 1,000 clients
  for comparison: its clients cannot be blocked (the server averages per-client models,
  thesis Alg. 2), and its client data are built up front, so its memory and time grow with
  the clients.

On a 2-core machine two workers and the driver share the cores: expect little speed-up; on
a shared machine absolute times vary, ratios within one run are what count.
``--quick``: 10³ and 10⁴ clients only; ``--only=incfed`` / ``--only=fedavg``: one algorithm.
"""

from __future__ import annotations

import os
import tempfile
import time

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


def main(flags: list[str]) -> None:
    sizes = (1000, 10000) if "--quick" in flags else (1000, 10000, 100000)
    only = {f.split("=", 1)[1].lower() for f in flags if f.startswith("--only=")}
    print(f"clients: 4 sequences × 20 steps × 3 features each; {UNITS} units; IncFed subrounds of {SUBROUND}, "
          f"{PER_CALL} clients per TFF client, checkpoint after every subround; FedAvg: 1 round, every client")
    print("memory = peak RSS (driver, largest worker); Δ = max |readout − 1-worker readout|; shared machine")
    print(f"{'algorithm':16s} {'clients':>7s} {'workers':>7s} {'seconds':>9s} {'clients/s':>10s} {'ms/client':>9s} "
          f"{'driver MB':>9s} {'worker MB':>9s}  {'Δ':>10s}")
    if not only or "incfed" in only:
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
    if not only or "fedavg" in only:
        _fedavg(10)()
        reference = None
        for count in (1, 2):
            result, seconds, driver, worker = _on_workers(count, _fedavg(1000))
            delta = "—" if reference is None else f"{np.abs(result - reference).max():.1e}"
            reference = result if reference is None else reference
            _row("FedAvg", 1000, count, seconds, driver, worker, delta)
