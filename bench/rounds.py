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

First, the backends (:func:`backends`): rounds/s of FedAvg and FedCurv (λ 1e-4) on cached
states (130 sequences × 200 units per client, batch 20, one epoch, server lr 0.1) for 10 and
100 clients per round, and of FedAvg in the faithful mode (the reservoir in the model, raw
inputs of 10 steps) for 10 clients, run by TFF (``--backend tff``; cached states
file-backed), by the simulation (``--backend sim``) and by a plain numpy float32 loop with
the same arithmetic on the same batches (TFF's Adam on the sigmoid readout with the weighted
cross-entropy, FedCurv's Fisher and penalty gradient, the faithful mode's reservoir by
:func:`tff_esn.esn.states_numpy.states`, the example-weighted mean, the server SGD step).
Targets: simulation ≤ 2× the numpy loop's time, ≥ 10× faster than TFF. ``--backends``: this
table only.
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
from tff_esn.esn.states_numpy import states  # noqa: E402
from tff_esn.federated import ThesisModelConfig, build_thesis_model, learning_process  # noqa: E402
from tff_esn.federated.clients import CachedStates, RawInputs, RoundArrays, lean_options  # noqa: E402
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

    return learning_process(model_fn, client_learning_rate=config.learning_rate)


_EPSILON = np.float32(1e-7)


def _numpy_client(x: np.ndarray, y: np.ndarray, orders: np.ndarray, kernel: np.ndarray, bias: np.ndarray, *,
                  lr: float, batch: int, class_weight: tuple[float, float], penalty: float | None,
                  u: tuple[np.ndarray, np.ndarray], v: tuple[np.ndarray, np.ndarray],
                  reservoir: tuple | None) -> tuple[np.ndarray, ...]:
    """A client's local epochs in numpy float32: TFF's Adam (β 0.9, 0.999, ε 1e-7,
    ``build_adam``'s update) on ``mean(w[y]·BCE(y, sigmoid(s k + b)))``, the batches of
    ``orders``; ``s`` the cached states, or — ``reservoir`` ``(W_in, Ŵ, b, g, a)`` — the last
    reservoir states of the batch's raw inputs (:func:`tff_esn.esn.states_numpy.states`).
    FedCurv (``penalty`` λ): every batch's Fisher ``D_b = (∇ Σ[log p + log(1 − p)])² / B``,
    ``v_b = D_b ⊙ w`` and the penalty gradient ``λ (2 w ⊙ (u − u_b) − 2 (v − v_b))``.
    Returns the trained kernel and bias, the last batch's ``u_b`` (kernel, bias), ``v_b``, and the
    training loss metric's ``Σ_b n_b · loss_b``."""
    weights = [kernel.copy(), bias.copy()]
    moments = [np.zeros_like(w) for w in weights * 2]
    fisher = [np.zeros_like(w) for w in weights * 2]
    loss_sum = np.float32(0)
    w0, w1 = np.float32(class_weight[0]), np.float32(class_weight[1])
    t = 0
    for order in orders:
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            xb, yb = x[rows], y[rows]
            if reservoir is not None:
                *_, xb = states(xb, *reservoir, None)  # the last state (one buffer, overwritten)
            k, b = weights
            p = 1.0 / (1.0 + np.exp(-(xb @ k + b)))
            size = np.float32(len(rows))
            class_weights = w0 + (w1 - w0) * yb
            clipped = np.clip(p, _EPSILON, 1 - _EPSILON)  # Keras' cross-entropy and the log-likelihood clip p
            inside = (clipped == p).astype(np.float32)  # ... and pass no gradient where they clipped
            loss_sum += np.sum(class_weights * -(yb * np.log(clipped + _EPSILON)
                                                 + (1 - yb) * np.log(1 - clipped + _EPSILON)))
            dp = (1 - yb) / (1 - clipped + _EPSILON) - yb / (clipped + _EPSILON)
            g = class_weights * dp * inside * p * (1 - p) / size
            grads = [xb.T @ g, g.sum(axis=0)]
            if penalty is not None:
                d = (1.0 - 2.0 * p) * inside
                fisher[:2] = [np.square(xb.T @ d) / size, np.square(d.sum(axis=0)) / size]
                fisher[2:] = [f * w for f, w in zip(fisher[:2], weights)]
                grads = [gr + np.float32(penalty) * (2.0 * w * (uu - ub) - 2.0 * (vv - vb))
                         for gr, w, uu, vv, ub, vb in zip(grads, weights, u, v, fisher[:2], fisher[2:])]
            t += 1
            step = np.float32(lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t))
            for i, (w, grad) in enumerate(zip(weights, grads)):
                moments[i] += (grad - moments[i]) * np.float32(0.1)
                moments[i + 2] += (np.square(grad) - moments[i + 2]) * np.float32(0.001)
                w -= step * moments[i] / (np.sqrt(moments[i + 2]) + np.float32(1e-7))
    return (*weights, *fisher, loss_sum)


def _numpy_round(data: RoundArrays, state: tuple, *, lr: float, class_weight: tuple[float, float], server_lr: float,
                 penalty: float | None, reservoir: tuple | None) -> tuple[tuple, np.float32]:
    """FedAvg's or FedCurv's round in numpy float32: every client's local epoch, the example-weighted
    mean delta, the server SGD step; FedCurv: ``u = max(Σ u_b, 0)``, ``v = Σ v_b``. Returns the new
    ``(kernel, bias, u, v)`` and the round's training loss (``Σ n_b · loss_b / Σ n_b``)."""
    kernel, bias, u, v = state
    sums = [np.zeros_like(kernel), np.zeros_like(bias)]
    u_sum, v_sum = [np.zeros_like(kernel), np.zeros_like(bias)], [np.zeros_like(kernel), np.zeros_like(bias)]
    total = loss_sum = np.float32(0)
    for client in data.clients:
        k, b, uk, ub, vk, vb, loss = _numpy_client(client.x, client.y, client.orders, kernel, bias, lr=lr,
                                                   batch=data.batch_size, class_weight=class_weight,
                                                   penalty=penalty, u=u, v=v, reservoir=reservoir)
        n = np.float32(client.orders.size)
        sums[0] += n * (kernel - k)
        sums[1] += n * (bias - b)
        total += n
        loss_sum += loss
        for acc, new in zip(u_sum + v_sum, (uk, ub, vk, vb)):
            acc += new
    step = np.float32(server_lr)
    state = (kernel - step * sums[0] / total, bias - step * sums[1] / total,
             tuple(np.maximum(t, 0) for t in u_sum), tuple(v_sum))
    return state, loss_sum / total


def backends(n_clients: int, rounds: int, *, penalty: float | None = None, faithful: bool = False,
             units: int = 200, n_seq: int = 130) -> dict[str, float]:
    """Median seconds per round of TFF, the simulation and the numpy loop (rounds interleaved), FedAvg
    (``penalty=None``) or FedCurv, on cached states or — ``faithful`` — the reservoir in the model."""
    config = ThesisModelConfig(reservoir=ReservoirConfig(units=units, spectral_radius=0.99), batch_size=20,
                               state_mode="last", class_weight=(1.0, 3.0))
    rng = np.random.default_rng(0)
    clients = {}
    for i in range(n_clients):
        x = rng.normal(size=(n_seq, 10, 1)).astype(np.float32)
        clients[f"S{i}"] = ClientSequences(x, (x[:, -1, 0] > 0.8).astype(np.int64))
    ids = list(clients)
    with tempfile.TemporaryDirectory() as tmp:
        if faithful:
            source = RawInputs(clients, config, seed=0, shuffle=True)
        else:
            source = CachedStates(clients, config, seed=0, shuffle=True, cache_dir=tmp)
        spec = source.dataset(ids[0], 0).element_spec

        def model_fn():
            keras_model = build_thesis_model(1 if faithful else units, config, readout_only=not faithful)
            return tff.learning.models.from_keras_model(keras_model, loss=thesis_loss(config), input_spec=spec)

        rates = dict(client_learning_rate=config.learning_rate, server_learning_rate=0.1)
        tff_process = learning_process(model_fn, penalty=penalty, **rates)
        sim_process = learning_process(model_fn, penalty=penalty, runtime="sim", **rates)
        initial = sim_process.initialize()
        reservoir = None
        if faithful:
            layer = build_thesis_model(1, config).get_layer("reservoir")
            reservoir = (layer.kernel.numpy(), layer.recurrent_kernel.numpy(), layer.bias.numpy(),
                         np.ones(units, np.float32), layer.leaky)
        zeros = tuple(np.zeros_like(w) for w in initial["trainable"])

        def numpy_next(state, r):
            return _numpy_round(source.in_memory(ids, r), state, lr=config.learning_rate,
                                class_weight=config.class_weight, server_lr=0.1, penalty=penalty,
                                reservoir=reservoir)[0]

        rows = {"tff": (lambda st, r: tff_process.next(st, source.datasets(ids, r)).state, tff_process.initialize()),
                "sim": (lambda st, r: sim_process.next(st, source.in_memory(ids, r)).state, initial),
                "numpy": (numpy_next, (*initial["trainable"], zeros, zeros))}
        states = {name: step(state, 0) for name, (step, state) in rows.items()}  # warm-up: tracing
        times = {name: [] for name in rows}
        for r in range(1, rounds + 1):
            for name, (step, _) in rows.items():
                t0 = time.perf_counter()
                states[name] = step(states[name], r)
                times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}


def _report_backends(quick: bool) -> None:
    print("Rounds of 130 sequences × 200 units per client (cached states, or raw inputs of 10 steps with the "
          "reservoir in the model: faithful), batch 20, one epoch, every client every round, server lr 0.1; "
          "median of interleaved rounds after one warm-up round")
    print(f"{'round':>22s} {'tff s':>8s} {'sim s':>8s} {'numpy s':>8s} {'tff rounds/s':>13s} {'sim rounds/s':>13s} "
          f"{'numpy rounds/s':>15s} {'sim ÷ numpy':>12s} {'tff ÷ sim':>10s}")
    cases = [(n, penalty, False) for penalty in (None, 1e-4) for n in ((4, 10) if quick else (10, 100))]
    for n_clients, penalty, faithful in cases + [(4 if quick else 10, None, True)]:
        s = backends(n_clients, 3 if quick or n_clients > 10 else 9, penalty=penalty, faithful=faithful)
        name = f"{'FedCurv' if penalty else 'FedAvg'} {'faithful' if faithful else 'cached'} {n_clients:3d}"
        print(f"{name:>22s} {s['tff']:8.3f} {s['sim']:8.3f} {s['numpy']:8.3f} {1 / s['tff']:13.2f} "
              f"{1 / s['sim']:13.2f} {1 / s['numpy']:15.2f} {s['sim'] / s['numpy']:12.2f} {s['tff'] / s['sim']:10.1f}")
        print(f"{'':22s} targets: sim ≤ 2× numpy: {'met' if s['sim'] <= 2 * s['numpy'] else 'missed'}; "
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

