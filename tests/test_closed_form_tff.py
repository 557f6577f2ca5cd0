"""The TFF computations (IncFed, FedIP) against the numpy paths and the centralized readout."""

import dataclasses
import numpy as np
import pytest

from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.sequences import ClientSequences
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.incfed import fit_incfed, federate_tff, federate_stats_tff
from tff_esn.closed_form.fedip import IPConfig, fedip_numpy, fedip_tff
from tff_esn.esn.ridge import SingularSystemError

from closed_form_data import random_dataset

WEIGHTS = ReservoirWeights.from_config(ReservoirConfig(units=10, leaky=0.7, seed=2), 3)


def _centralized(data, ids, spec, l2, weights=WEIGHTS):
    return Harvester(data, spec).stats_of(weights, data.pooled(ids)).solve(l2)


@pytest.mark.parametrize("mode,washout", [("all", 0), ("all", 3), ("last", 0), ("mean", 2)])
def test_tff_incfed_equals_centralized_and_numpy(mode, washout):
    data = random_dataset(n_clients=4, seed=1)
    spec = StateSpec(mode, washout)
    clients = list(data.clients.values())
    w_tff = federate_tff(WEIGHTS, clients, 3, spec, 1e-2).readout
    w_np = fit_incfed([Harvester(data, spec).stats(WEIGHTS, c) for c in data.client_ids], 1e-2)
    ref = _centralized(data, data.client_ids, spec, 1e-2)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(w_tff, ref, atol=1e-4 * scale)
    np.testing.assert_allclose(w_np, ref, atol=1e-4 * scale)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tff_incfed_is_invariant_to_random_partitions_and_orders(seed):
    """Re-partition the pooled sequences into a random number of clients in a random order."""
    data = random_dataset(n_clients=3, seed=7)
    pooled = data.pooled(data.client_ids)
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 6))
    order = rng.permutation(len(pooled))
    cuts = np.sort(rng.choice(np.arange(1, len(pooled)), size=k - 1, replace=False))
    clients = [ClientSequences(pooled.x[idx], pooled.y[idx]) for idx in np.split(order, cuts)]
    spec = StateSpec("all", 1)
    ref = _centralized(data, data.client_ids, spec, 1e-3)
    np.testing.assert_allclose(federate_tff(WEIGHTS, clients, 3, spec, 1e-3).readout, ref,
                               atol=1e-4 * np.abs(ref).max())


def test_tff_incfed_per_step_labels_and_lambda_per_client():
    data = random_dataset(n_clients=3, seed=4, per_step=True)
    spec = StateSpec("all", 2, readout_bias=False)
    h = Harvester(data, spec)
    stats = [h.stats(WEIGHTS, c) for c in data.client_ids]
    for per_client in (False, True):
        ref = fit_incfed(stats, 0.05, per_client=per_client)
        got = federate_tff(WEIGHTS, list(data.clients.values()), 3, spec, 0.05, per_client=per_client).readout
        np.testing.assert_allclose(got, ref, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize("per_client", [False, True])
def test_tff_incfed_from_harvested_stats_equals_numpy_and_tff_harvest(per_client):
    data = random_dataset(n_clients=3, seed=5)
    spec = StateSpec("all", 1)
    stats = [Harvester(data, spec).stats(WEIGHTS, c) for c in data.client_ids]
    ref = fit_incfed(stats, 0.05, per_client=per_client)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(federate_stats_tff(stats, 0.05, per_client=per_client), ref, atol=1e-9 * scale)
    np.testing.assert_allclose(federate_tff(WEIGHTS, list(data.clients.values()), 3, spec, 0.05,
                                              per_client=per_client).readout, ref, atol=1e-4 * scale)


def test_tff_incfed_from_stats_errors():
    data = random_dataset(n_clients=2, steps=4, seed=0, sizes=[1, 1])
    stats = [Harvester(data, StateSpec("last")).stats(WEIGHTS, c) for c in data.client_ids]
    with pytest.raises(SingularSystemError):
        federate_stats_tff(stats, 0.0)


def test_tff_incfed_errors():
    data = random_dataset(n_clients=2, steps=4, seed=0, sizes=[1, 1])
    clients = list(data.clients.values())
    with pytest.raises(SingularSystemError):
        federate_tff(WEIGHTS, clients, 3, StateSpec("last"), 0.0).readout
    with pytest.raises(ValueError, match="clients"):  # the boundary: a dataset holds at least one client
        dataclasses.replace(data, clients={})
    other = ReservoirWeights.from_config(ReservoirConfig(units=10), 5)
    with pytest.raises(ValueError, match="inputs"):  # the boundary: the harvest of a run's data
        Harvester(data, StateSpec("last")).stats(other, data.client_ids[0])
    with pytest.raises(ValueError, match="washout"):
        federate_tff(WEIGHTS, clients, 3, StateSpec("all", 4), 0.1).readout


def test_tff_fedip_equals_numpy_fedip():
    data = random_dataset(n_clients=3, seed=5)
    clients = list(data.clients.values())
    cfg = IPConfig(sigma=0.2, eta=0.01, epochs=2, batch_size=3)
    a = fedip_numpy(WEIGHTS, clients, cfg, 2)
    b = fedip_tff(WEIGHTS, clients, cfg, 2)[0]
    np.testing.assert_allclose(b.gain, a.gain, atol=1e-5)
    np.testing.assert_allclose(b.bias, a.bias, atol=1e-5)
    assert np.abs(a.gain - 1).max() > 1e-2  # IP did move the gains


def test_fedip_with_zero_learning_rate_is_incfed():
    data = random_dataset(n_clients=3, seed=6)
    clients = list(data.clients.values())
    adapted = fedip_tff(WEIGHTS, clients, IPConfig(eta=0.0, epochs=1), 2)[0]
    np.testing.assert_array_equal(adapted.gain, WEIGHTS.gain)
    np.testing.assert_array_equal(adapted.bias, WEIGHTS.bias)
    spec = StateSpec("all")
    np.testing.assert_array_equal(federate_tff(adapted, clients, 3, spec, 1e-2).readout,
                                  federate_tff(WEIGHTS, clients, 3, spec, 1e-2).readout)
