"""A trained :class:`~tff_esn.esn.model.Model` on a :class:`~tff_esn.data.sequences.SequenceDataset`: the data checked
against the model, per-sequence predictions and each group's metrics (the ``metrics.json`` section)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tff_esn.common.metrics import predictions as class_predictions
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import ClientSequences, SequenceDataset
from tff_esn.esn.model import Model

ALL = "all"
"""The group name of every client predicted pooled (no recorded groups)."""


@dataclasses.dataclass(frozen=True)
class DatasetPredictions:
    """``rows``: one dict per prediction (``client``, ``sequence``, ``group``, ``step`` for per-step outputs,
    ``prediction``, ``truth`` (empty for unlabelled data), one ``score:NAME`` / ``p:NAME`` column per class);
    ``metrics``: group → the ``metrics.json`` section of its sequences (none for unlabelled data); ``groups``:
    group → client ids in the order they were pooled."""

    rows: list[dict[str, Any]]
    metrics: dict[str, dict[str, Any]]
    groups: dict[str, tuple[str, ...]]
    columns: tuple[str, ...]


def check_dataset(model: Model, dataset: SequenceDataset) -> SequenceDataset:
    """``dataset`` as ``model`` reads it (class codes mapped to the model's by name), or a one-line
    :class:`DataError`: another task, feature count or feature names, unknown classes, sequences no longer than the
    washout; unlabelled data (``dataset.labelled`` false) is not mapped."""
    source = dataset.source
    if dataset.task != model.task:
        raise DataError(f"{source}: its task is {_task(dataset.task)}, the model's is {_task(model.task)}; give data "
                        "of the model's task (the run's --task, --horizon and --target).")
    if len(dataset.feature_names) != len(model.feature_names):
        raise DataError(f"{source}: {len(dataset.feature_names)} features per step, the model was trained on "
                        f"{len(model.feature_names)} ({', '.join(model.feature_names[:8])}); give the same input "
                        "channels in the same order.")
    if tuple(dataset.feature_names) != model.feature_names:
        raise DataError(f"{source}: features {list(dataset.feature_names)[:8]}, the model was trained on "
                        f"{list(model.feature_names)[:8]}; give the same input channels in the same order.")
    spec = model.spec
    if spec.state_mode != "last" and dataset.shortest <= spec.washout:
        raise DataError(f"{source}: the shortest sequence has {dataset.shortest} steps, not more than the model's "
                        f"washout ({spec.washout}); give longer sequences.")
    if model.task.real or not dataset.labelled:
        return dataset
    unknown = [name for name in dataset.label_names if name not in model.label_names]
    if unknown:
        raise DataError(f"{source}: class(es) {unknown[:5]} the model does not know (its classes: "
                        f"{', '.join(model.label_names)}); drop those sequences or recode them to the model's classes.")
    codes = np.array([model.label_names.index(name) for name in dataset.label_names], np.int64)
    if np.array_equal(codes, np.arange(len(codes))) and dataset.n_classes == model.n_outputs:
        return dataset
    clients = {cid: ClientSequences(c.x, codes[c.y], c.lengths) for cid, c in dataset.clients.items()}
    return dataclasses.replace(dataset, clients=clients, n_classes=model.n_outputs, label_names=model.label_names)


def _task(task: Any) -> str:
    return task.kind + (f" (horizon {task.horizon}, target {task.target})" if task.kind == "forecast" else "")


def predict_dataset(model: Model, dataset: SequenceDataset,
                    groups: Mapping[str, Sequence[str]] | None = None) -> DatasetPredictions:
    """``model``'s predictions and metrics on ``dataset`` (checked by :func:`check_dataset`), group by group: each
    group's clients pooled in the given order (``dataset.pooled(ids)``, as a run scores its groups, so the metrics
    equal the run's bit for bit), clients in no group pooled as a group of their own; ``groups=None``: every client
    pooled as one group :data:`ALL`."""
    dataset = check_dataset(model, dataset)
    groups = {ALL: dataset.client_ids} if groups is None else {g: tuple(ids) for g, ids in groups.items() if ids}
    grouped = {cid for ids in groups.values() for cid in ids}
    rest = tuple(cid for cid in dataset.client_ids if cid not in grouped)
    if rest:
        groups[""] = rest
    dataset.select(grouped)  # unknown ids: a KeyError naming them, before any work
    classes = model.label_names if model.classifier else ()
    score = "p" if model.classifier and all(m.readout.kind == "dense" for m in model.members) else "score"
    per_step = model.per_step and model.spec.state_mode == "all"
    columns = ("client", "sequence", "group", *(("step",) if per_step else ()), "prediction", "truth",
               *(f"{score}:{name}" for name in classes))
    rows: list[dict[str, Any]] = []
    metrics: dict[str, dict[str, Any]] = {}
    for group, ids in groups.items():
        pooled = dataset.pooled(ids)
        outputs = model.decision_function(pooled.x, pooled.lengths)
        if group and dataset.labelled:
            metrics[group] = model.task.report(model.labels(pooled.y, len(pooled)), outputs, model.n_outputs,
                                               seed=model.seed)
        rows.extend(_rows(model, dataset, ids, group, pooled, outputs, score, per_step))
    return DatasetPredictions(rows, metrics, {g: ids for g, ids in groups.items() if g}, columns)


def _rows(model: Model, dataset: SequenceDataset, ids: Sequence[str], group: str, pooled: ClientSequences,
          outputs: np.ndarray, score: str, per_step: bool) -> list[dict[str, Any]]:
    """One row per prediction of the pooled clients ``ids`` (per step: the sequence's valid steps after the washout)."""
    washout = model.spec.washout
    steps = pooled.x.shape[1] - washout if per_step else 1
    if model.classifier:
        probabilities = np.stack([1.0 - outputs, outputs], axis=1) if outputs.ndim == 1 else outputs
        predicted = [model.label_names[k] for k in class_predictions(outputs)]
    else:
        probabilities = None
        predicted = (outputs[:, 0] if outputs.ndim == 2 else outputs).tolist()
    if not dataset.labelled:
        truth = [""] * len(predicted)
    elif model.classifier:
        truth = [model.label_names[k] for k in model.labels(pooled.y, len(pooled))]
    else:
        truth = model.labels(pooled.y, len(pooled)).tolist()
    owners = [(cid, i) for cid in ids for i in range(len(dataset.clients[cid]))]
    rows = []
    for n, (cid, index) in enumerate(owners):
        valid = int(pooled.steps[n]) - washout if per_step else 1
        for j in range(valid):
            m = n * steps + j
            row = {"client": cid, "sequence": index, "group": group}
            if per_step:
                row["step"] = washout + j
            row.update(prediction=predicted[m], truth=truth[m])
            if probabilities is not None:
                row.update({f"{score}:{name}": float(v) for name, v in zip(model.label_names, probabilities[m])})
            rows.append(row)
    return rows


def run_groups(record: Mapping[str, Any], dataset: SequenceDataset) -> tuple[SequenceDataset, dict | None, str]:
    """``(dataset, groups, how)``: the groups of a run's ``metrics.json`` ``record`` (``clients``) on ``dataset`` when
    it holds them; else, for a run that dealt its clients anew (``--partition``), ``dataset`` split and dealt again
    by the recorded split, seed, training fraction and partition; else ``None`` (predict the clients pooled) and
    why."""
    from tff_esn.data.partition import partition_dataset
    from tff_esn.data.splits import get_split

    clients = {g: tuple(ids) for g, ids in (record.get("clients") or {}).items() if ids}
    if not clients:
        return dataset, None, "pooled (the run records no client groups)"
    if all(cid in dataset.clients for ids in clients.values() for cid in ids):
        return dataset, clients, "the run's client groups"
    partition, cli = record.get("partition") or {}, record.get("cli") or {}
    split_name = (record.get("config") or {}).get("split", {}).get("value")
    if partition.get("partitioner", "natural") == "natural" or split_name is None:
        return dataset, None, "pooled (the data does not hold the run's clients)"
    try:
        split = get_split(split_name, dataset, train_fraction=float(cli.get("train_fraction", 1.0)),
                          seed=int(partition["seed"]))
        dealt, new_split, _ = partition_dataset(dataset, split, partition["partitioner"], int(partition["clients"]),
                                                seed=int(partition["seed"]), groups=tuple(partition["groups"]))
    except (ValueError, KeyError, TypeError):
        return dataset, None, "pooled (the run's split and partition do not apply to this data)"
    dealt = dataclasses.replace(dealt, labelled=dataset.labelled)
    again = {g: tuple(ids) for g, ids in new_split.groups.items() if ids}
    if again != clients:
        return dataset, None, "pooled (the run's split and partition deal this data to other clients)"
    return dealt, clients, "the run's split and partition re-applied"
