"""Seconds per federated round of the thesis model, side by side in one process.

Workload: 10 clients × 6000 steps, 1 feature (pEDA, Table 6.2), 200 units, batch 20, one
local epoch, FedAvg with every client in every round; the 6000 steps are cut into 100
sequences of 60 steps (the thesis pipeline's default sequence length; 5 batches per client)
and into 300 sequences of 20 steps (15 batches). Rows:

* thesis-style — ``tfa.layers.ESN`` + sigmoid ``Dense`` inside the TFF model, raw inputs
  travelling into every round (the thesis' implementation);
* faithful — our ``Reservoir`` layer inside the model (the ``states="faithful"`` mode);
* cached, in memory — the readout trained on states harvested once, the states serialized
  into every round;
* cached, file-backed — the same states saved once (raw float32 files, mapped into the
  TFF worker's memory), only their path travels (what ``run_federated`` and
  ``tff-esn run fedavg`` do);
* floor, same batches — the file-backed process with a 1-unit reservoir: TFF's and TF's
  cost of the same clients, batches and local steps with no model to speak of;
* floor, 1 example — TFF's per-round cost alone: a trivial model, one example per client.

Rows are timed interleaved — round r of every row, then round r + 1 — so a change of the
machine's load hits all rows alike; each row is the median of its timed rounds after one
warm-up round. Targets: cached file-backed ≥ 4× faster than thesis-style, within 2× of the
floor.

First, the backends (:func:`backends`): rounds/s of one FedAvg round on cached states (130
sequences × 200 units per client, batch 20, one epoch, server lr 0.1) for 10 and 100 clients
per round, run by TFF (``--backend tff``, file-backed states), by the simulation
(``--backend sim``) and by a plain numpy loop with the same arithmetic (TFF's Adam on the
sigmoid readout with the weighted cross-entropy, the example-weighted mean, the server SGD
step). Targets: simulation ≤ 2× the numpy loop's time, ≥ 10× faster than TFF. ``--backends``: this table only.
"""

from __future__ import annotations

import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_federated as tff  # noqa: E402

from tff_esn import ReservoirConfig, runtime  # noqa: E402
from tff_esn.data.sequences import ClientSequences  # noqa: E402
from tff_esn.federated import ThesisModelConfig, build_fedavg, build_thesis_model  # noqa: E402
from tff_esn.federated.clients import CachedStates, RawInputs, lean_options  # noqa: E402
from tff_esn.federated.model import readout_layer, thesis_loss  # noqa: E402
from tff_esn.federated.simulation import SimulatedProcess  # noqa: E402

THESIS = "thesis-style (tfa.layers.ESN in the model)"
CACHED = "cached states, file-backed"
FLOOR_BATCHES = "floor, same batches (1-unit reservoir)"
FLOOR = "floor, 1 example per client"


def _clients(n_clients: int, n_seq: int, steps: int) -> dict[str, ClientSequences]:
    rng = np.random.default_rng(0)
    out = {}
    for i in range(n_clients):
        x = rng.normal(size=(n_seq, steps, 1)).astype(np.float32)
        out[f"S{i}"] = ClientSequences(x, (x[..., 0] > 1.2).astype(np.int64))
    return out


def _tfa_model(config: ThesisModelConfig) -> tf.keras.Model:
    import tensorflow_addons as tfa

    res = config.reservoir
    inputs = tf.keras.Input((None, 1))
    states = tfa.layers.ESN(res.units, connectivity=res.recurrent_connectivity, leaky=res.leaky,
                            spectral_radius=res.spectral_radius, return_sequences=True)(inputs)
    return tf.keras.Model(inputs, readout_layer(res.seed)(states))


def _interleaved(rows: dict, rounds: int) -> dict[str, float]:
    """Median seconds per round of each ``name: (process, datasets_fn)``, rounds interleaved across rows."""
    states = {name: process.next(process.initialize(), datasets_fn(0)).state  # warm-up: compilation
              for name, (process, datasets_fn) in rows.items()}
    times = {name: [] for name in rows}
    for r in range(1, rounds + 1):
        for name, (process, datasets_fn) in rows.items():
            t0 = time.perf_counter()
            states[name] = process.next(states[name], datasets_fn(r)).state
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}


def _process(keras_fn, spec, config):
    def model_fn():
        return tff.learning.models.from_keras_model(keras_fn(), loss=thesis_loss(config), input_spec=spec)

    return build_fedavg(model_fn, client_learning_rate=config.learning_rate)


def _adam_client(x: np.ndarray, y: np.ndarray, kernel: np.ndarray, bias: np.ndarray, *, lr: float, batch: int,
                 class_weight: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """One epoch of TFF's Adam (β 0.9, 0.999, ε 1e-7) on ``mean(w[y]·BCE(y, sigmoid(x k + b)))``, in numpy."""
    k, b = kernel.copy(), bias.copy()
    moments = [np.zeros_like(k), np.zeros_like(b), np.zeros_like(k), np.zeros_like(b)]
    w0, w1 = class_weight
    for t, start in enumerate(range(0, len(x), batch), 1):
        xb, yb = x[start:start + batch], y[start:start + batch]
        p = 1.0 / (1.0 + np.exp(-(xb @ k + b)))
        g = (w0 + (w1 - w0) * yb) * (p - yb) / len(xb)
        step = lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        for i, (w, grad) in enumerate(((k, xb.T @ g), (b, g.sum(axis=0)))):
            moments[i] += (grad - moments[i]) * 0.1
            moments[i + 2] += (grad ** 2 - moments[i + 2]) * 0.001
            w -= step * moments[i] / (np.sqrt(moments[i + 2]) + 1e-7)
    return k, b


def _numpy_round(data: list[tuple[np.ndarray, np.ndarray]], kernel: np.ndarray, bias: np.ndarray, *, lr: float,
                 batch: int, class_weight: tuple[float, float], server_lr: float) -> tuple[np.ndarray, np.ndarray]:
    """FedAvg's round in numpy: every client's Adam epoch, the example-weighted mean delta, the server step."""
    deltas, sizes = [], []
    for x, y in data:
        k, b = _adam_client(x, y, kernel, bias, lr=lr, batch=batch, class_weight=class_weight)
        deltas.append((kernel - k, bias - b))
        sizes.append(len(x))
    total = sum(sizes)
    mean_k = sum(n * d[0] for n, d in zip(sizes, deltas)) / total
    mean_b = sum(n * d[1] for n, d in zip(sizes, deltas)) / total
    return kernel - server_lr * mean_k, bias - server_lr * mean_b


def backends(n_clients: int, rounds: int, *, units: int = 200, n_seq: int = 130) -> dict[str, float]:
    """Median seconds per FedAvg round of TFF, the simulation and the numpy loop (rounds interleaved)."""
    config = ThesisModelConfig(reservoir=ReservoirConfig(units=units, spectral_radius=0.99), batch_size=20,
                               state_mode="last", class_weight=(1.0, 3.0))
    rng = np.random.default_rng(0)
    clients = {}
    for i in range(n_clients):
        x = rng.normal(size=(n_seq, 10, 1)).astype(np.float32)
        clients[f"S{i}"] = ClientSequences(x, (x[:, -1, 0] > 0.8).astype(np.int64))
    ids = list(clients)
    with tempfile.TemporaryDirectory() as tmp:
        source = CachedStates(clients, config, seed=0, shuffle=True, cache_dir=tmp)
        spec = source.dataset(ids[0], 0).element_spec

        def model_fn():
            return tff.learning.models.from_keras_model(build_thesis_model(units, config, readout_only=True),
                                                        loss=thesis_loss(config), input_spec=spec)

        rates = dict(client_learning_rate=config.learning_rate, server_learning_rate=0.1)
        tff_process = build_fedavg(model_fn, **rates)
        sim_process = SimulatedProcess(model_fn, **rates)
        arrays = [source.arrays(cid, 0) for cid in ids]
        initial = [np.asarray(w) for w in sim_process.get_model_weights(sim_process.initialize()).trainable]

        def numpy_next(state, r):
            data = []
            for cid, (x, y) in zip(ids, arrays):
                order = np.random.default_rng(source.shuffle_seed(cid, r)).permutation(len(x))
                data.append((x[order].astype(np.float64), y[order].astype(np.float64)))
            return _numpy_round(data, *state, lr=config.learning_rate, batch=config.batch_size,
                                class_weight=config.class_weight, server_lr=0.1)

        rows = {"tff": (lambda st, r: tff_process.next(st, source.datasets(ids, r)).state, tff_process.initialize()),
                "sim": (lambda st, r: sim_process.next(st, source.in_memory(ids, r)).state, sim_process.initialize()),
                "numpy": (numpy_next, tuple(initial))}
        states = {name: step(state, 0) for name, (step, state) in rows.items()}  # warm-up: tracing
        times = {name: [] for name in rows}
        for r in range(1, rounds + 1):
            for name, (step, _) in rows.items():
                t0 = time.perf_counter()
                states[name] = step(states[name], r)
                times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}


def _report_backends(quick: bool) -> None:
    print("FedAvg round on cached states (130 × 200 per client, batch 20, one epoch), every client every round; "
          "median of interleaved rounds after one warm-up round")
    print(f"{'clients':>8s} {'tff s':>8s} {'sim s':>8s} {'numpy s':>8s} {'tff rounds/s':>13s} {'sim rounds/s':>13s} "
          f"{'numpy rounds/s':>15s} {'sim ÷ numpy':>12s} {'tff ÷ sim':>10s}")
    for n_clients in ((4, 10) if quick else (10, 100)):
        s = backends(n_clients, 3 if quick or n_clients > 10 else 9)
        print(f"{n_clients:8d} {s['tff']:8.3f} {s['sim']:8.3f} {s['numpy']:8.3f} {1 / s['tff']:13.2f} "
              f"{1 / s['sim']:13.2f} {1 / s['numpy']:15.2f} {s['sim'] / s['numpy']:12.2f} {s['tff'] / s['sim']:10.1f}")
        print(f"{'':8s} targets: sim ≤ 2× numpy: {'met' if s['sim'] <= 2 * s['numpy'] else 'missed'}; "
              f"sim ≥ 10× faster than tff: {'met' if s['tff'] >= 10 * s['sim'] else 'missed'}", flush=True)


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    runtime.ensure_context()
    _report_backends(quick)
    if "--backends" in argv:
        return
    shapes = [(20, 50)] if quick else [(100, 60), (300, 20)]
    for n_seq, steps in shapes:
        _bench(4 if quick else 10, n_seq, steps, 50 if quick else 200, 2 if quick else 9)


def _readout_row(source: CachedStates, units: int, config: ThesisModelConfig, ids: list[str]):
    process = _process(lambda: build_thesis_model(units, config, readout_only=True),
                       source.dataset(ids[0], 0).element_spec, config)
    return process, lambda r: source.datasets(ids, r)


def _bench(n_clients: int, n_seq: int, steps: int, units: int, rounds: int) -> None:
    config = ThesisModelConfig(reservoir=ReservoirConfig(units=units, spectral_radius=0.99), batch_size=20)
    clients = _clients(n_clients, n_seq, steps)
    ids = list(clients)
    print(f"{n_clients} clients × {n_seq * steps} steps ({n_seq} × {steps}), {units} units, batch 20, "
          f"all clients every round, median of {rounds} interleaved rounds after one warm-up round")
    raw = RawInputs(clients, config, seed=0, noise_std=0.0, shuffle=True)
    raw_spec = raw.dataset(ids[0], 0).element_spec
    rows = {
        THESIS: (_process(lambda: _tfa_model(config), raw_spec, config), lambda r: raw.datasets(ids, r)),
        "faithful (our Reservoir in the model)": (_process(lambda: build_thesis_model(1, config), raw_spec, config),
                                                  lambda r: raw.datasets(ids, r)),
    }
    t0 = time.perf_counter()
    memory = CachedStates(clients, config, seed=0, shuffle=True)
    harvest_s = time.perf_counter() - t0
    rows["cached states, in memory"] = _readout_row(memory, units, config, ids)
    tiny = tf.data.Dataset.from_tensor_slices((np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32))
                                              ).batch(1).with_options(lean_options())
    trivial = ThesisModelConfig(reservoir=ReservoirConfig(units=1))
    with tempfile.TemporaryDirectory() as tmp:
        files = CachedStates(clients, config, seed=0, shuffle=True, cache_dir=tmp)
        rows[CACHED] = _readout_row(files, units, config, ids)
        one_unit = config.replace(reservoir=ReservoirConfig(units=1))
        rows[FLOOR_BATCHES] = _readout_row(CachedStates(clients, one_unit, seed=0, shuffle=True, cache_dir=tmp),
                                           1, one_unit, ids)
        rows[FLOOR] = (_process(lambda: build_thesis_model(1, trivial.replace(state_mode="last"), readout_only=True),
                                tiny.element_spec, trivial), lambda r: [tiny] * n_clients)
        seconds = _interleaved(rows, rounds)

    print(f"{'round':46s} {'s/round':>8s} {'× floor':>8s} {'× floor, same batches':>22s} {'thesis-style ÷ this':>20s}")
    for name, s in seconds.items():
        print(f"{name:46s} {s:8.3f} {s / seconds[FLOOR]:8.2f} {s / seconds[FLOOR_BATCHES]:22.2f} "
              f"{seconds[THESIS] / s:20.2f}")
    print(f"one-time harvest of the cached states: {harvest_s:.2f} s")
    speedup, over_floor = seconds[THESIS] / seconds[CACHED], seconds[CACHED] / seconds[FLOOR]
    print(f"targets: cached file-backed {speedup:.1f}× faster than thesis-style (target ≥ 4: "
          f"{'met' if speedup >= 4 else 'missed'}), {over_floor:.1f}× the 1-example floor (target ≤ 2: "
          f"{'met' if over_floor <= 2 else 'missed'}), "
          f"{seconds[CACHED] / seconds[FLOOR_BATCHES]:.1f}× the same-batches floor")

