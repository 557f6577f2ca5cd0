"""Best-hyperparameters JSON: the flat file ``tff-esn run --hparams FILE`` reads.

One flat object keyed by ``tff-esn run`` option names (``-`` as ``_``); the IncFed paper's
connection counts are converted to fractions here (:func:`run_hparams`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tff_esn.esn.hyperparameters import ReservoirConfig, connectivity_from_count
from tff_esn.common.io import write_json_atomic

RESERVOIR_FIELDS = tuple(f.name for f in dataclasses.fields(ReservoirConfig))


def run_hparams(values: Mapping[str, Any], *, n_inputs: int, seed: int) -> dict[str, Any]:
    """Flat ``tff-esn run`` hyperparameters from a trial's values.

    ``input_connections`` / ``recurrent_connections`` (IncFed Tables I–II: connections per
    unit) become ``input_connectivity`` = count / ``n_inputs`` and
    ``recurrent_connectivity`` = count / ``units``, each capped at 1; ``seed`` is the
    reservoir seed shared by every trial of a search.
    """
    out = dict(values)
    if "input_connections" in out:
        out["input_connectivity"] = connectivity_from_count(int(out.pop("input_connections")), n_inputs)
    if "recurrent_connections" in out:
        out["recurrent_connectivity"] = connectivity_from_count(int(out.pop("recurrent_connections")), int(out["units"]))
    out.setdefault("seed", seed)
    return out


def reservoir_config(hparams: Mapping[str, Any]) -> ReservoirConfig:
    """The :class:`ReservoirConfig` part of flat hyperparameters (other keys ignored)."""
    return ReservoirConfig(**{k: hparams[k] for k in RESERVOIR_FIELDS if k in hparams})


def write_hparams(path: str | os.PathLike, hparams: Mapping[str, Any]) -> Path:
    """Writes flat hyperparameters atomically; nested values are rejected by name."""
    nested = sorted(k for k, v in hparams.items() if isinstance(v, (dict, list, tuple)))
    if nested:
        raise ValueError(f"write_hparams: values must be scalars (a flat object), got nested {nested}.")
    reservoir_config(hparams)  # validates the reservoir part before anything is written
    return write_json_atomic(path, dict(hparams))


def read_hparams(path: str | os.PathLike) -> dict[str, Any]:
    """Reads a flat hyperparameters file; a non-object or nested value raises ``ValueError``."""
    with open(path, encoding="utf-8") as fh:
        values = json.load(fh)
    if not isinstance(values, dict) or any(isinstance(v, (dict, list)) for v in values.values()):
        raise ValueError(f"{path}: expected a flat JSON object of hyperparameters, got {type(values).__name__}.")
    return values
