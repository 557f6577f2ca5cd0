"""Warnings a run records (tff_esn.common.run_warnings) and their place in metrics.json."""

import warnings

import numpy as np

from tff_esn.registry.algorithms import resolve_run, run_algorithm
from tff_esn.closed_form.configs import ExactReadoutConfig
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.common.run_warnings import RunWarning, recording, warn


def test_recording_keeps_each_message_once_in_order_and_passes_others_through(capsys):
    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        with recording() as said:
            warn("first   thing\n said")
            warn("second")
            warn("first thing said")
            warnings.warn("not ours", DeprecationWarning)
    assert said == ["first thing said", "second"]
    assert [str(w.message) for w in outer] == ["not ours"]
    assert capsys.readouterr().err.count("warning: first thing said") == 1


def test_run_algorithm_records_the_warnings_of_the_run(monkeypatch):
    rng = np.random.default_rng(0)
    labels = {c: rng.integers(0, 2, 12) for c in ("a", "b")}  # learnable: no collapse warning of the run's own
    clients = {c: ClientSequences(rng.normal(size=(12, 10, 2)) + y[:, None, None], y) for c, y in labels.items()}
    dataset = SequenceDataset(clients, 2, ("f0", "f1"), ("0", "1"), "test")
    config = ExactReadoutConfig(reservoir=ReservoirConfig(units=8, seed=1))
    import tff_esn.closed_form.centralized as centralized

    real = centralized.run_centralized

    def noisy(*args):
        warn("something to know")
        return real(*args)

    monkeypatch.setattr(centralized, "run_centralized", noisy)
    record = run_algorithm(resolve_run("centralized", dataset, config=config), dataset, Split("s", ("a",), test=("b",)))
    assert record["warnings"] == ["something to know"]
    assert issubclass(RunWarning, UserWarning)
