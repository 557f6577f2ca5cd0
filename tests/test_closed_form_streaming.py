"""The closed form's streamed statistics (``Run.total_stats``, ``Harvester.stream_stats``): the bits of the cached
harvest, one client held at a time, and the centralized ridge readout whatever the partition."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import Ridge

from tff_esn.closed_form.configs import ExactReadoutConfig, IncFedConfig, ReadoutConfig
from tff_esn.closed_form.centralized import run_centralized
from tff_esn.closed_form.fedavg_ridge import fit_fedavg_ridge
from tff_esn.closed_form.incfed import run_incfed
from tff_esn.closed_form.run import Run
from tff_esn.data.seed_sources.simulated import SimulatedClients
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.ridge import RidgeStats, with_bias

from closed_form_data import THESIS_SPLIT, default_split, random_dataset, random_thesis_dataset

MB = 2 ** 20


def _ragged(n_clients=30, seed=0):
    """Clients of 5–39 sequences of 8–30 steps (padded), three classes shifting the inputs."""
    rng = np.random.default_rng(seed)
    clients = {}
    for i in range(n_clients):
        n = int(rng.integers(5, 40))
        lengths = rng.integers(8, 31, n)
        y = rng.integers(0, 3, n)
        x = (rng.normal(size=(n, 30, 2)) + y[:, None, None] * 0.5).astype(np.float32)
        x[np.arange(30)[None, :] >= lengths[:, None]] = 0
        clients[f"r{i}"] = ClientSequences(x, y, lengths)
    return SequenceDataset(clients, 3, ("a", "b"), ("k0", "k1", "k2"), "ragged")


def _cases():
    big = random_dataset(n_clients=120, steps=12, seed=3)  # ≈ 720 sequences: batches straddle clients
    ragged = _ragged()
    return [("equal", big, default_split(big), ("all", "mean", "last")),
            ("ragged", ragged, default_split(ragged), ("all", "mean", "last")),
            ("per-step", random_thesis_dataset(), THESIS_SPLIT, ("all", "last"))]


def _identical(a: RidgeStats, b: RidgeStats) -> None:
    assert a.A.tobytes() == b.A.tobytes() and a.B.tobytes() == b.B.tobytes()
    assert (a.n, a.clients, a.bias) == (b.n, b.clients, b.bias)


@pytest.mark.parametrize("name,data,split,modes", _cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_streamed_statistics_and_readouts_have_the_bits_of_the_cached_harvest(name, data, split, modes):
    for mode in modes:
        for raw in (False, True):
            config = IncFedConfig(reservoir=ReservoirConfig(units=20, seed=2), state_mode=mode, raw_inputs=raw,
                                  l2=1e-3, washout=2, backend="numpy")
            streamed = Run(data, split, config, "incfed")
            total = streamed.total_stats()
            assert not streamed.harvester.holds(streamed.weights)  # nothing cached
            cached = Run(data, split, config, "incfed")
            reference = RidgeStats.sum(cached.stats())
            assert cached.harvester.holds(cached.weights)
            _identical(total, reference)
            readout = run_incfed(data, split, config)["model"].members[0].readout.weights
            assert readout.tobytes() == reference.solve(1e-3).tobytes()
            fedavg = ReadoutConfig(reservoir=config.reservoir, state_mode=mode, raw_inputs=raw, l2=1e-3, washout=2)
            assert (fit_fedavg_ridge(Run(data, split, fedavg, "f").client_stats(), 1e-3).tobytes()
                    == fit_fedavg_ridge(Run(data, split, fedavg, "f").stats(), 1e-3).tobytes())


def _streamed_peak(n_clients: int) -> tuple[RidgeStats, int, SimulatedClients, Split, IncFedConfig]:
    source = SimulatedClients(n_clients, sequences=4, steps=10, seed=1)
    split = source.split(val=2, test=2)
    config = IncFedConfig(reservoir=ReservoirConfig(units=40, seed=0), backend="numpy")
    run = Run(source.lazy(), split, config, "incfed")
    tracemalloc.start()
    total = run.total_stats()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return total, peak, source, split, config


def test_a_streamed_federation_holds_one_client_at_a_time():
    _, small, _, _, _ = _streamed_peak(150)
    total, peak, source, split, config = _streamed_peak(1500)
    assert (total.n, total.clients) == (4 * 1496 * 10, 1496)
    # every client's statistics would be 1350 · (41² + 3·41) · 8 B ≈ 19 MB more; the ids and the order ≈ 0.3 MB
    assert peak < small + 1 * MB
    first = RidgeStats.sum(Run(source.dataset(0, 1500), split, config, "incfed").stats())
    _identical(total, first)  # the lazy source's clients are the materialised ones


def test_the_lazy_source_reads_its_clients_by_id_and_refuses_others():
    source = SimulatedClients(12, seed=4)
    clients = source.lazy().clients
    assert len(clients) == 12 and list(clients)[:2] == ["sim00", "sim01"]
    assert clients["sim03"].x.tobytes() == source.client(3).x.tobytes()
    assert "sim12" not in clients and "sim3" not in clients and 3 not in clients
    with pytest.raises(KeyError):
        clients["sim12"]
    with pytest.raises(ValueError, match="no training client"):
        source.split(val=6, test=6)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=24, max_size=24), st.sampled_from([1e-4, 1e-2, 1.0]))
def test_incfed_on_any_partition_is_the_centralized_ridge_readout(assignment, l2):
    pooled = random_dataset(n_clients=4, steps=8, seed=7, sizes=[6, 6, 6, 6])
    x = np.concatenate([c.x for c in pooled.clients.values()])
    y = np.concatenate([c.y for c in pooled.clients.values()])
    owners = np.asarray(assignment)
    clients = {f"p{k}": ClientSequences(x[owners == k], y[owners == k]) for k in np.unique(owners)}
    data = SequenceDataset(clients, pooled.n_classes, pooled.feature_names, pooled.label_names, "partition")
    split = Split("all", tuple(clients))
    reservoir = ReservoirConfig(units=10, seed=5)
    incfed = run_incfed(data, split, IncFedConfig(reservoir=reservoir, state_mode="mean", l2=l2, backend="numpy"))
    central = run_centralized(data, split, ExactReadoutConfig(reservoir=reservoir, state_mode="mean", l2=l2))
    model = incfed["model"]
    states = with_bias(model.states(x))
    reference = Ridge(alpha=l2, fit_intercept=False, solver="cholesky").fit(states, np.eye(3)[y]).coef_
    readout = model.members[0].readout.weights
    np.testing.assert_allclose(readout, reference, rtol=1e-6, atol=1e-8 * np.abs(reference).max())
    np.testing.assert_allclose(readout, central["model"].members[0].readout.weights, rtol=1e-9, atol=1e-12)


def test_the_memory_estimate_of_a_streamed_run_holds_a_kilobyte_a_client_not_its_statistics():
    from tff_esn.registry.algorithms import get_algorithm
    from tff_esn.runs.memory import STREAMED_CLIENT_BYTES, estimate_memory

    config = IncFedConfig(reservoir=ReservoirConfig(units=60), backend="numpy")
    incfed = get_algorithm("incfed")
    assert incfed.streams(config) and get_algorithm("centralized").streams(ExactReadoutConfig())
    assert not incfed.streams(IncFedConfig(l2="auto")) and not incfed.streams(IncFedConfig(backend="tff"))
    assert not get_algorithm("pfedrr").streams(get_algorithm("pfedrr").config())
    source = SimulatedClients(300, seed=0)
    data, split = source.dataset(0, 300), source.split(val=10, test=10)
    streamed = estimate_memory(config, data, split, streamed=True)
    held = estimate_memory(config, data, split)
    train = len(split.train)
    assert held.bytes - streamed.bytes == pytest.approx(train * (8 * 60 ** 2 + 16 * 60 + 8 - STREAMED_CLIENT_BYTES))
