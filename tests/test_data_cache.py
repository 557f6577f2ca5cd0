"""The on-disk dataset cache gives back exactly what it was given."""

import numpy as np

from tff_esn.data.cache import load_dataset, save_dataset
from tff_esn.data.sequences import ClientSequences, SequenceDataset
from tff_esn.common.tasks import Task


def test_round_trip_keeps_lengths_and_task(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 6, 2)).astype(np.float32)
    lengths = np.array([6, 2, 4])
    x[1, 2:] = 0
    x[2, 4:] = 0
    ragged = ClientSequences(x, rng.normal(size=3), lengths)
    even = ClientSequences(rng.normal(size=(2, 6, 2)).astype(np.float32), rng.normal(size=2))
    dataset = SequenceDataset({"a": ragged, "b": even}, 1, ("u", "v"), ("y",), "npz:r.npz",
                              groups={"a": "train", "b": "test"}, task=Task("regress"))
    back = load_dataset(save_dataset(tmp_path / "d.npz", dataset))
    assert back.task == Task("regress")
    np.testing.assert_array_equal(back.clients["a"].lengths, lengths)
    assert back.clients["b"].lengths is None
    for cid in ("a", "b"):
        np.testing.assert_array_equal(back.clients[cid].x, dataset.clients[cid].x)
        np.testing.assert_array_equal(back.clients[cid].y, dataset.clients[cid].y)
    assert dict(back.groups) == dict(dataset.groups)
