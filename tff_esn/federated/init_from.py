"""A federated run that continues from a saved model (``--init-from DIR``): the model loaded and checked against
the run's reservoir, states, features and classes; its readout is the server model before the first round."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from tff_esn.data.sequences import SequenceDataset
from tff_esn.esn.model import Model
from tff_esn.esn.standardization import Standardization
from tff_esn.federated.configs import ThesisModelConfig
from tff_esn.federated.model import thesis_model

_RESERVOIR_ARRAYS = ("kernel", "recurrent", "bias", "gain")


@dataclasses.dataclass(frozen=True, eq=False)
class InitModel:
    """A saved model a run starts from: its folder and the model (one reservoir, a dense readout)."""

    path: Path
    model: Model

    @property
    def trainable(self) -> list[np.ndarray]:
        """The readout's ``[kernel (U, C), bias (C,)]``, the thesis model's trainable weights in Keras' order."""
        readout = self.model.members[0].readout
        return [readout.weights, readout.bias]

    @property
    def standardization(self) -> Standardization | None:
        """The saved readout's state standardisation (the run's readout inputs are scaled by it, not re-estimated)."""
        return self.model.members[0].readout.standardization

    def record(self) -> dict[str, Any]:
        """``metrics.json``'s ``extra.init_from``: the folder and the saved model's provenance."""
        return {"path": str(self.path), "provenance": dict(self.model.provenance)}


def _differences(saved: Model, run: Model, standardized: bool) -> list[str]:
    """What differs between the saved model and the run's (untrained) one, as ``name (saved vs this run)``."""
    ours, theirs = run.members[0], saved.members[0]
    out = []
    if saved.feature_names != run.feature_names:
        out.append(f"features ({list(saved.feature_names)} vs {list(run.feature_names)})")
    if saved.task != run.task or saved.label_names != run.label_names:
        out.append(f"task and classes ({saved.task.kind} {list(saved.label_names)} vs {run.task.kind} "
                   f"{list(run.label_names)})")
    if (saved.spec.state_mode, saved.spec.washout) != (run.spec.state_mode, run.spec.washout):
        out.append(f"states (state_mode {saved.spec.state_mode!r} washout {saved.spec.washout} vs "
                   f"{run.spec.state_mode!r} washout {run.spec.washout})")
    a, b = theirs.reservoir, ours.reservoir
    same = (all(getattr(a, n).shape == getattr(b, n).shape and np.array_equal(getattr(a, n), getattr(b, n))
                for n in _RESERVOIR_ARRAYS)
            and np.array_equal(np.asarray(a.leaky), np.asarray(b.leaky))
            and (a.layers, a.readout_from, a.activation) == (b.layers, b.readout_from, b.activation))
    if not same:
        drawn = "" if theirs.config is None else (f"; it was drawn with units {theirs.config.units}, seed "
                                                  f"{theirs.config.seed}")
        out.append(f"reservoir weights ({a.units} vs {b.units} units{drawn})")
    if theirs.readout.weights.shape != ours.readout.weights.shape or theirs.readout.activation != ours.readout.activation:
        out.append(f"readout ({theirs.readout.activation} {theirs.readout.weights.shape} vs "
                   f"{ours.readout.activation} {ours.readout.weights.shape})")
    if (theirs.readout.standardization is not None) != standardized:
        out.append("readout inputs (" + ("standardized vs raw" if standardized is False else "raw vs standardized")
                   + ")")
    return out


def load_init_model(path: str | os.PathLike, dataset: SequenceDataset, config: ThesisModelConfig) -> InitModel:
    """The model saved in ``path`` (a run folder's ``model/`` or the model folder itself), checked to be the one
    ``config`` trains on ``dataset``: same reservoir arrays, state mode and washout, features, task and classes,
    readout shape and inputs; a one-line ``ValueError`` naming what differs otherwise."""
    folder = Path(path)
    if (folder / "model" / "model.json").is_file():
        folder = folder / "model"
    saved = Model.load(folder)
    if len(saved.members) != 1 or saved.members[0].readout.kind != "dense" or saved.inputs is not None:
        raise ValueError(f"init_from (--init-from): {folder} holds a model of {len(saved.members)} reservoir(s) with a "
                         f"{saved.members[0].readout.kind} readout; FedAvg and FedCurv continue from one reservoir "
                         "and a dense readout (the model of a fedavg, fedcurv or thesis-central run).")
    differences = _differences(saved, thesis_model(dataset, config), config.standardized)
    if differences:
        raise ValueError(f"init_from (--init-from): {folder} is another model than this run trains: "
                         f"{'; '.join(differences)} (saved vs this run); give the settings and data of the run that "
                         "saved it.")
    return InitModel(folder, saved)
