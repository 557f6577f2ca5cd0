"""Harvest cost of sequences of unequal length.

Workload: JapaneseVowels-like, 2560 sequences (4 × the data set) of 7–29 steps (uniform) × 12 features → 300
units, ridge statistics with the readout bias, in the ``all`` and ``mean`` state modes.
Compared, all in the same run on the numpy backend (same statistics up to float32 rounding, checked):

* sorted — the :class:`~tff_esn.closed_form.harvest.Harvester`: rows sorted by length, batches of 256
  padded to their own longest sequence, masked (the default);
* padded — the same masked harvest on batches in file order, every batch padded to 29;
* per-length — one unmasked harvest per distinct length (23 shapes, one trace each);
* crop — every sequence cut to the shortest (7 steps): what ``--ragged crop`` costs.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from bench.harvest import best_of  # noqa: E402
from tff_esn.esn.hyperparameters import ReservoirConfig  # noqa: E402
from tff_esn.data.sequences import ClientSequences, SequenceDataset  # noqa: E402
from tff_esn.closed_form.harvest import Harvester  # noqa: E402
from tff_esn.esn.weights import ReservoirWeights, StateSpec  # noqa: E402
from tff_esn.esn.ridge import RidgeStats, one_hot  # noqa: E402
from tff_esn.esn.states_numpy import states_and_statistics  # noqa: E402

BATCH = 256


def workload(n: int, seed: int = 0) -> ClientSequences:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(7, 30, n)
    x = np.zeros((n, 29, 12), np.float32)
    for i, t in enumerate(lengths):
        x[i, :t] = rng.normal(size=(t, 12))
    return ClientSequences(x, rng.integers(0, 9, n), lengths)


def batch_stats(x: np.ndarray, targets: np.ndarray, weights: ReservoirWeights, mode: str,
                lengths: np.ndarray | None = None) -> RidgeStats:
    """Ridge statistics (readout bias on) of one batch by the numpy backend, as the Harvester takes them."""
    states, parts = states_and_statistics(x, *weights.layer_weights(), weights.leaky, keep="mean", lengths=lengths,
                                          targets=targets if mode == "all" else None)
    if mode == "all":
        (a, b, count), = parts
        return RidgeStats(a, b, count, 1, True)
    return RidgeStats.from_states(states, targets, bias=True)


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    n, repeats = (160, 1) if quick else (2560, 5)
    client = workload(n)
    data = SequenceDataset({"c": client}, 9, tuple(f"f{i}" for i in range(12)), tuple("012345678"), "bench")
    weights = ReservoirWeights.from_config(ReservoirConfig(units=300, leaky=0.5), 12)
    targets = one_hot(client.y, 9).astype(np.float32)
    print(f"{n} sequences of {client.steps.min()}–{client.steps.max()} steps × 12 features → 300 units "
          f"(best of {repeats}; shared 2-core machine)")
    print(f"{'mode':>5} {'sorted s':>9} {'padded s':>9} {'per-length s':>13} {'crop s':>7} "
          f"{'padded/sorted':>14} {'per-length/sorted':>18} {'max |ΔB|/|B|':>14}")
    for mode in ("all", "mean"):
        spec = StateSpec(mode, 0)
        harvester = Harvester(data, spec, batch_size=BATCH)

        def sorted_batches():
            return harvester.stats_of(weights, client)

        def padded():
            return RidgeStats.sum([batch_stats(client.x[i:i + BATCH], targets[i:i + BATCH], weights, mode,
                                               client.lengths[i:i + BATCH]) for i in range(0, n, BATCH)])

        def per_length():
            parts = []
            for t in np.unique(client.lengths):
                rows = np.flatnonzero(client.lengths == t)
                parts += [batch_stats(client.x[rows[i:i + BATCH], :t], targets[rows[i:i + BATCH]], weights, mode)
                          for i in range(0, rows.size, BATCH)]
            return RidgeStats.sum(parts)

        cropped = ClientSequences(client.x[:, :7], client.y)

        def crop():
            return harvester.stats_of(weights, cropped)

        times = {name: best_of(fn, repeats) for name, fn in
                 (("sorted", sorted_batches), ("padded", padded), ("per-length", per_length), ("crop", crop))}
        reference = per_length().B
        error = max(np.abs(fn().B - reference).max() for fn in (sorted_batches, padded)) / np.abs(reference).max()
        print(f"{mode:>5} {times['sorted']:9.3f} {times['padded']:9.3f} {times['per-length']:13.3f} "
              f"{times['crop']:7.3f} {times['padded'] / times['sorted']:14.2f} "
              f"{times['per-length'] / times['sorted']:18.2f} {error:14.1e}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
