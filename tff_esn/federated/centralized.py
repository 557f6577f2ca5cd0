"""The centralized thesis ESN (thesis §6.1, Table 6.3), the federated runs' reference: Keras ``fit`` of the readout
on the design set's states once harvested, early stopping on the validation macro-F1, ``l2``: λ‖W‖² on the kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from tff_esn.closed_form.selection import AUTO
from tff_esn.closed_form.configs import centralized_cost
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.federated import clients as client_data
from tff_esn.federated.configs import chosen_index, client_lr_choices, for_data, loss_labels
from tff_esn.federated.model import (ThesisModelConfig, build_thesis_model, compile_thesis_model, group_reports,
                                     thesis_model)
from tff_esn.esn.standardization import Standardization, federated_standardization
from tff_esn.common.metrics import classification_metrics
from tff_esn.common.progress import progress_bar
from tff_esn.common.run_warnings import warn
from tff_esn.federated.training_check import closed_form_reference, round_flags, training_flags


class BestValidatedEpoch(tf.keras.callbacks.Callback):
    """Keeps the epoch of best validation macro-F1 (tie: lower loss), stops after ``patience`` and restores it."""

    def __init__(self, states: np.ndarray, labels: np.ndarray, n_classes: int, patience: int):
        super().__init__()
        self.states, self.labels, self.n_classes, self.patience = states, labels, n_classes, patience
        self.best: tuple[float, float] = (-np.inf, -np.inf)
        self.weights: list[np.ndarray] | None = None
        self.wait = self.epochs = 0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        scores = self.model(self.states, training=False).numpy()
        scores = scores.reshape(-1) if scores.shape[-1] == 1 else scores.reshape(-1, scores.shape[-1])
        f1 = classification_metrics(self.labels, scores, self.n_classes)["f1_macro"]
        key = (f1, -float((logs or {}).get("val_loss", np.inf)))
        if key > self.best:
            self.best, self.weights, self.wait, self.epochs = key, self.model.get_weights(), 0, epoch + 1
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.model.stop_training = True

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.weights is not None:
            self.model.set_weights(self.weights)


class EpochBar(tf.keras.callbacks.Callback):
    """A :func:`~tff_esn.common.progress.progress_bar` advancing with the epochs of one ``fit``."""

    def __init__(self, epochs: int, desc: str, wanted: bool):
        super().__init__()
        self.epochs, self.desc, self.wanted, self.bar = epochs, desc, wanted, None

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.bar = progress_bar(wanted=self.wanted, total=self.epochs, desc=self.desc, unit="epoch", leave=False)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.bar.set_postfix(loss=(logs or {}).get("loss", np.nan), refresh=False)
        self.bar.update()

    def on_train_end(self, logs: dict | None = None) -> None:
        self.bar.close()


def _states(dataset: SequenceDataset, ids, config: ThesisModelConfig, standardization: Standardization | None):
    pooled = dataset.pooled(ids)
    states = client_data.client_states(pooled, config.reservoir, config)
    if standardization is not None:
        states = standardization.apply(states)
    return states, client_data.targets(pooled, config)


def train_centralized(dataset: SequenceDataset, split: Split, config: ThesisModelConfig, *, seed: int = 0,
                      include_validation: bool = True, patience: int = 0,
                      refit: bool = False, l2: float = 0.0,
                      progress: bool = False) -> tuple[tf.keras.Model, dict[str, Any]]:
    """``(readout model, report)``: the readout fitted on the design set and Table 6.3's metrics, each group's as the
    trained :class:`~tff_esn.esn.model.Model` (``report["model"]``) scores it (``progress``: an epoch bar per fit on
    a terminal)."""
    if patience and not split.val:
        warn(f"patience {patience}: the split {split.name!r} has no validation clients to stop on; trained on the "
             f"design set for {config.epochs} epochs.")
        patience = 0
    config = for_data(config, dataset, split.train)
    refit = bool(refit and patience)
    design_ids = tuple(split.train) + (tuple(split.val) if (include_validation and not patience) or refit else ())

    def design(ids):
        standardization = None
        if config.standardized:
            standardization = federated_standardization(
                [client_data.client_states(c, config.reservoir, config) for c in dataset.select(ids).values()])
        return (standardization, *_states(dataset, ids, config, standardization))

    standardization, states, labels = design(tuple(split.train) if patience else design_ids)
    validation = _states(dataset, split.val, config, standardization) if patience else None
    val_labels = loss_labels([dataset.pooled(split.val)], config).astype(np.int64) if patience else None

    def fit(learning_rate: float, epochs: int = config.epochs, stop: bool = bool(patience), converge: bool = False
            ) -> tuple[tf.keras.Model, Any, BestValidatedEpoch | None]:
        model_config = config.replace(learning_rate=learning_rate)
        model = build_thesis_model(config.reservoir.readout_units, model_config, readout_only=True)
        if l2:
            model.add_loss(lambda: l2 * tf.reduce_sum(tf.square(model.get_layer("readout").kernel)))
        compile_thesis_model(model, model_config)
        batches, steps = client_data.seeded_fit_data(states, labels, batch_size=config.batch_size,
                                                     epochs=epochs, seed=seed)
        kwargs, best = {}, None
        if stop:
            best = BestValidatedEpoch(validation[0], val_labels, dataset.n_classes, patience)
            kwargs = {"validation_data": validation, "callbacks": [best]}
        if converge:
            kwargs = {"callbacks": [tf.keras.callbacks.EarlyStopping("loss", patience=patience)]}
        bar = EpochBar(epochs, f"thesis-central epochs (lr={learning_rate:g})", progress)
        kwargs["callbacks"] = [*kwargs.get("callbacks", ()), bar]
        return model, model.fit(batches, epochs=epochs, steps_per_epoch=steps, verbose=0, **kwargs), best

    def diverged(history) -> int | None:
        losses = history.history.get("loss", ())
        return next((epoch + 1 for epoch, loss in enumerate(losses) if not np.isfinite(loss)), None)

    selection: dict[str, Any] = {}
    lr = config.learning_rate
    if lr != AUTO:
        model, history, stopped = fit(lr)
    elif not patience:
        reason = "no validation clients" if not split.val else "patience 0: the design set includes the validation clients"
        lr = client_lr_choices(config)[1]
        warn(f"client_lr 'auto': {reason}; the stated default {lr} is used.")
        selection["client_lr"] = {"value": lr, "rule": "default", "reason": reason}
        model, history, stopped = fit(lr)
    else:
        grid = client_lr_choices(config)[0]
        with progress_bar(grid, wanted=progress, desc="thesis-central candidates", unit="candidate") as bar:
            fits = [fit(lr) for lr in bar]
        scores = [(float(b.best[0]), float(-b.best[1])) for _, _, b in fits]
        best = chosen_index(scores)
        lr, (model, history, stopped) = grid[best], fits[best]
        selection["client_lr"] = {"value": grid[best], "rule": "validation", "grid": list(grid),
                                  "val_f1_macro": [f for f, _ in scores], "val_loss": [loss for _, loss in scores]}
        selection["candidates"] = [{"client_lr": rate, "val_f1_macro": f, "val_loss": loss, "kept_epoch": b.epochs,
                                    "diverged": diverged(h)} for rate, (f, loss), (_, h, b) in zip(grid, scores, fits)]
    groups = {"val": (validation[0], val_labels)} if patience else {}
    if split.test:
        groups["test"] = (_states(dataset, split.test, config, standardization)[0],
                          loss_labels([dataset.pooled(split.test)], config))
    reference = closed_form_reference(
        [(states, loss_labels([dataset.pooled(tuple(split.train) if patience else design_ids)], config))], groups,
        dataset.n_classes)
    refit_record = None
    if refit:
        standardization, states, labels = design(design_ids)
        model, history, _ = fit(lr, config.epochs if l2 else stopped.epochs, stop=False, converge=bool(l2))
        refit_record = {"epochs": len(history.epoch), "learning_rate": lr, "stopped_epochs": stopped.epochs}

    raw = [int(dataset.clients[c].x.size) for c in design_ids]
    readout = model.get_layer("readout")
    trained = thesis_model(dataset, config, readout.kernel.numpy(), readout.bias.numpy(), standardization, seed=seed)
    result = group_reports(trained, dataset, {"train": split.train, "val": split.val, "test": split.test,
                                              "design": design_ids})
    result["model"] = trained
    result["communication"] = centralized_cost(raw).to_dict()
    result["class_weight"] = list(config.class_weight)
    result["epochs"] = len(history.epoch)
    result["selection"] = selection
    result["standardization"] = None if standardization is None else standardization.to_dict()
    result["refit"] = refit_record
    result["l2"] = l2
    result["closed_form_reference"] = reference
    result["training_check"] = training_flags(
        "thesis-central", result, kept=stopped.epochs if stopped is not None else None, budget=config.epochs,
        selection=selection, diverged=diverged(history), reference=reference, unit="epoch")
    if refit and l2 and refit_record["epochs"] == config.epochs:
        result["training_check"] += round_flags("thesis-central", config.epochs, config.epochs, "refit epoch")
    return model, result
