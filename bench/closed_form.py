"""Closed-form family: TFF IncFed vs the numpy path, harvest reuse, FedIP rounds.

Workload (IncFed WESAD-like): C clients × n sequences × T steps × 8 features, N_R units,
every state after washout in the readout. The reference is the numpy path measured in the
same run: harvest every client's statistics once (``Harvester``) and solve. Reported:

* TFF IncFed (clients harvest inside the computation, federated_sum, server solve) / reference;
* each algorithm's server-side time on the cached harvest / the harvest it reuses;
* one FedIP round through TFF / the same round in numpy (eager TF per client).
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from tff_esn import runtime  # noqa: E402
from tff_esn.esn.hyperparameters import ReservoirConfig  # noqa: E402
from tff_esn.data.sequences import ClientSequences, SequenceDataset  # noqa: E402
from tff_esn.closed_form.fedavg_ridge import fit_fedavg_ridge  # noqa: E402
from tff_esn.closed_form.harvest import Harvester  # noqa: E402
from tff_esn.esn.weights import ReservoirWeights, StateSpec  # noqa: E402
from tff_esn.closed_form.incfed import fit_incfed, federate_tff  # noqa: E402
from tff_esn.closed_form.partial_incfed import fit_partial_incfed  # noqa: E402
from tff_esn.closed_form.pfedrr import fit_pfedrr  # noqa: E402
from tff_esn.closed_form.fedip import IPConfig, fedip_numpy, fedip_tff  # noqa: E402


def timed(fn, repeats: int = 1) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def dataset(clients: int, n: int, steps: int, features: int = 8, classes: int = 4) -> SequenceDataset:
    rng = np.random.default_rng(0)
    data = {}
    for c in range(clients):
        y = rng.integers(0, classes, n)
        x = rng.normal(size=(n, steps, features)) + 0.3 * y[:, None, None]
        data[f"s{c}"] = ClientSequences(x.astype(np.float32), y)
    return SequenceDataset(data, classes, tuple(f"f{i}" for i in range(features)),
                           tuple(f"k{i}" for i in range(classes)), "bench")


def main(flags: list[str]) -> None:
    quick = "--quick" in flags
    runtime.ensure_context()
    clients, n, steps, units = (4, 40, 100, 50) if quick else (10, 100, 350, 100)
    data = dataset(clients, n, steps)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=units, spectral_radius=0.9, seed=1), 8)
    spec = StateSpec("all", washout=10)
    ids = data.client_ids
    print(f"workload: {clients} clients × {n} sequences × {steps} steps × 8 features, {units} units, "
          f"state_mode=all")

    def numpy_incfed():
        h = Harvester(data, spec)
        return fit_incfed([h.stats(weights, c) for c in ids], 1e-6)

    numpy_incfed()  # warm-up (tracing)
    ref = timed(numpy_incfed, 2)
    clients_data = list(data.clients.values())
    federate_tff(weights, clients_data, 4, spec, 1e-6)  # warm-up (computation build, worker start)
    tff_time = timed(lambda: federate_tff(weights, clients_data, 4, spec, 1e-6).readout, 2)
    print(f"{'reference: numpy harvest + IncFed solve':60s} {ref:8.3f} s   1.00×")
    print(f"{'TFF IncFed (harvest inside the computation)':60s} {tff_time:8.3f} s   {tff_time / ref:.2f}×")

    h = Harvester(data, spec)
    harvest = timed(lambda: [h.stats(weights, c) for c in ids])
    stats = [h.stats(weights, c) for c in ids]
    rows = {
        "IncFed solve": lambda: fit_incfed(stats, 1e-6),
        "FedAvg-ridge (local solves + mean)": lambda: fit_fedavg_ridge(stats, 1e-6),
        "Partial IncFed (k = N_F/2, α = 0.3)": lambda: fit_partial_incfed(stats, (units + 1) // 2, 0.3, 1e-6),
        "pFedRR (exact + I- + R-, τ = 0.5)": lambda: fit_pfedrr(stats, 0.5, 1e-6),
    }
    print(f"{'harvest of every client (cached afterwards)':60s} {harvest:8.3f} s   1.00×")
    for name, fn in rows.items():
        t = timed(fn, 3)
        print(f"{'  ' + name + ' on the cached harvest':60s} {t:8.4f} s   {t / harvest:.4f}×")

    cfg = IPConfig(sigma=0.1, eta=1e-3, epochs=1, batch_size=16)
    fedip_numpy(weights, clients_data, cfg, 1)
    ip_np = timed(lambda: fedip_numpy(weights, clients_data, cfg, 1))
    fedip_tff(weights, clients_data, cfg, 1)
    ip_tff = timed(lambda: fedip_tff(weights, clients_data, cfg, 1)[0])
    print(f"{'one FedIP round, numpy (eager TF per client)':60s} {ip_np:8.3f} s   1.00×")
    print(f"{'one FedIP round, TFF process (incl. build)':60s} {ip_tff:8.3f} s   {ip_tff / ip_np:.2f}×")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
