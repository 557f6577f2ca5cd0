"""Small seeded random data sets for the closed-form tests (no data pipeline needed)."""

import numpy as np

from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split


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


def default_split(dataset):
    ids = dataset.client_ids
    return Split("random", tuple(ids[:-2]), (ids[-2],), (ids[-1],))
