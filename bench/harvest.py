"""Reservoir harvest speed: our layer vs ``tfa.layers.ESN`` vs numpy, against a GEMM floor.

Workloads (issue 2): W1 = 15 sequences × 6000 steps × 1 feature → 200 units;
W2 = 1500 × 350 × 8 → 500 units. Modes: all states returned, final state, and in-loop ridge
statistics (``Reservoir.harvest_stats``). The floor is the time of GEMMs with the same
multiply-adds as the recurrence (one (T·B, U)×(U, U) product per state matrix, plus one
(U, T·B)×(T·B, U) product for Sᵀ S in the statistics mode), measured in the same run.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tff_esn import Reservoir, ReservoirConfig  # noqa: E402


def best_of(fn, repeats: int) -> float:
    fn()  # warm-up: tracing / compilation
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def gemm_floor(rows: int, units: int, products: int, repeats: int) -> float:
    a = tf.random.normal([rows, units])
    w = tf.random.normal([units, units])
    gemm = tf.function(lambda: tf.reduce_sum(tf.matmul(a, w)))
    return products * best_of(lambda: gemm().numpy(), repeats)


def numpy_harvest(x: np.ndarray, kernel, recurrent, bias, leaky) -> np.ndarray:
    proj = np.einsum("btf,fu->tbu", x, kernel)
    state = np.zeros((x.shape[0], kernel.shape[1]), np.float32)
    for t in range(x.shape[1]):
        state = (1 - leaky) * state + leaky * np.tanh(proj[t] + state @ recurrent + bias)
    return state


def tfa_layer(units: int, leaky: float, return_sequences: bool):
    import tensorflow_addons as tfa

    return tfa.layers.ESN(units, leaky=leaky, connectivity=0.1, return_sequences=return_sequences)


def run_workload(name: str, batch: int, steps: int, features: int, units: int, repeats: int) -> list[tuple]:
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
        t_ours = best_of(lambda: ours_fn(x).numpy(), repeats)
        t_tfa = best_of(lambda: ref_fn(x).numpy(), repeats)
        rows.append((name, f"{mode} states", t_ours, t_tfa, t_tfa / t_ours, floor, t_ours / floor,
                     2 * macs / t_ours / 1e9))
    ours = Reservoir(cfg, state_mode="all")
    ours.build(x.shape)
    t_stats = best_of(lambda: ours.harvest_stats(x, y, chunk=32), repeats)
    t_tfa_stats = best_of(lambda: _tfa_then_stats(x, y, units), 1) if batch * steps * units <= 1e9 else float("nan")
    stats_floor = gemm_floor(steps * batch, units, 2, repeats)
    rows.append((name, "in-loop stats", t_stats, t_tfa_stats, t_tfa_stats / t_stats, stats_floor,
                 t_stats / stats_floor, 2 * (macs + steps * batch * units * units) / t_stats / 1e9))
    if batch * steps <= 200_000:
        k, r, b = (w.numpy() for w in (ours.kernel, ours.recurrent_kernel, ours.bias))
        t_np = best_of(lambda: numpy_harvest(x, k, r, b, 0.5), 1)
        rows.append((name, "numpy last state", t_np, float("nan"), float("nan"), floor, t_np / floor,
                     2 * macs / t_np / 1e9))
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
    workloads = [("W1 15×6000×1→200", 15, 6000 if not quick else 600, 1, 200),
                 ("W2 1500×350×8→500", 1500 if not quick else 150, 350, 8, 500)]
    header = ("workload", "mode", "ours s", "tfa s", "tfa/ours", "GEMM floor s", "ours/floor", "GFLOP/s")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for name, b, t, f, u in workloads:
        for row in run_workload(name, b, t, f, u, repeats):
            print(" | ".join(v if isinstance(v, str) else f"{v:.3g}" for v in row), flush=True)
    print(f"\n(threads: {tf.config.threading.get_inter_op_parallelism_threads() or 'default'}, "
          f"cores: {os.cpu_count()}; best of {repeats})")
