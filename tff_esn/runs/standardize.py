"""Inputs and real targets standardised on the training clients' statistics, around any algorithm's run.

Each training client sends ``(n, Σx, Σx²)`` of its input steps and of its targets (the ridge statistics' form,
:func:`~tff_esn.esn.standardization.federated_standardization`); their sum gives ``μ`` and ``σ``. The algorithm runs
on ``(x − μ_x)/σ_x`` and ``(y − μ_y)/σ_y``; its model applies the same to new inputs and returns
``ŷ·σ_y + μ_y`` (:class:`~tff_esn.esn.model.Model`'s ``inputs`` and ``outputs``). ``auto`` (the default)
standardises a forecast of own data (``npz:``, ``csv:``, ``ts:``), not the generated series nor the seeds' sources.
Stated public ranges (``--series-range LO,HI``, :func:`stated_scaling`) replace the training clients' statistics: the
scaling is then configuration, touches no client data, and so serves a DP run too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from tff_esn.common.run_warnings import warn
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.standardization import Standardization, federated_standardization

STANDARDIZE_MODES = ("auto", "on", "off")
OWN_KINDS = ("npz", "csv", "ts")
"""Source kinds ``auto`` standardises a forecast of."""
STATED_RULE = "stated public ranges (--series-range): [lo, hi] → [−1, 1]"
"""The ``rule`` of a scaling from stated ranges (``metrics.json["standardization"]``)."""
SCALED = ("rmse", "mae")
"""Metrics in the target's units (NRMSE and R² are the same in both units)."""


@dataclasses.dataclass(frozen=True)
class Scaling:
    """The training clients' input standardisation ``inputs`` and the target's ``target`` (μ_y, σ_y)."""

    inputs: Standardization
    target: Standardization
    ranges: tuple[tuple[float, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """``metrics.json``'s record: every feature's μ and σ, the target's, and how they were computed (the
        training clients' sums, or the stated ``ranges``)."""
        rule = STATED_RULE if self.ranges else "the training clients' summed (n, Σx, Σx²)"
        return {"applied": True, "rule": rule, **({"ranges": [list(r) for r in self.ranges]} if self.ranges else {}),
                "inputs": {"mean": self.inputs.mean.tolist(), "std": self.inputs.scale.tolist()},
                "target": {"mean": float(self.target.mean[0]), "std": float(self.target.scale[0])}}


def standardizes(mode: str, dataset: SequenceDataset, *, dp: bool = False, stated: bool = False) -> bool:
    """Whether ``mode`` standardises ``dataset`` (``auto``: a forecast of own data; ``stated`` ranges: always,
    DP or not); ``on`` from the training clients' statistics under DP is refused."""
    if mode not in STANDARDIZE_MODES:
        raise ValueError(f"--standardize: one of {', '.join(STANDARDIZE_MODES)}, got {mode!r}.")
    if stated:
        if mode == "off" or dataset.task.kind != "forecast":
            raise ValueError("--series-range: scales a forecast's series by stated ranges; drop it with "
                             "--standardize off or a task other than forecast.")
        return True
    if mode == "on" and not dataset.task.real:
        raise ValueError("--standardize on: standardises real targets; a classifier's labels are classes (drop it).")
    if mode == "on" and dp:
        raise ValueError("--standardize on: the series' means and variances would be released outside the DP "
                         "accounting; give public, stated ranges instead (--series-range LO,HI).")
    own = dataset.task.kind == "forecast" and dataset.source.split(":", 1)[0] in OWN_KINDS
    if mode == "auto" and own and dp:
        warn(f"{dataset.source}: not standardised (--standardize auto under DP: the statistics would be released "
             "outside the DP accounting); give public, stated ranges to scale the series (--series-range LO,HI).")
    return mode == "on" or (mode == "auto" and own and not dp)


def scaling_for(mode: str, dataset: SequenceDataset, split: Split, *, dp: bool = False,
                series_range: tuple[float, ...] | None = None) -> Scaling | None:
    """The run's :class:`Scaling` (:func:`standardizes`): from ``series_range`` (:func:`stated_scaling`), else the
    training clients' statistics (:func:`fit_scaling`); ``None``: not standardised."""
    if not standardizes(mode, dataset, dp=dp, stated=series_range is not None):
        return None
    return fit_scaling(dataset, split) if series_range is None else stated_scaling(dataset, series_range)


def stated_scaling(dataset: SequenceDataset, series_range: tuple[float, ...]) -> Scaling:
    """The :class:`Scaling` of stated public ranges: input channel c in ``[lo_c, hi_c]`` maps to [−1, 1]
    (``μ = (lo + hi)/2``, ``σ = (hi − lo)/2``); ``series_range`` one ``lo, hi`` pair for every channel or one pair per
    input channel; the target takes its channel's. No client data enters."""
    values = tuple(float(v) for v in series_range)
    width = len(dataset.feature_names)
    pairs = list(zip(values[::2], values[1::2]))
    if len(values) % 2 or len(pairs) not in (1, width) or not all(np.isfinite(values)) or \
            any(lo >= hi for lo, hi in pairs):
        raise ValueError(f"--series-range: expected LO,HI (LO < HI, finite) for every channel, or one pair per input "
                         f"channel ({width}: {', '.join(dataset.feature_names)}), got {','.join(map(str, values))}.")
    pairs = pairs * width if len(pairs) == 1 else pairs
    mean = np.array([(lo + hi) / 2 for lo, hi in pairs])
    scale = np.array([(hi - lo) / 2 for lo, hi in pairs])
    channel = dataset.feature_names.index(dataset.task.target)
    return Scaling(Standardization(mean.astype(np.float32), scale.astype(np.float32)),
                   Standardization(mean[channel:channel + 1], scale[channel:channel + 1]), tuple(pairs))


def _valid_rows(client: ClientSequences) -> np.ndarray:
    """A client's input steps within each sequence's length, (m, F)."""
    keep = np.arange(client.x.shape[1])[None, :] < client.steps[:, None]
    return client.x[keep]


def fit_scaling(dataset: SequenceDataset, split: Split) -> Scaling:
    """The :class:`Scaling` of ``split``'s training clients, each client's sums added (federated)."""
    clients = list(dataset.select(split.train).values())
    inputs = federated_standardization([_valid_rows(c) for c in clients])
    target = federated_standardization([c.y.reshape(-1, 1) for c in clients])
    if target.scale[0] == 1.0 and np.ptp(np.concatenate([c.y.ravel() for c in clients])) == 0:
        raise ValueError(f"{dataset.source}: the training clients' targets are constant; nothing to standardise.")
    exact = Standardization(*(np.asarray(v, np.float64) for v in _target_moments(clients)))
    return Scaling(inputs, exact)


def _target_moments(clients: list[ClientSequences]) -> tuple[np.ndarray, np.ndarray]:
    """The targets' μ and σ (float64) from the clients' summed ``(n, Σy, Σy²)``."""
    n = sum(c.y.size for c in clients)
    total = sum(float(c.y.sum()) for c in clients)
    squares = sum(float(np.square(c.y).sum()) for c in clients)
    mean = total / n
    return np.array([mean]), np.array([np.sqrt(max(squares / n - mean ** 2, 1e-300))])


def scaled(dataset: SequenceDataset, scaling: Scaling) -> SequenceDataset:
    """``dataset`` with every client's inputs and targets standardised by ``scaling``."""
    mean, scale = scaling.target.mean[0], scaling.target.scale[0]
    clients = {cid: ClientSequences(scaling.inputs.apply(c.x), (c.y - mean) / scale, c.lengths)
               for cid, c in dataset.clients.items()}
    return dataclasses.replace(dataset, clients=clients)


def in_own_units(section: Mapping[str, Any] | None, scaling: Scaling) -> dict[str, Any] | None:
    """A group's real metrics of standardised targets in the series' units (RMSE and MAE times σ_y), the
    standardised ones kept under ``standardized``."""
    if section is None:
        return None
    scale = float(scaling.target.scale[0])
    own = {k: (v * scale if k in SCALED and v is not None else v) for k, v in section.items()}
    own["standardized"] = {k: section[k] for k in SCALED if k in section}
    return own
