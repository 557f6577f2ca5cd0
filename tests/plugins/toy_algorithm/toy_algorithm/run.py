"""The class prior: every client's label counts summed; the readout scores each class by its smoothed frequency."""

from __future__ import annotations

import numpy as np

from tff_esn.common.metrics import split_report
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.model import Readout, model_of
from tff_esn.esn.weights import ReservoirWeights, StateSpec

from toy_algorithm.registration import class_prior_cost


def _labels(dataset, ids) -> np.ndarray:
    return np.concatenate([dataset.clients[c].y.reshape(-1) for c in ids]).astype(np.int64)


def run_class_prior(dataset, split, config) -> dict:
    """The train/val/test sections, the communication and the model of the smoothed pooled class frequencies."""
    k = dataset.n_classes
    counts = np.bincount(_labels(dataset, split.train), minlength=k) + config.smoothing
    prior = counts / counts.sum()

    def section(ids):
        y = _labels(dataset, ids)
        return split_report(y, np.tile(prior, (y.size, 1)), k, seed=config.seed) if ids else None

    weights = ReservoirWeights.from_config(ReservoirConfig(units=4), len(dataset.feature_names))
    readout = Readout("ridge", np.concatenate([np.zeros((k, 4)), prior[:, None]], axis=1))
    model = model_of(weights, readout, StateSpec("mean"), dataset.task, dataset.feature_names, dataset.label_names)
    return {"train": section(split.train), "val": section(split.val), "test": section(split.test),
            "communication": class_prior_cost(len(split.train), k).to_dict(), "model": model, "prior": prior.tolist()}
