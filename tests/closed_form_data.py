"""Small seeded random data sets for tests that need no data pipeline."""

import sys
import types

import numpy as np

from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.model import Model, Readout, model_of
from tff_esn.esn.weights import ReservoirWeights, StateSpec


def random_dataset(n_clients=5, steps=10, features=3, n_classes=3, seed=0, per_step=False, sizes=None):
    """Clients with 4–8 sequences each whose class shifts the input mean (learnable, not trivial)."""
    rng = np.random.default_rng(seed)
    clients = {}
    for i in range(n_clients):
        n = int(sizes[i]) if sizes is not None else int(rng.integers(4, 9))
        y = rng.integers(0, n_classes, size=(n, steps) if per_step else n)
        shift = (y if per_step else np.repeat(y[:, None], steps, 1))[..., None] * 0.5
        x = rng.normal(size=(n, steps, features)) + shift
        clients[f"c{i}"] = ClientSequences(x.astype(np.float32), y)
    return SequenceDataset(clients, n_classes, tuple(f"f{j}" for j in range(features)),
                           tuple(f"k{j}" for j in range(n_classes)), "random")


def toy_model(dataset) -> Model:
    """A 4-unit model of zero ridge readout on ``dataset``'s features and outputs: what a toy algorithm returns."""
    weights = ReservoirWeights.from_config(ReservoirConfig(units=4), len(dataset.feature_names))
    outputs = 1 if dataset.task.real else dataset.n_classes
    return model_of(weights, Readout("ridge", np.zeros((outputs, 5))), StateSpec("mean"), dataset.task,
                    dataset.feature_names, dataset.label_names)


def write_npz(path, dataset, groups, *, labels=True):
    """``dataset`` as an npz file (X, y, client, split; without y unless ``labels``, without split for ``groups``
    None), client ``i`` in group ``groups[i]``, sequences of unequal length as an object array of each at its
    length; returns ``path``."""
    ids = dataset.client_ids
    if dataset.ragged:
        sequences = [s[:n] for c in ids for s, n in zip(dataset.clients[c].x, dataset.clients[c].steps)]
        x = np.empty(len(sequences), dtype=object)
        x[:] = sequences
    else:
        x = np.concatenate([dataset.clients[c].x for c in ids])
    arrays = {"y": np.concatenate([dataset.clients[c].y for c in ids])} if labels else {}
    if groups is not None:
        arrays["split"] = np.concatenate([[g] * len(dataset.clients[c]) for c, g in zip(ids, groups)])
    np.savez(path, X=x, client=np.concatenate([[c] * len(dataset.clients[c]) for c in ids]), **arrays)
    return path


def default_split(dataset):
    ids = dataset.client_ids
    return Split("random", tuple(ids[:-2]), (ids[-2],), (ids[-1],))


THESIS_SPLIT = Split("tiny", train=("S0", "S1", "S2", "S3"), val=("S4",), test=("S5",))


def random_thesis_dataset() -> SequenceDataset:
    """Six thesis-like clients: 4 channels, per-step binary labels loosely tied to channel 0."""
    rng = np.random.default_rng(0)
    clients = {}
    for i in range(6):
        n = 6 + i
        x = rng.normal(size=(n, 10, 4)).astype(np.float32)
        y = (x[..., 0] + 0.4 * rng.normal(size=(n, 10)) > 1.0).astype(np.int64)
        clients[f"S{i}"] = ClientSequences(x, y)
    return SequenceDataset(clients, 2, ("pEDA", "tEDA", "HR", "HRV"), ("no stress", "stress"), "random")


def fake_data_modules(monkeypatch, load_source, get_split):
    """``tff_esn.data.sources`` and ``tff_esn.data.splits`` replaced by ``load_source`` and ``get_split`` (the CLI's
    wiring without the pipelines): no layout, stand-in or task before the values load."""
    monkeypatch.setitem(sys.modules, "tff_esn.data.sources",
                        types.SimpleNamespace(load_source=load_source, source_layout=lambda *a, **k: None,
                                              source_stand_in=lambda *a, **k: None, source_task=lambda *a, **k: None))
    monkeypatch.setitem(sys.modules, "tff_esn.data.splits", types.SimpleNamespace(get_split=get_split))


def many_classes_dataset(seed=2, n_classes=52, per_class=2, clients=4, steps=8):
    """``clients`` training clients holding ``per_class`` sequences of each of ``n_classes`` classes (dealt round-robin
    after a seeded shuffle) and a ``test`` client of one sequence per class; seed 2 hashes both training sequences of
    classes 16, 46 and 51 into the first fold of a carved hold-out."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), per_class)
    rng.shuffle(y)
    x = rng.normal(size=(y.size, steps, 2)) + y[:, None, None] * 0.1
    data = {f"c{i}": ClientSequences(x[i::clients].astype(np.float32), y[i::clients]) for i in range(clients)}
    test = np.arange(n_classes)
    data["test"] = ClientSequences((rng.normal(size=(n_classes, steps, 2)) + test[:, None, None] * 0.1)
                                   .astype(np.float32), test)
    return SequenceDataset(data, n_classes, ("f0", "f1"), tuple(f"k{j}" for j in range(n_classes)), "many-classes")


def write_ts(folder, name="Toy", n_train=24, n_test=12, classes=3, steps=12, seed=0, ragged=False):
    """A learnable .ts problem ``folder/name_{TRAIN,TEST}.ts`` whose class shifts both dimensions' mean; returns its
    ``ts:`` source."""
    rng = np.random.default_rng(seed)
    labels = [f"c{i}" for i in range(classes)]
    head = f"@problemName {name}\n@univariate false\n@dimensions 2\n@classLabel true {' '.join(labels)}\n@data\n"
    for part, n in (("TRAIN", n_train), ("TEST", n_test)):
        lines = []
        for i in range(n):
            k = i % classes
            t = int(rng.integers(steps // 2, steps + 1)) if ragged else steps
            x = rng.normal(size=(t, 2)) + k
            lines.append(":".join(",".join(f"{v:.4f}" for v in x[:, d]) for d in range(2)) + f":{labels[k]}")
        (folder / f"{name}_{part}.ts").write_text(head + "\n".join(lines) + "\n")
    return f"ts:{folder / name}"
