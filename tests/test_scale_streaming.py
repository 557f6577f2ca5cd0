"""Streaming subrounds: IncFed/pFedRR over many clients = all clients at once, lazily, resumable."""

import gc
import weakref

import numpy as np
import pytest

from tff_esn import ReservoirConfig
from tff_esn.closed_form.configs import IncFedConfig, PFedRRConfig
from tff_esn.data.sequences import ClientSequences, SequenceDataset
from tff_esn.data.seed_sources.simulated import SimulatedClients
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.incfed import federate_tff, fit_incfed, stream_incfed
from tff_esn.closed_form.pfedrr import fit_pfedrr, stream_pfedrr
from tff_esn.closed_form.streaming import DatasetClients

SIM = SimulatedClients(11, sequences=3, steps=8, features=3, n_classes=3, seed=5)
SPEC = StateSpec(washout=1)
WEIGHTS = ReservoirWeights.from_config(ReservoirConfig(units=6, seed=2), 3)


@pytest.fixture(scope="module")
def everything():
    data = SIM.dataset(0, SIM.n_clients)
    harvester = Harvester(data, SPEC)
    return data, [harvester.stats(WEIGHTS, c) for c in data.client_ids]


def test_simulated_clients_are_a_pure_function_of_seed_and_index():
    a = SimulatedClients(50, seed=3)
    b = SimulatedClients(7, seed=3)
    np.testing.assert_array_equal(a.client(4).x, b.client(4).x)
    assert not np.array_equal(a.client(4).x, SimulatedClients(50, seed=4).client(4).x)
    sizes = [len(d.clients) for d in a.subrounds(20)]
    assert sizes == [20, 20, 10]
    assert list(next(a.subrounds(20, start=2)).clients) == [a.client_id(i) for i in range(40, 50)]
    with pytest.raises(ValueError, match="n_clients"):
        SimulatedClients(0)
    with pytest.raises(ValueError, match="size"):
        next(a.subrounds(0))


def test_streamed_incfed_equals_all_clients_at_once(everything):
    data, stats = everything
    streamed = stream_incfed(WEIGHTS, SIM, SPEC, 1e-3, subround_size=4)
    assert streamed.subrounds == 3 and streamed.stats.clients == 11 and streamed.stats.n == sum(s.n for s in stats)
    at_once = federate_tff(WEIGHTS, list(data.clients.values()), 3, SPEC, 1e-3).readout
    np.testing.assert_allclose(streamed.readout, at_once, rtol=0, atol=1e-10)
    np.testing.assert_allclose(streamed.readout, fit_incfed(stats, 1e-3), rtol=1e-5, atol=1e-6)
    per_client = stream_incfed(WEIGHTS, DatasetClients(data), SPEC, 1e-3, subround_size=5, per_client=True)
    np.testing.assert_allclose(per_client.readout, fit_incfed(stats, 1e-3, per_client=True), rtol=1e-5, atol=1e-6)


def test_streamed_pfedrr_equals_fit_pfedrr(everything):
    data, stats = everything
    streamed = stream_pfedrr(WEIGHTS, data, SPEC, 0.4, 1e-3, seed=7, subround_size=3)
    reference = fit_pfedrr(stats, 0.4, 1e-3, seed=7)
    for name in ("exact", "important", "random"):
        np.testing.assert_allclose(getattr(streamed, name), getattr(reference, name), rtol=1e-10, atol=1e-12)
    assert streamed.percent_units == pytest.approx(reference.percent_units)
    assert not np.allclose(reference.important, reference.exact)


class _Recording:
    """A source that keeps weak references to the subrounds it delivered (and can fail)."""

    def __init__(self, inner, fail_at=None):
        self.inner, self.fail_at, self.delivered = inner, fail_at, []
        self.n_clients = inner.n_clients

    def subrounds(self, size, *, start=0):
        k = start
        for clients in self.inner.subrounds(size, start=start):
            if k == self.fail_at:
                raise KeyboardInterrupt
            gc.collect()
            alive = [r() is not None for r in self.delivered]
            assert not any(alive), f"subround {k}: earlier subrounds are still held in memory"
            self.delivered.append(weakref.ref(clients))
            yield clients
            del clients
            k += 1


def test_only_one_subround_is_held_at_a_time():
    source = _Recording(SIM)
    stream_pfedrr(WEIGHTS, source, SPEC, 0.5, 1e-3, subround_size=2)
    assert len(source.delivered) == 6


def test_interrupted_stream_resumes_from_its_checkpoint(everything, tmp_path):
    data, stats = everything
    path = tmp_path / "stream.npz"
    with pytest.raises(KeyboardInterrupt):
        stream_pfedrr(WEIGHTS, _Recording(SIM, fail_at=2), SPEC, 0.4, 1e-3, seed=7, subround_size=3, checkpoint=path)
    resumed_source = _Recording(SIM)
    resumed = stream_pfedrr(WEIGHTS, resumed_source, SPEC, 0.4, 1e-3, seed=7, subround_size=3, checkpoint=path)
    assert len(resumed_source.delivered) == 2  # subrounds 2 and 3 only
    whole = stream_pfedrr(WEIGHTS, SIM, SPEC, 0.4, 1e-3, seed=7, subround_size=3)
    for name in ("exact", "important", "random"):
        np.testing.assert_array_equal(getattr(resumed, name), getattr(whole, name))
    with pytest.raises(ValueError, match="belongs to another run"):
        stream_pfedrr(WEIGHTS, SIM, SPEC, 0.5, 1e-3, seed=7, subround_size=3, checkpoint=path)


def test_bad_streams_are_rejected_by_name():
    with pytest.raises(ValueError, match="subround_size"):  # the boundary: the configs
        IncFedConfig(subround_size=0)
    with pytest.raises(ValueError, match="tau"):
        PFedRRConfig(tau=0.0)
    rng = np.random.default_rng(0)
    mixed = SequenceDataset(
        {"a": ClientSequences(rng.normal(size=(2, 8, 3)).astype(np.float32), np.array([0, 1])),
         "b": ClientSequences(rng.normal(size=(2, 8, 3)).astype(np.float32), np.array([[1] * 8, [2] * 8]))},
        3, ("x0", "x1", "x2"), ("k0", "k1", "k2"), "mixed")
    with pytest.raises(ValueError, match="labels of the same kind; subround from client 1 differs"):
        stream_incfed(WEIGHTS, mixed, SPEC, 1e-3, subround_size=1)


@pytest.mark.parametrize("clients_per_call", [1, 3, 11])
def test_blocks_of_clients_per_tff_call_give_the_per_client_readout(everything, clients_per_call):
    data, stats = everything
    blocked = stream_incfed(WEIGHTS, SIM, SPEC, 1e-3, subround_size=5, clients_per_call=clients_per_call,
                            per_client=True)
    assert blocked.stats.clients == 11 and blocked.stats.n == sum(s.n for s in stats)
    np.testing.assert_allclose(blocked.readout, fit_incfed(stats, 1e-3, per_client=True), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="clients_per_call"):
        stream_incfed(WEIGHTS, SIM, SPEC, 1e-3, clients_per_call=0)


@pytest.mark.parametrize("name", ["incfed", "pfedrr"])
def test_run_with_subround_size_writes_the_metrics_of_the_one_shot_run(name, tmp_path, monkeypatch):
    import json

    from closed_form_data import fake_data_modules
    from tff_esn.cli import main
    from tff_esn.data.sequences import Split

    ids = SIM.dataset(0, SIM.n_clients).client_ids
    split = Split("sim", ids[:8], ids[8:10], ids[10:])
    fake_data_modules(monkeypatch, lambda *a, **k: SIM.dataset(0, SIM.n_clients), lambda *a, **k: split)
    flags = ["--units", "6", "--l2", "1e-2", "--washout", "1"]
    records = []
    for extra in ([], ["--subround-size", "3"]):
        out = tmp_path / ("streamed" if extra else "whole")
        assert main(["run", name, "--out", str(out), *flags, *extra]) == 0
        records.append(json.loads((out / "metrics.json").read_text()))
    whole, streamed = records
    for group in ("train", "val", "test"):
        assert streamed[group]["accuracy"] == whole[group]["accuracy"]
        assert streamed[group]["f1_macro"] == pytest.approx(whole[group]["f1_macro"], abs=1e-12)
    assert streamed["communication"] == whole["communication"]
    assert streamed["extra"].get("percent_units") == whole["extra"].get("percent_units")


def test_interrupted_incfed_stream_resumes_from_its_checkpoint(tmp_path):
    path = tmp_path / "incfed.npz"
    with pytest.raises(KeyboardInterrupt):
        stream_incfed(WEIGHTS, _Recording(SIM, fail_at=2), SPEC, 1e-3, subround_size=3, clients_per_call=2,
                      checkpoint=path)
    source = _Recording(SIM)
    resumed = stream_incfed(WEIGHTS, source, SPEC, 1e-3, subround_size=3, clients_per_call=2, checkpoint=path)
    assert len(source.delivered) == 2 and resumed.subrounds == 4 and resumed.stats.clients == 11
    whole = stream_incfed(WEIGHTS, SIM, SPEC, 1e-3, subround_size=3, clients_per_call=2)
    np.testing.assert_array_equal(resumed.readout, whole.readout)
