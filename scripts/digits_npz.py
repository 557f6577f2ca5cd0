"""The built-in bring-your-own npz: scikit-learn's handwritten digits as sequences.

``tff-esn reproduce`` must run offline, and the UEA/UCR archives the bench converts come
from a wheel that is not a dependency. scikit-learn (a dependency: the baselines) ships the
UCI optical handwritten digits (1797 images of 8×8 pixels, intensities 0–16, 10 classes) —
real data, not generated. Each image is read row by row as a sequence of **8 steps of 8
features** (a row's pixels / 16, in [0, 1]); the label is the digit's **parity** (0: even,
1: odd; 891 even vs 906 odd), a binary task, so both IncFed and the binary thesis model of
FedAvg run on it. The UCI set records no writer ids, so the sequences are dealt to
:data:`CLIENTS` clients at random (iid, seed :data:`SEED`): the first :data:`TRAIN_CLIENTS`
clients are ``train``, then :data:`VAL_CLIENTS` ``val`` and the rest ``test`` (the ``npz``
split reads that column). The file is written in the :func:`tff_esn.data.sequences.load_npz`
format under ``<cache>/datasets/`` with a versioned name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

NAME = "sklearn-digits"
VERSION = 1
CLIENTS = 20
TRAIN_CLIENTS = 14
VAL_CLIENTS = 3
SEED = 0


def digits_arrays() -> dict[str, np.ndarray]:
    """``X`` (1797, 8, 8) float32, ``y`` parity, ``client`` ids and ``split`` (module docstring)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)
    y = (digits.target % 2).astype(np.int64)
    order = np.random.default_rng(SEED).permutation(len(y))
    client = np.empty(len(y), np.int64)
    client[order] = np.arange(len(y)) % CLIENTS
    groups = np.array(["train"] * TRAIN_CLIENTS + ["val"] * VAL_CLIENTS + ["test"] * (CLIENTS - TRAIN_CLIENTS
                                                                                      - VAL_CLIENTS))
    return {"X": x, "y": y, "client": client, "split": groups[client]}


def digits_npz(cache_root: Path) -> Path:
    """The npz file of :func:`digits_arrays` under ``cache_root/datasets`` (written once)."""
    path = Path(cache_root) / "datasets" / f"{NAME}-parity-v{VERSION}.npz"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, **digits_arrays())
        tmp.replace(path)
    return path
