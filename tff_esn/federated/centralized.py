"""The centralized thesis ESN (thesis §6.1, Table 6.3): the reference of the federated runs.

The model is re-trained on the whole *design set* (training + validation subjects) and
assessed on the design set (DS) and the test set (TS) with accuracy, AUC and F1 (micro) —
Table 6.3's columns. The reservoir is fixed, so the design set's states are harvested once
and the readout is trained on them with Keras ``fit`` (Adam, class-weighted binary
cross-entropy, batch 20, Table 6.2), which is the same optimisation as fitting the full
model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from tff_esn.communication import centralized as centralized_cost
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.federated import clients as client_data
from tff_esn.federated.model import ThesisModelConfig, build_thesis_model, compile_thesis_model
from tff_esn.metrics import split_report


def _states(dataset: SequenceDataset, ids, config: ThesisModelConfig):
    pooled = dataset.pooled(ids)
    return client_data.harvest(pooled.x, config.reservoir, config), client_data.targets(pooled, config)


def train_centralized(dataset: SequenceDataset, split: Split, config: ThesisModelConfig, *, seed: int = 0,
                      include_validation: bool = True) -> tuple[tf.keras.Model, dict[str, Any]]:
    """Fits the readout on the design set; returns the readout model and Table 6.3's metrics.

    Args:
        include_validation: train on training + validation subjects (the design set, as for
            Table 6.3); ``False`` trains on the training subjects only (model selection).
        seed: seed of the epoch orders (:func:`tff_esn.federated.clients.seeded_fit_data`;
            the readout's initialisation is seeded by the reservoir seed). No global RNG is
            read or set.

    Returns:
        ``(readout_model, report)`` where ``report`` has the ``train``, ``val``, ``test``
        sections (:func:`tff_esn.metrics.split_report`, ``None`` for an empty group),
        ``design`` (the set trained on) and ``communication`` (raw inputs uploaded once).
    """
    if dataset.n_classes != 2:
        raise ValueError(f"train_centralized: the thesis model is a binary classifier; the data has "
                         f"{dataset.n_classes} classes.")
    design_ids = tuple(split.train) + (tuple(split.val) if include_validation else ())
    states, labels = _states(dataset, design_ids, config)
    model = compile_thesis_model(build_thesis_model(config.reservoir.units, config, readout_only=True), config)
    batches, steps = client_data.seeded_fit_data(states, labels, batch_size=config.batch_size,
                                                 epochs=config.epochs, seed=seed)
    model.fit(batches, epochs=config.epochs, steps_per_epoch=steps, verbose=0)

    def report(ids):
        if not ids:
            return None
        s, y = _states(dataset, ids, config)
        scores = model.predict(s, batch_size=1024, verbose=0).reshape(-1)
        return split_report(y.reshape(-1).astype(np.int64), scores, 2, seed=seed)

    raw = [int(dataset.clients[c].x.size) for c in design_ids]
    result = {name: report(getattr(split, name)) for name in ("train", "val", "test")}
    result["design"] = report(design_ids)
    result["communication"] = centralized_cost(raw).to_dict()
    return model, result
