"""Seconds per federated round of the thesis model, side by side in one process (issue 5).

Workload: 10 clients × 6000 steps, 1 feature (pEDA, Table 6.2), 200 units, batch 20, one
local epoch, FedAvg with every client in every round; the 6000 steps are cut into 100
sequences of 60 steps (the thesis pipeline's default sequence length; 5 batches per client)
and into 300 sequences of 20 steps (15 batches). Each row is the median of the timed rounds after one warm-up round. Rows:

* thesis-style — ``tfa.layers.ESN`` + sigmoid ``Dense`` inside the TFF model, raw inputs
  travelling into every round (the thesis' implementation);
* faithful — our ``Reservoir`` layer inside the model (the ``states="faithful"`` mode);
* cached, in memory — the readout trained on states harvested once, the states serialized
  into every round;
* cached, file-backed — the same states saved once (``tf.data.Dataset.save``), only their
  path travels (the default of ``tff-esn run fedavg``);
* floor — TFF's own per-round cost: the same process on a trivial model and one example
  per client (with the same lean ``tf.data`` options as the client datasets).

Targets: cached file-backed ≥ 4× faster than thesis-style, within 2× of the floor.
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


def _seconds_per_round(process, datasets_fn, rounds: int) -> float:
    """Median seconds of ``rounds`` rounds after a warm-up round (the machine is shared)."""
    state = process.initialize()
    state = process.next(state, datasets_fn(0)).state  # warm-up: compilation
    times = []
    for r in range(1, rounds + 1):
        t0 = time.perf_counter()
        state = process.next(state, datasets_fn(r)).state
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _process(keras_fn, spec, config):
    def model_fn():
        return tff.learning.models.from_keras_model(keras_fn(), loss=thesis_loss(config), input_spec=spec)

    return build_fedavg(model_fn, client_learning_rate=config.learning_rate)


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    runtime.ensure_context()
    shapes = [(20, 50)] if quick else [(100, 60), (300, 20)]
    for n_seq, steps in shapes:
        _bench(4 if quick else 10, n_seq, steps, 50 if quick else 200, 2 if quick else 5)


def _bench(n_clients: int, n_seq: int, steps: int, units: int, rounds: int) -> None:
    config = ThesisModelConfig(reservoir=ReservoirConfig(units=units, spectral_radius=0.99), batch_size=20)
    clients = _clients(n_clients, n_seq, steps)
    ids = list(clients)
    print(f"{n_clients} clients × {n_seq * steps} steps ({n_seq} × {steps}), {units} units, batch 20, "
          f"all clients every round, median of {rounds} rounds after one warm-up round")
    raw = RawInputs(clients, config, seed=0, noise_std=0.0, shuffle=True)
    rows = {}
    rows["thesis-style (tfa.layers.ESN in the model)"] = _seconds_per_round(
        _process(lambda: _tfa_model(config), raw.dataset(ids[0], 0).element_spec, config),
        lambda r: raw.datasets(ids, r), rounds)
    rows["faithful (our Reservoir in the model)"] = _seconds_per_round(
        _process(lambda: build_thesis_model(1, config), raw.dataset(ids[0], 0).element_spec, config),
        lambda r: raw.datasets(ids, r), rounds)
    t0 = time.perf_counter()
    memory = CachedStates(clients, config, seed=0, shuffle=True)
    harvest_s = time.perf_counter() - t0
    rows["cached states, in memory"] = _seconds_per_round(
        _process(lambda: build_thesis_model(units, config, readout_only=True),
                 memory.dataset(ids[0], 0).element_spec, config),
        lambda r: memory.datasets(ids, r), rounds)
    with tempfile.TemporaryDirectory() as tmp:
        files = CachedStates(clients, config, seed=0, shuffle=True, cache_dir=tmp)
        rows["cached states, file-backed"] = _seconds_per_round(
            _process(lambda: build_thesis_model(units, config, readout_only=True),
                     files.dataset(ids[0], 0).element_spec, config),
            lambda r: files.datasets(ids, r), rounds)
    tiny = tf.data.Dataset.from_tensor_slices((np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32))
                                              ).batch(1).with_options(lean_options())
    trivial = ThesisModelConfig(reservoir=ReservoirConfig(units=1))
    rows["floor (trivial model, 1 example per client)"] = _seconds_per_round(
        _process(lambda: build_thesis_model(1, trivial.replace(state_mode="last"), readout_only=True),
                 tiny.element_spec, trivial),
        lambda r: [tiny] * n_clients, rounds)

    floor = rows["floor (trivial model, 1 example per client)"]
    thesis = rows["thesis-style (tfa.layers.ESN in the model)"]
    print(f"{'round':46s} {'s/round':>8s} {'× floor':>8s} {'thesis-style ÷ this':>20s}")
    for name, seconds in rows.items():
        print(f"{name:46s} {seconds:8.3f} {seconds / floor:8.2f} {thesis / seconds:20.2f}")
    print(f"one-time harvest of the cached states: {harvest_s:.2f} s")
