"""Named KerasTuner search spaces of the thesis and the papers, with their ranges as published.

``thesis`` (Table 6.1), ``incfed-wesad``/``incfed-hhar`` (IncFed Tables I–II), ``fedip-wesad``/
``fedip-hhar`` (FedIP Table 1) and ``pfedrr`` (pFedRR §3); spaces whose paper publishes no λ range
borrow FedIP Table 1's ``l2`` ∈ [1e-4, 1], log-uniform.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # KerasTuner (and TensorFlow) are imported when a space is built: ``tff-esn tune --help`` reads
    import keras_tuner as kt  # the spaces' names without them


def _hyperparameters() -> kt.HyperParameters:
    import keras_tuner as kt

    return kt.HyperParameters()

THESIS_FEATURE_SUBSETS = ("pEDA,tEDA,HR,HRV", "tEDA,pEDA", "HR,HRV", "pEDA")
"""Thesis Table 6.1 feature subsets, as comma-joined names of the thesis pipeline's features."""

THESIS_WINDOWS = (5 * 64, 25 * 64, 50 * 64)
"""Thesis Table 6.1 window sizes in samples at 64 Hz (5, 25 and 50 s of HRV window)."""

L2_RANGE = (1e-4, 1.0)
"""FedIP Table 1 ridge range, also used where a paper leaves it unpublished."""


@dataclasses.dataclass(frozen=True)
class SearchSpace:
    """A published search space and how to search it.

    Attributes:
        name: registry key (``tff-esn tune SPACE``).
        build: returns a fresh ``keras_tuner.HyperParameters`` holding the space.
        kind: ``"gradient"`` (Keras hypermodel trained by Adam, thesis) or ``"closed-form"``
            (ridge readout fitted in closed form by :class:`tuning.closed_form.ClosedFormTuner`).
        objective: validation metric maximised (``"val_f1"`` or ``"val_accuracy"``).
        source: default data source (a synthetic one, so every space runs out of the box).
        pipeline: ``tff_esn.data.sources.load_source`` pipeline; ``{dataset}`` is replaced by
            ``wesad`` or ``hhar`` after the data source (``pfedrr-{dataset}``).
        split: ``tff_esn.data.splits.get_split`` split name, same placeholder.
        trials: published trial budget; ``None`` means until the space is exhausted.
        reference: where the ranges come from.
    """

    name: str
    build: Callable[[], kt.HyperParameters]
    kind: str
    objective: str
    source: str
    pipeline: str
    split: str
    trials: int | None
    reference: str


def thesis_space() -> kt.HyperParameters:
    """Thesis Table 6.1; ρ(Ŵ) = 0.99 and epochs = 1 fixed (Table 6.2)."""
    hp = _hyperparameters()
    hp.Choice("units", [50, 100, 200])
    hp.Choice("leaky", [0.5, 0.8, 1.0])
    hp.Choice("learning_rate", [0.001, 0.01, 0.1])
    hp.Choice("window", list(THESIS_WINDOWS))
    hp.Choice("batch_size", [20, 50, 100])
    hp.Choice("features", list(THESIS_FEATURE_SUBSETS))
    hp.Fixed("spectral_radius", 0.99)
    hp.Fixed("epochs", 1)
    return hp


def _l2(hp: kt.HyperParameters) -> None:
    hp.Float("l2", L2_RANGE[0], L2_RANGE[1], sampling="log")


def _incfed(units: list[int]) -> Callable[[], kt.HyperParameters]:
    def build() -> kt.HyperParameters:
        hp = _hyperparameters()
        hp.Choice("units", units)
        hp.Float("spectral_radius", 0.1, 0.99)
        hp.Float("leaky", 0.1, 1.0)
        hp.Float("input_scaling", 0.1, 1.0)
        hp.Int("input_connections", 1, 60)
        hp.Int("recurrent_connections", 1, 60)
        _l2(hp)
        return hp

    build.__doc__ = f"IncFed paper Table I/II: units {units}, ρ, a, input scaling ∈ ranges; connections per unit 1–60."
    return build


def _fedip(units: list[int], leaky_max: float) -> Callable[[], kt.HyperParameters]:
    def build() -> kt.HyperParameters:
        hp = _hyperparameters()
        hp.Choice("units", units)
        hp.Float("spectral_radius", 0.3, 0.99)
        hp.Float("input_scaling", 0.5, 1.0)
        hp.Float("leaky", 0.1, leaky_max)
        _l2(hp)
        hp.Fixed("ip_mu", 0.0)
        hp.Float("ip_sigma", 0.005, 0.15)
        hp.Fixed("ip_eta", 0.01)
        hp.Choice("ip_epochs", [3, 5, 10])
        return hp

    build.__doc__ = f"FedIP Table 1: units {units}, leakage [0.1, {leaky_max}], IP μ=0, σ, η=0.01, epochs 3/5/10."
    return build


def pfedrr_space() -> kt.HyperParameters:
    """pFedRR §3: 1000 units, ρ ∈ [0.3, 0.99], input scaling ∈ [0.5, 1), a ∈ [0.1, 0.9]."""
    hp = _hyperparameters()
    hp.Fixed("units", 1000)
    hp.Float("spectral_radius", 0.3, 0.99)
    hp.Float("input_scaling", 0.5, 1.0)
    hp.Float("leaky", 0.1, 0.9)
    _l2(hp)
    return hp


SPACES: dict[str, SearchSpace] = {
    s.name: s
    for s in (
        SearchSpace("thesis", thesis_space, "gradient", "val_f1", "synthetic-wesad", "thesis",
                    "thesis-primal", None, "thesis §6.1 Table 6.1"),
        SearchSpace("incfed-wesad", _incfed([100, 250]), "closed-form", "val_accuracy", "synthetic-wesad",
                    "incfed-wesad", "incfed-wesad", 30, "IncFed paper Table I"),
        SearchSpace("incfed-hhar", _incfed([100, 500]), "closed-form", "val_accuracy", "synthetic-hhar",
                    "incfed-hhar", "incfed-hhar", 30, "IncFed paper Table II"),
        SearchSpace("fedip-wesad", _fedip([200, 300, 400], 0.8), "closed-form", "val_accuracy", "synthetic-wesad",
                    "fedip-wesad", "fedip-wesad", 30, "FedIP Table 1 (WESAD)"),
        SearchSpace("fedip-hhar", _fedip([100, 200, 300, 400, 500], 0.5), "closed-form", "val_accuracy",
                    "synthetic-hhar", "fedip-hhar", "fedip-hhar", 30, "FedIP Table 1 (HHAR)"),
        SearchSpace("pfedrr", pfedrr_space, "closed-form", "val_accuracy", "synthetic-wesad",
                    "pfedrr-{dataset}", "pfedrr-{dataset}", 30, "pFedRR §3 model selection"),
    )
}


def get_space(name: str) -> SearchSpace:
    """The named space; an unknown name raises ``KeyError`` listing the known ones."""
    try:
        return SPACES[name]
    except KeyError:
        raise KeyError(f"unknown search space {name!r}; known spaces: {', '.join(SPACES)}.") from None


def space_size(hp: kt.HyperParameters) -> float:
    """Number of distinct configurations (``math.inf`` when a continuous range is present)."""
    import keras_tuner as kt

    size = 1.0
    for param in hp.space:
        if isinstance(param, kt.engine.hyperparameters.Float) and param.step is None:
            return math.inf
        size *= len(list(param.values))
    return size
