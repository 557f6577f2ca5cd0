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


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    runtime.ensure_context()
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

