"""The gradient-trained family on many classes of few sequences: 52 classes, two training sequences each, dealt to
5 clients, run with the own-data defaults to a result (the carved validation and the balanced class weights hold)."""

import numpy as np
import pytest

from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.registry.algorithms import resolve_run, run_algorithm

CLASSES = 52


def _fifty_two(seed: int = 0) -> tuple[SequenceDataset, Split]:
    """Two training sequences per class over 5 clients (round-robin after a shuffle), one test sequence per class."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(CLASSES, 3)) * 2.0

    def sequences(labels):
        return (centres[labels][:, None, :] + rng.normal(size=(len(labels), 8, 3)) * 0.5).astype(np.float32)

    train = rng.permutation(np.repeat(np.arange(CLASSES), 2))
    x = sequences(train)
    clients = {f"c{i}": ClientSequences(x[i::5], train[i::5]) for i in range(5)}
    test = np.arange(CLASSES)
    clients["test"] = ClientSequences(sequences(test), test)
    data = SequenceDataset(clients, CLASSES, ("f0", "f1", "f2"), tuple(f"k{k}" for k in range(CLASSES)), "fifty-two")
    return data, Split("many", tuple(f"c{i}" for i in range(5)), (), ("test",))


@pytest.mark.slow  # the state selection, then rounds (epochs) per candidate
@pytest.mark.parametrize("algorithm, budget", [("fedavg", {"rounds": 4, "patience": 2}),
                                               ("fedcurv", {"rounds": 4, "patience": 2}),
                                               ("thesis-central", {"epochs": 6, "patience": 2})])
def test_fifty_two_classes_of_two_training_sequences_run_to_a_result(algorithm, budget, tmp_path):
    data, split = _fifty_two()
    settings = {"progress": False, **({} if algorithm == "thesis-central" else {"out": str(tmp_path)}), **budget}
    record = run_algorithm(resolve_run(algorithm, data, **settings), data, split)
    assert record["validation"]["rule"] == "local hold-out"
    weights = record["extra"]["class_weight"]
    assert len(weights) == CLASSES and all(w > 0 for w in weights)  # every class keeps training sequences
    assert record["test"]["n"] == CLASSES and record["test"]["accuracy"] > 2 / CLASSES
