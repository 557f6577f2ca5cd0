"""The privacy experiment's npz data kind: the built-in digits file and --npz FILE."""

import numpy as np
import pytest

from scripts.digits_npz import digits_arrays, digits_npz
from scripts.framework import NPZ_BUILTIN, DataSources
from tff_esn.data.sequences import load_npz
from tff_esn.data.splits import get_split


def test_digits_npz_is_sklearns_digits_as_sequences_with_the_parity_label(tmp_path):
    from sklearn.datasets import load_digits

    digits = load_digits()
    arrays = digits_arrays()
    np.testing.assert_allclose(arrays["X"], digits.images / 16.0, rtol=1e-6)
    np.testing.assert_array_equal(arrays["y"], digits.target % 2)
    dataset = load_npz(digits_npz(tmp_path))
    split = get_split("npz", dataset)
    assert dataset.n_classes == 2 and len(dataset.clients) == 20
    assert dataset.clients[split.train[0]].x.shape[1:] == (8, 8)
    assert (len(split.train), len(split.val), len(split.test)) == (14, 3, 3)
    assert sum(len(dataset.clients[c]) for c in dataset.client_ids) == 1797


def test_npz_source_validation_and_description(tmp_path):
    assert DataSources().npz == NPZ_BUILTIN and "scikit-learn" in DataSources().describe("npz")
    mine = DataSources(npz=f"npz:{tmp_path / 'x.npz'}")
    assert mine.source("npz").endswith("x.npz") and "bring-your-own npz" in mine.describe("npz")
    assert not mine.synthetic("npz") and mine.to_dict()["npz"] == mine.npz
    with pytest.raises(ValueError, match="npz source"):
        DataSources(npz="digits")
