"""Reservoir harvest speed: our layer vs ``tfa.layers.ESN`` vs numpy, against a GEMM floor.

Workloads: W1 = 15 sequences × 6000 steps × 1 feature → 200 units;
W2 = 1500 × 350 × 8 → 500 units. Modes: all states returned, final state, and in-loop ridge
statistics (:func:`tff_esn.esn.states_tf.accumulate_stats`), and the numpy backend
(:func:`tff_esn.esn.states_numpy.states_and_statistics`, all states). The floor is the time of
GEMMs with the same multiply-adds as the recurrence (one (T·B, U)×(U, U) product per state
matrix, plus one (U, T·B)×(T·B, U) product for Sᵀ S in the statistics mode), measured in the
same run. On W1 a "1 step/iteration" row per mode traces the same layer with one time step per
loop iteration (the loop without unrolling, :data:`~tff_esn.esn.states_tf.UNROLL`), so the gain
is a ratio within one run. A second table times the TF recurrence with a dense and a
``tf.SparseTensor`` Ŵ (connectivity 0.1, 500–2000 units): the layer would use the sparse kernel
only where it wins. A third times the numpy recurrence's step with a dense and a CSR Ŵ at
low densities (:data:`~tff_esn.esn.states_numpy.SPARSE_DENSITY` is where CSR starts). A fourth
times the closed-form :class:`~tff_esn.closed_form.harvest.Harvester` on an ACSF1-sized data set
(200 sequences × 1460 steps × 1 feature → 300 units, mean states) split into 5 and 20 clients:
every client pooled in one pass vs one client at a time.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tff_esn import Reservoir, ReservoirConfig  # noqa: E402
from tff_esn.closed_form.harvest import Harvester  # noqa: E402
from tff_esn.data.sequences import ClientSequences, SequenceDataset  # noqa: E402
from tff_esn.esn import states_numpy, states_tf  # noqa: E402
from tff_esn.esn.draws import recurrent_weights  # noqa: E402
from tff_esn.esn.states_numpy import states_and_statistics  # noqa: E402
from tff_esn.esn.weights import ReservoirWeights, StateSpec  # noqa: E402


def timed(fn, repeats: int) -> tuple[float, float]:
    """Best wall and best process-CPU seconds of ``repeats`` calls after a warm-up (tracing)."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def best_of(fn, repeats: int) -> float:
    return timed(fn, repeats)[0]


def gemm_floor(rows: int, units: int, products: int, repeats: int) -> float:
    a = tf.random.normal([rows, units])
    w = tf.random.normal([units, units])
    gemm = tf.function(lambda: tf.reduce_sum(tf.matmul(a, w)))
    return products * best_of(lambda: gemm().numpy(), repeats)


def tfa_layer(units: int, leaky: float, return_sequences: bool):
    import tensorflow_addons as tfa

    return tfa.layers.ESN(units, leaky=leaky, connectivity=0.1, return_sequences=return_sequences)


def run_workload(name: str, batch: int, steps: int, features: int, units: int, repeats: int,
                 before: bool = False) -> list[tuple]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch, steps, features)).astype(np.float32)
    y = rng.normal(size=(batch, 2)).astype(np.float32)
    cfg = ReservoirConfig(units=units, leaky=0.5, recurrent_connectivity=0.1, seed=0)
    rows = []
    macs = steps * batch * units * (units + features)
    floor = gemm_floor(steps * batch, units, 1, repeats)
    for mode in ("all", "last"):
        ours = Reservoir(cfg, state_mode=mode)
        ref = tfa_layer(units, 0.5, mode == "all")
        ref_fn = tf.function(lambda v: ref(v))
        ours_fn = tf.function(lambda v: ours(v))
        t_ours, c_ours = timed(lambda: ours_fn(x).numpy(), repeats)
        t_tfa, c_tfa = timed(lambda: ref_fn(x).numpy(), repeats)
        if mode == "all":
            t_all_tfa, c_all_tfa = t_tfa, c_tfa
        rows.append((name, f"{mode} states", t_ours, t_tfa, t_tfa / t_ours, floor, t_ours / floor,
                     2 * macs / t_ours / 1e9, c_tfa / c_ours))
        if not before:
            continue
        one_fn = _one_step_loop(ours, x)
        t_one, c_one = timed(lambda: one_fn(x).numpy(), repeats)
        rows.append((name, f"{mode} states, 1 step/iteration", t_one, t_tfa, t_tfa / t_one, floor,
                     t_one / floor, 2 * macs / t_one / 1e9, c_tfa / c_one))
    ours = Reservoir(cfg, state_mode="all")
    ours.build(x.shape)
    weights = ReservoirWeights.from_layer(ours)
    tensors = [tf.constant(w) for w in weights.layer_weights()[:3]]
    lengths = tf.fill([batch], steps)

    def in_loop_stats():
        return [v.numpy() for v in states_tf.accumulate_stats(
            tf.constant(x), tf.constant(y), lengths, *tensors, None, weights.leaky, tf.constant(0), tf.constant(32),
            False, False)]

    t_stats = best_of(in_loop_stats, repeats)
    t_tfa_stats = best_of(lambda: _tfa_then_stats(x, y, units), 1) if batch * steps * units <= 1e9 else float("nan")
    stats_floor = gemm_floor(steps * batch, units, 2, repeats)
    rows.append((name, "in-loop stats", t_stats, t_tfa_stats, t_tfa_stats / t_stats, stats_floor,
                 t_stats / stats_floor, 2 * (macs + steps * batch * units * units) / t_stats / 1e9, float("nan")))
    t_np, c_np = timed(lambda: states_and_statistics(x, *weights.layer_weights(), 0.5, keep="all"), repeats)
    rows.append((name, "all states, numpy backend", t_np, t_all_tfa, t_all_tfa / t_np, floor,
                 t_np / floor, 2 * macs / t_np / 1e9, c_all_tfa / c_np))
    return rows


def _one_step_loop(layer: Reservoir, x: np.ndarray):
    """``layer`` traced for ``x`` with one time step per ``tf.while_loop`` iteration (no unrolling)."""
    saved, states_tf.UNROLL = states_tf.UNROLL, 1
    try:
        fn = tf.function(lambda v: layer(v))
        fn(x)
    finally:
        states_tf.UNROLL = saved
    return fn


def sparse_rows(quick: bool) -> list[tuple]:
    """Per-step µs of the recurrence with a dense Ŵ vs a ``tf.SparseTensor`` Ŵ (connectivity 0.1).

    Same loop (8 steps per iteration, batch 15, 200 steps) around ``tf.matmul`` or
    ``tf.sparse.sparse_dense_matmul``; wall and process CPU seconds (CPU time is the steadier
    figure on a shared machine).
    """
    steps, batch, rows = 200, 15, []
    for units in (500,) if quick else (500, 1000, 2000):
        w = recurrent_weights(ReservoirConfig(units=units, recurrent_connectivity=0.1, seed=0))
        proj = tf.random.stateless_normal([steps, batch, units], seed=[0, 0])
        dense = tf.constant(w)
        sparse_t = tf.sparse.from_dense(tf.constant(w.T))

        def loop(product):
            def block(t, x):
                for i in range(8):
                    x = x + 0.5 * (tf.tanh(tf.gather(proj, t + i) + product(x)) - x)
                return t + 8, x
            return tf.function(lambda: tf.while_loop(lambda t, x: t < steps, block, (0, tf.zeros([batch, units])))[1],
                               autograph=False)

        (dw, dc), (sw, sc) = (timed(lambda: fn().numpy(), 3) for fn in (
            loop(lambda x: tf.matmul(x, dense)),
            loop(lambda x: tf.transpose(tf.sparse.sparse_dense_matmul(sparse_t, x, adjoint_b=True)))))
        rows.append((units, *(v / steps * 1e6 for v in (dw, sw, dc, sc)), "sparse" if sc < dc else "dense"))
    return rows


def numpy_sparse_rows(quick: bool) -> list[tuple]:
    """µs per step of the numpy recurrence (:func:`tff_esn.esn.states_numpy.states`) with Ŵ
    multiplied dense and as CSR, at low densities and two batch sizes (best of 3, 100 steps)."""
    cases = [(1000, 0.01, 15), (1000, 0.01, 256)] if quick else [
        (1000, 0.01, 15), (1000, 0.01, 256), (2000, 0.005, 15), (2000, 0.005, 256), (300, 0.03, 256),
        (300, 0.05, 256)]
    steps, rows = 100, []
    saved = states_numpy.SPARSE_DENSITY
    for units, density, batch in cases:
        w = ReservoirWeights.from_config(ReservoirConfig(units=units, recurrent_connectivity=density, seed=0), 4)
        x = np.random.default_rng(0).normal(size=(batch, steps, 4)).astype(np.float32)
        arrays, times = w.layer_weights(), []
        for threshold in (-1.0, 1.0):  # never CSR, always CSR
            states_numpy.SPARSE_DENSITY = threshold
            try:
                times.append(best_of(lambda: sum(1 for _ in states_numpy.states(x, *arrays, 0.5, None)), 3))
            finally:
                states_numpy.SPARSE_DENSITY = saved
        faster = "CSR" if times[1] < times[0] else "dense"
        rows.append((units, density, batch, *(t / steps * 1e6 for t in times), faster))
    return rows


def pooled_rows(quick: bool) -> list[tuple]:
    """Seconds of the Harvester's statistics of every client: pooled in one pass vs one client at a time."""
    sequences, steps = (40, 300) if quick else (200, 1460)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(sequences, steps, 1)).astype(np.float32)
    y = rng.integers(0, 10, sequences)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=300, leaky=0.5, seed=0), 1)
    rows = []
    for n_clients in (5, 20):
        parts = np.array_split(np.arange(sequences), n_clients)
        data = SequenceDataset({f"c{i}": ClientSequences(x[p], y[p]) for i, p in enumerate(parts)}, 10, ("f0",),
                               tuple(str(c) for c in range(10)), "bench")

        def pooled():
            Harvester(data, StateSpec("mean")).harvest(weights, data.client_ids)

        def one_at_a_time():
            harvester = Harvester(data, StateSpec("mean"))
            for cid in data.client_ids:
                harvester.harvest(weights, [cid])

        rows.append((sequences, steps, n_clients, best_of(pooled, 3), best_of(one_at_a_time, 3)))
    return rows


_TFA_CACHE: dict = {}


def _tfa_then_stats(x, y, units):
    """The thesis-style route: tfa returns every state, then Sᵀ S and Yᵀ S in one go."""
    key = (x.shape, units)
    if key not in _TFA_CACHE:
        layer = tfa_layer(units, 0.5, True)
        _TFA_CACHE[key] = tf.function(lambda v: layer(v))
    s = _TFA_CACHE[key](x)
    flat = tf.reshape(s, [-1, units])
    yy = tf.reshape(tf.repeat(y[:, None], x.shape[1], axis=1), [-1, y.shape[1]])
    return tf.matmul(flat, flat, transpose_a=True).numpy(), tf.matmul(yy, flat, transpose_a=True).numpy()


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    repeats = 1 if quick else 3
    workloads = [("W1 15×6000×1→200", 15, 6000 if not quick else 600, 1, 200, True),
                 ("W2 1500×350×8→500", 1500 if not quick else 150, 350, 8, 500, False)]
    header = ("workload", "mode", "ours s", "tfa s", "tfa/ours", "GEMM floor s", "ours/floor", "GFLOP/s",
              "tfa/ours CPU")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for name, b, t, f, u, before in workloads:
        for row in run_workload(name, b, t, f, u, repeats, before):
            print(" | ".join(v if isinstance(v, str) else f"{v:.3g}" for v in row), flush=True)
    print(f"\n(threads: {tf.config.threading.get_inter_op_parallelism_threads() or 'default'}, "
          f"cores: {os.cpu_count()}; best of {repeats})")
    print("\nrecurrent kernel, connectivity 0.1, batch 15 (µs per step; best of 3)")
    header = ("units", "dense wall", "sparse wall", "dense CPU", "sparse CPU", "faster (CPU)")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in sparse_rows(quick):
        print(" | ".join(v if isinstance(v, str) else f"{v:.4g}" for v in row), flush=True)
    print(f"\nnumpy recurrent product, dense vs CSR (µs per step; best of 3; CSR at density ≤ "
          f"{states_numpy.SPARSE_DENSITY})")
    header = ("units", "density", "batch", "dense", "CSR", "faster")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in numpy_sparse_rows(quick):
        print(" | ".join(v if isinstance(v, str) else f"{v:.4g}" for v in row), flush=True)
    print("\nclosed-form harvest, 300 units, mean states: clients pooled vs one at a time (s; best of 3)")
    header = ("sequences", "steps", "clients", "pooled", "one at a time")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in pooled_rows(quick):
        print(" | ".join(f"{v:.3g}" for v in row), flush=True)
