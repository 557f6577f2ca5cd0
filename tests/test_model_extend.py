"""A closed-form model keeps its aggregate ridge statistics (``keep_stats``) and ``incfed --add-to`` extends it with
new clients: the model IncFed trains on all clients together (IncFed eqs. 8–10), refused in one line where the new
data or settings cannot extend it."""

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tff_esn import resolve_run, run_algorithm
from tff_esn.cli import main
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.model import Member, Model
from tff_esn.esn.ridge import RidgeStats
from tff_esn.esn.weights import ReservoirWeights

from closed_form_data import random_dataset, write_npz

FIXED = {"units": 8, "backend": "numpy", "reservoir_search": ()}


def _part(dataset: SequenceDataset, train, name: str) -> tuple[SequenceDataset, Split]:
    """``dataset``'s clients ``train`` for training and its last two clients for validation and test, as ``name``."""
    ids = dataset.client_ids
    keep = [*train, ids[-2], ids[-1]]
    return (dataclasses.replace(dataset, clients={c: dataset.clients[c] for c in keep}, source=name),
            Split("s", tuple(train), (ids[-2],), (ids[-1],)))


def _balanced(n_clients: int, seed: int, per_step: bool, steps: int = 8) -> SequenceDataset:
    """Clients of six sequences, two of each of three classes (any client set trains every class), the class
    shifting the inputs' mean; per-step labels repeat the sequence's."""
    rng = np.random.default_rng(seed)
    clients = {}
    for i in range(n_clients):
        y = rng.permutation(np.arange(6) % 3)
        x = rng.normal(size=(6, steps, 3)) + 0.5 * y[:, None, None]
        clients[f"c{i}"] = ClientSequences(x.astype(np.float32), np.repeat(y[:, None], steps, 1) if per_step else y)
    return SequenceDataset(clients, 3, ("f0", "f1", "f2"), ("k0", "k1", "k2"), "random")


def _readout(record) -> np.ndarray:
    return record.model.members[0].readout.weights


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_adding_clients_b_to_a_model_of_a_is_incfed_on_a_and_b(tmp_path_factory, data):
    n = data.draw(st.integers(4, 7), label="training clients")
    dataset = _balanced(n + 2, data.draw(st.integers(0, 99), label="data seed"),
                        data.draw(st.booleans(), label="per step"))
    ids = list(dataset.client_ids[:n])
    first = data.draw(st.sets(st.sampled_from(ids), min_size=1, max_size=n - 1), label="A")
    a, b = [c for c in ids if c in first], [c for c in ids if c not in first]
    modes = ["last", "all"] if dataset.clients[ids[0]].per_step else ["last", "mean", "all"]
    setting = {**FIXED, "state_mode": data.draw(st.sampled_from(modes), label="state mode"),
               "l2": data.draw(st.sampled_from([1e-4, 1e-2, 1.0]), label="λ"),
               "l2_per_client": data.draw(st.booleans(), label="λ per client"),
               "seed": data.draw(st.integers(0, 5), label="seed")}
    data_a, split_a = _part(dataset, a, "A")
    data_b, split_b = _part(dataset, b, "B")
    data_ab, split_ab = _part(dataset, a + b, "A+B")
    folder = run_algorithm(resolve_run("incfed", data_a, keep_stats=True, **setting), data_a, split_a).model.save(
        tmp_path_factory.mktemp("extend") / "model")
    added = run_algorithm(resolve_run("incfed", data_b, add_to=str(folder), **{**setting, "l2": "auto"}),
                          data_b, split_b)
    whole = run_algorithm(resolve_run("incfed", data_ab, keep_stats=True, **setting), data_ab, split_ab)
    np.testing.assert_allclose(_readout(added), _readout(whole), rtol=1e-7, atol=1e-9)
    test = dataset.pooled(split_ab.test)
    np.testing.assert_allclose(added.model.decision_function(test.x), whole.model.decision_function(test.x),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(added.model.predict(test.x), whole.model.predict(test.x))
    kept, total = added.model.stats, whole.model.stats
    assert (kept.n, kept.clients) == (total.n, total.clients) and total.clients == len(ids)
    np.testing.assert_allclose(kept.B, total.B, rtol=1e-12)
    np.testing.assert_allclose(kept.A, total.A, rtol=1e-12, atol=1e-12)
    assert added["l2_selection"]["rule"] == "saved model" and added["l2_selection"]["l2"] == setting["l2"]
    assert added["extends"]["data"] == "A" and added.model.provenance["extends"]["clients"] == len(a)
