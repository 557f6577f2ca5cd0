"""What keeps the closed-form selection cheap: the state modes of a reservoir share one pass, sums in place."""

from __future__ import annotations

import numpy as np
import pytest
from closed_form_data import random_dataset

from tff_esn.registry import algorithms
from tff_esn.closed_form import harvest
from tff_esn.closed_form.harvest import Harvester
from tff_esn.data.sequences import ClientSequences, Split
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.ridge import RidgeStats
from tff_esn.esn.states_numpy import states_and_statistics
from tff_esn.esn.weights import ReservoirWeights, StateSpec


@pytest.mark.parametrize("seed", range(4))
def test_mean_and_last_from_one_pass_are_each_modes_own_states_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    data = random_dataset(n_clients=3, steps=12, seed=seed)
    lengths = rng.integers(4, 13, size=len(data.clients["c0"]))
    ragged = ClientSequences(data.clients["c0"].x, data.clients["c0"].y, lengths=lengths)
    data = type(data)({**data.clients, "c0": ragged}, data.n_classes, data.feature_names, data.label_names, "r")
    weights = ReservoirWeights.from_config(ReservoirConfig(units=9, leaky=0.6, seed=seed), 3)
    w = weights
    both, _ = states_and_statistics(ragged.x, w.kernel, w.recurrent, w.bias, w.gain, w.leaky, keep="mean+last",
                                    washout=2, lengths=lengths)
    for k, mode in enumerate(("mean", "last")):
        alone, _ = states_and_statistics(ragged.x, w.kernel, w.recurrent, w.bias, w.gain, w.leaky, keep=mode,
                                         washout=2, lengths=lengths)
        np.testing.assert_array_equal(both[:, k * 9:(k + 1) * 9], alone)
    everything = Harvester(data, StateSpec("all", 2, True))
    everything.cache(weights, data.client_ids)
    for mode in ("mean", "last"):
        own, adopted = Harvester(data, StateSpec(mode, 2, True)), Harvester(data, StateSpec(mode, 2, True))
        own.cache(weights, data.client_ids)  # the same pooled batches as the ``all`` pass: BLAS rounds alike
        adopted.adopt(weights, everything, data.client_ids)
        for cid in data.client_ids:
            np.testing.assert_array_equal(adopted.features(weights, cid).states, own.features(weights, cid).states)
            mine, theirs = adopted.stats(weights, cid), own.stats(weights, cid)
            np.testing.assert_array_equal(mine.B, theirs.B)
            np.testing.assert_array_equal(mine.A, theirs.A)


def test_the_state_modes_of_a_reservoir_cost_one_pass_of_the_training_data(monkeypatch):
    data = random_dataset(n_clients=4, seed=5, sizes=[10] * 4)
    split = Split("own", ("c0", "c1", "c2"), (), ("c3",))
    passes = []
    original = Harvester._pass

    def counted(self, weights, clients, with_stats):
        passes.append((self.spec.state_mode, weights.key, any(with_stats)))
        return original(self, weights, clients, with_stats)

    monkeypatch.setattr(harvest.Harvester, "_pass", counted)
    config = algorithms.config_from_flags(algorithms.get_algorithm("centralized").config,
                                          {"units": 12, "seed": 1, "l2": "auto", "state_mode": "auto",
                                           "reservoir_search": ("leaky",), "objective": "balanced_accuracy"})
    record = algorithms.run_algorithm(algorithms.resolve_run("centralized", data, config=config), data, split)
    training = [p for p in passes if p[2]]
    assert len(record["selection"]["candidates"]) == 4  # mean, last, all and one leak rate
    assert len(training) == 2 and training[0][0] == "all"  # one for the three modes, one for the other leak rate


@pytest.mark.parametrize("seed", range(5))
def test_the_sum_of_statistics_is_chained_addition_bit_for_bit_and_leaves_its_parts_alone(seed):
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(int(rng.integers(2, 9))):
        n = int(rng.integers(1, 9))
        parts.append(RidgeStats.from_states(rng.normal(size=(n, 5)), rng.normal(size=(n, 2)), bias=True))
    first = parts[0].B.copy()
    chained = parts[0]
    for part in parts[1:]:
        chained = chained + part
    total = RidgeStats.sum(parts)
    np.testing.assert_array_equal(total.A, chained.A)
    np.testing.assert_array_equal(total.B, chained.B)
    assert (total.n, total.clients) == (chained.n, chained.clients) == (sum(p.n for p in parts), len(parts))
    np.testing.assert_array_equal(parts[0].B, first)
