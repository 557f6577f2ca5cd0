"""Random search of the discriminator's hidden sizes and dropout rates (thesis §6.1).

KerasTuner's ``RandomSearch`` over :data:`SPACE`, each candidate trained as
:func:`discriminator.model.train_discriminator` does; the best validation accuracy wins.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import keras_tuner as kt
import numpy as np
import tensorflow as tf

from tff_esn.common import streams
from discriminator.deltas import DeltaSet
from discriminator.model import DiscriminatorConfig, build_discriminator
from tff_esn.federated.clients import seeded_fit_data
from tuning.oracle import seed_oracle

SPACE = {"hidden_1": (16, 32, 64, 128), "hidden_2": (8, 16, 32, 64), "dropout_1": (0.0, 0.1, 0.2, 0.3, 0.5),
         "dropout_2": (0.0, 0.1, 0.2, 0.3, 0.5)}
"""The searched values of each hyperparameter."""


def search_discriminator(deltas: DeltaSet, base: DiscriminatorConfig = DiscriminatorConfig(), *,
                         max_trials: int = 10, directory: str | os.PathLike | None = None) -> DiscriminatorConfig:
    """The best of ``max_trials`` random architectures by validation accuracy (seeded by ``base.seed``).

    Args:
        deltas: training deltas (only ``x_train``/``y_train`` are used).
        base: everything that is not searched (optimiser, epochs, batch, validation split, seed).
        max_trials: candidates tried (≥ 1).
        directory: KerasTuner's working folder; ``None`` uses a temporary one (removed).

    Returns:
        ``base`` with the best ``hidden`` and ``dropout``.
    """
    if not (isinstance(max_trials, int) and max_trials >= 1):
        raise ValueError(f"search_discriminator: max_trials must be an integer ≥ 1, got {max_trials!r}.")
    if not 0 < base.validation_split < 1:
        raise ValueError(f"search_discriminator: needs a validation split in (0, 1), got {base.validation_split}.")
    order = streams.DISCRIMINATOR_ORDER.generator(base.seed).permutation(len(deltas.y_train))
    x, y = deltas.x_train[order], deltas.y_train[order].astype(np.float32)
    n_fit = len(x) - int(len(x) * base.validation_split)

    def config_of(hp: kt.HyperParameters) -> DiscriminatorConfig:
        return base.replace(hidden=(hp.get("hidden_1"), hp.get("hidden_2")),
                            dropout=(hp.get("dropout_1"), hp.get("dropout_2")))

    def build(hp: kt.HyperParameters) -> tf.keras.Model:
        for name, values in SPACE.items():
            hp.Choice(name, list(values))
        return build_discriminator(deltas.n_inputs, config_of(hp), x[:n_fit])

    workdir = tempfile.mkdtemp(prefix="disc-search-") if directory is None else str(directory)
    try:
        tuner = kt.RandomSearch(build, objective="val_accuracy", max_trials=max_trials, seed=base.seed,
                                directory=workdir, project_name="discriminator", overwrite=True)
        seed_oracle(tuner.oracle, base.seed)
        batches, steps = seeded_fit_data(x[:n_fit], y[:n_fit], batch_size=base.batch_size, epochs=base.epochs,
                                         seed=base.seed)
        tuner.search(batches, validation_data=(x[n_fit:], y[n_fit:]), epochs=base.epochs, steps_per_epoch=steps,
                     verbose=0)
        return config_of(tuner.get_best_hyperparameters(1)[0])
    finally:
        if directory is None:
            shutil.rmtree(workdir, ignore_errors=True)
