"""The centralized thesis ESN (thesis §6.1, Table 6.3): the reference of the federated runs.

The model is re-trained on the whole *design set* (training + validation subjects) and
assessed on the design set (DS) and the test set (TS) with accuracy, AUC and F1 (micro) —
Table 6.3's columns. The reservoir is fixed, so the design set's states are harvested once
(each sequence at its own length) and the readout is trained on them with Keras ``fit``
(Adam, class-weighted cross-entropy, batch 20, Table 6.2), which is the same optimisation as
fitting the full model. On K > 2 classes the readout is a softmax
(:mod:`tff_esn.federated.model`). With ``patience`` the readout trains on the training
clients and stops early on the validation clients' loss, restoring the best epoch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from tff_esn.communication import centralized as centralized_cost
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.federated import clients as client_data
from tff_esn.federated.configs import for_data, loss_labels
from tff_esn.federated.model import ThesisModelConfig, build_thesis_model, compile_thesis_model
from tff_esn.metrics import split_report
from tff_esn.run_warnings import warn


def _states(dataset: SequenceDataset, ids, config: ThesisModelConfig):
    pooled = dataset.pooled(ids)
    return client_data.client_states(pooled, config.reservoir, config), client_data.targets(pooled, config)


def train_centralized(dataset: SequenceDataset, split: Split, config: ThesisModelConfig, *, seed: int = 0,
                      include_validation: bool = True, patience: int = 0) -> tuple[tf.keras.Model, dict[str, Any]]:
    """Fits the readout on the design set; returns the readout model and Table 6.3's metrics.

    Args:
        config: the thesis model, resolved for the data here
            (:func:`~tff_esn.federated.configs.for_data`: one class weight per class).
        include_validation: train on training + validation subjects (the design set, as for
            Table 6.3); ``False`` trains on the training subjects only (model selection).
        patience: ≥ 1 trains on the training subjects only, for at most ``config.epochs``
            epochs, stopping once the validation subjects' loss has not improved for
            ``patience`` epochs and restoring the best epoch's weights (Keras
            ``EarlyStopping``); 0 — or no validation subjects, with a recorded warning —
            trains for ``config.epochs`` epochs.
        seed: seed of the epoch orders (:func:`tff_esn.federated.clients.seeded_fit_data`;
            the readout's initialisation is seeded by the reservoir seed). No global RNG is
            read or set.

    Returns:
        ``(readout_model, report)`` where ``report`` has the ``train``, ``val``, ``test``
        sections (:func:`tff_esn.metrics.split_report`, ``None`` for an empty group),
        ``design`` (the set trained on), ``communication`` (raw inputs uploaded once),
        ``class_weight`` (the weights used) and ``epochs`` (epochs trained).
    """
    if patience and not split.val:
        warn(f"patience {patience}: the split {split.name!r} has no validation clients to stop on; trained on the "
             f"design set for {config.epochs} epochs.")
        patience = 0
    config = for_data(config, dataset, split.train)
    design_ids = tuple(split.train) + (tuple(split.val) if include_validation and not patience else ())
    states, labels = _states(dataset, design_ids, config)
    model = compile_thesis_model(build_thesis_model(config.reservoir.total_units, config, readout_only=True), config)
    batches, steps = client_data.seeded_fit_data(states, labels, batch_size=config.batch_size,
                                                 epochs=config.epochs, seed=seed)
    fit = {}
    if patience:
        fit = {"validation_data": _states(dataset, split.val, config),
               "callbacks": [tf.keras.callbacks.EarlyStopping(patience=patience, restore_best_weights=True)]}
    history = model.fit(batches, epochs=config.epochs, steps_per_epoch=steps, verbose=0, **fit)

    def report(ids):
        if not ids:
            return None
        pooled = dataset.pooled(ids)
        scores = model.predict(client_data.client_states(pooled, config.reservoir, config), batch_size=1024,
                               verbose=0)
        scores = scores.reshape(-1) if config.n_outputs == 1 else scores.reshape(-1, config.n_outputs)
        return split_report(loss_labels([pooled], config).astype(np.int64), scores, dataset.n_classes, seed=seed)

    raw = [int(dataset.clients[c].x.size) for c in design_ids]
    result = {name: report(getattr(split, name)) for name in ("train", "val", "test")}
    result["design"] = report(design_ids)
    result["communication"] = centralized_cost(raw).to_dict()
    result["class_weight"] = list(config.class_weight)
    result["epochs"] = len(history.epoch)
    return model, result
