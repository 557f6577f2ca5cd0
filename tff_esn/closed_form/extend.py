"""Extending a saved exact-readout model with new clients (IncFed's incremental property, IncFed §III): the kept
aggregate statistics ``(A, B, n, clients)`` plus the new training clients' ``(A_c, B_c, n_c)`` solved by IncFed
eq. 10 are the readout IncFed trains on all clients together. This module loads the saved model, settles the run's
settings from it and refuses, in one line, a model the new data cannot extend."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.closed_form.configs import IncFedConfig
from tff_esn.closed_form.selection import AUTO, L2Choice
from tff_esn.common.run_warnings import warn
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import SequenceDataset, Split
from tff_esn.esn.model import Model
from tff_esn.esn.weights import ReservoirWeights

SAVED_L2 = "saved model"
"""``l2_selection.rule`` of an extension that re-solves at the saved model's λ."""


@dataclasses.dataclass(frozen=True, eq=False)
class Extension:
    """A saved model to extend: its folder, the :class:`Model` (with kept statistics) and the λ it was solved at."""

    path: Path
    model: Model
    l2: float

    def record(self) -> dict[str, Any]:
        """``metrics.json``'s ``extends``: the folder, its clients and λ, and the saved run's provenance (which holds
        the runs it extended in turn)."""
        return {"model": str(self.path), "clients": float(self.model.stats.clients), "l2": self.l2,
                **{k: v for k, v in self.model.provenance.items() if k != "metrics"}}


def model_folder(path: str | Path) -> Path:
    """The model folder of ``path``: a run folder's ``model/``, or ``path`` itself when it holds ``model.json``."""
    path = Path(path)
    return path if (path / "model.json").is_file() else path / "model"


def saved_l2(model: Model) -> float | None:
    """The λ the saved model's readout was solved at: its run's ``l2_selection``, else its numeric ``l2`` setting."""
    chosen = (model.provenance.get("l2_selection") or {}).get("l2")
    if chosen is None:
        chosen = ((model.provenance.get("config") or {}).get("l2") or {}).get("value")
    return float(chosen) if isinstance(chosen, (int, float)) and not isinstance(chosen, bool) else None


def load_extension(path: str | Path) -> Extension:
    """The model saved in ``path`` with its kept statistics; ``ValueError`` (one line) for a model that cannot be
    extended: no kept statistics, an ensemble, a dense readout or input standardisation, no recorded λ."""
    folder = model_folder(path)
    model = Model.load(folder)
    where = f"--add-to {path}"
    if model.stats is None:
        raise ValueError(f"{where}: the saved model kept no ridge statistics; train it with --keep-stats "
                         "(centralized or incfed) to extend it.")
    if len(model.members) != 1 or model.members[0].readout.kind != "ridge" or model.members[0].config is None:
        raise ValueError(f"{where}: only a single reservoir's ridge readout (centralized, incfed) can be extended; "
                         f"this model has {len(model.members)} member(s) with a {model.members[0].readout.kind} "
                         "readout.")
    if model.inputs is not None:
        raise ValueError(f"{where}: the saved model standardises its inputs with its training clients' statistics; "
                         "such a model cannot be extended.")
    l2 = saved_l2(model)
    if l2 is None:
        raise ValueError(f"{where}: the saved model records no λ; give --l2 with the value it was trained at.")
    return Extension(folder, model, l2)


def _flags(names: dict[str, Any]) -> str:
    return " ".join(f"--{k.replace('_', '-')} {v}" for k, v in names.items())


def extension_config(config: IncFedConfig, extension: Extension) -> IncFedConfig:
    """``config`` with the saved model's reservoir, state mode, inputs beside the states, washout, readout bias and
    λ; ``ValueError`` when a setting this run fixes differs (the settings ``reservoir_search`` and ``auto`` leave
    open are the saved ones)."""
    model = extension.model
    saved = model.members[0].config
    open_fields = set(config.reservoir_search)
    differ = {f.name: getattr(saved, f.name) for f in dataclasses.fields(saved)
              if f.name not in open_fields and getattr(saved, f.name) != getattr(config.reservoir, f.name)}
    spec = model.spec
    if config.state_mode not in (AUTO, spec.state_mode):
        differ["state_mode"] = spec.state_mode
    if config.washout != spec.washout:
        differ["washout"] = spec.washout
    if config.readout_bias != spec.readout_bias:
        differ["readout_bias"] = spec.readout_bias
    if config.raw_inputs not in (AUTO, spec.raw_inputs):
        differ["raw_inputs"] = spec.raw_inputs
    per_client = bool(((model.provenance.get("config") or {}).get("l2_per_client") or {}).get("value", False))
    if config.l2_per_client != per_client:
        differ["l2_per_client"] = per_client
    if differ:
        raise ValueError(f"--add-to {extension.path}: the saved model was trained with other settings than this "
                         f"run's; give {_flags(differ)} (or drop the differing flags).")
    l2 = extension.l2 if config.l2 == AUTO else config.l2
    return dataclasses.replace(config, reservoir=saved, state_mode=spec.state_mode, raw_inputs=spec.raw_inputs,
                               reservoir_search=(), l2=l2)


def l2_choice(config: IncFedConfig, extension: Extension) -> L2Choice:
    """How the extension's λ was set: the saved model's (``l2: auto``), or the number given."""
    if config.l2 == AUTO:
        return L2Choice(extension.l2, SAVED_L2, reason=f"the λ {extension.path} was solved at (not re-selected: "
                                                        "the saved clients' data is not here to validate on)")
    return L2Choice(float(config.l2), "given")


def check_extends(extension: Extension, dataset: SequenceDataset, split: Split, weights: ReservoirWeights, *,
                  dp: bool = False) -> None:
    """A one-line :class:`DataError` when ``dataset``'s training clients cannot extend the saved model: other
    features, task, classes or per-step labels, or reservoir arrays other than the ones this run draws; a warning
    when the saved run read the same source, or differs from this one in DP."""
    model, where = extension.model, f"--add-to {extension.path}"
    if tuple(dataset.feature_names) != model.feature_names:
        raise DataError(f"{dataset.source}: X: features {list(dataset.feature_names)}, the saved model's are "
                        f"{list(model.feature_names)} ({where}); give the same channels in the same order.")
    if dataset.task != model.task:
        raise DataError(f"{dataset.source}: the task is {dataset.task}, the saved model's {model.task} ({where}); "
                        "give the same --task, --horizon and --target.")
    if tuple(dataset.label_names) != model.label_names:
        raise DataError(f"{dataset.source}: y: labels {list(dataset.label_names)}, the saved model's are "
                        f"{list(model.label_names)} ({where}); give the same classes in the same order.")
    per_step = any(c.per_step for c in dataset.select(split.train).values())
    if per_step != model.per_step:
        raise DataError(f"{dataset.source}: y: {'per-step' if per_step else 'per-sequence'} labels, the saved "
                        f"model's are {'per-step' if model.per_step else 'per-sequence'} ({where}).")
    saved = model.members[0].reservoir
    drawn = (weights.kernel, weights.recurrent, weights.bias, weights.gain)
    kept = (saved.kernel, saved.recurrent, saved.bias, saved.gain)
    if any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(drawn, kept)) or \
            (weights.leaky, weights.layers, weights.readout_from, weights.activation) != \
            (saved.leaky, saved.layers, saved.readout_from, saved.activation):
        raise DataError(f"{where}: the saved model's reservoir arrays differ from the ones this run draws from its "
                        "settings (another tff_esn version's draws, or an altered model); extend it with the "
                        "tff_esn that trained it.")
    if model.stats.n_outputs != dataset.n_classes or model.stats.n_features != model.spec.width(weights) + int(
            model.spec.readout_bias):
        raise DataError(f"{where}: the kept statistics' shape {model.stats.A.shape} does not fit this run's readout; "
                        "the model folder is altered.")
    if model.provenance.get("data") == dataset.source:
        warn(f"--add-to {extension.path}: the saved model was trained on {dataset.source} too; clients it saw "
             "count twice in the extended model.")
    saved_dp = (model.provenance.get("privacy") or {}).get("mechanism", "none") != "none"
    if saved_dp != dp:
        warn(f"--add-to {extension.path}: the saved statistics were released {'with' if saved_dp else 'without'} "
             f"DP, this run's {'with' if dp else 'without'}; each run's clients are protected as its metrics.json "
             "says, the extended model by the weaker of the two.")
