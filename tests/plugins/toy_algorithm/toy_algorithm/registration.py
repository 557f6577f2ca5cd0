"""The ``class-prior`` registration: imported through the ``tff_esn.algorithms`` entry point, no TensorFlow."""

from __future__ import annotations

import dataclasses

from tff_esn.common.communication import CommunicationCost, Phase
from tff_esn.registry.algorithms import register_algorithm


@dataclasses.dataclass(frozen=True)
class ClassPriorConfig:
    """The class prior's settings.

    Attributes:
        smoothing: pseudo-count added to every class's count, ≥ 0.
        seed: seed of the random baseline.
    """

    smoothing: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.smoothing >= 0:
            raise ValueError(f"ClassPriorConfig.smoothing (--smoothing): expected a number ≥ 0, got {self.smoothing!r}.")


def class_prior_cost(clients: int, classes: int) -> CommunicationCost:
    """Class prior: each client sends its K label counts once, nothing down."""
    return CommunicationCost((Phase("label counts", classes, 0, 1),))


register_algorithm("class-prior", ClassPriorConfig, "toy_algorithm.run:run_class_prior", tff=False,
                   communication=class_prior_cost, own_data={"smoothing": 0.5},
                   help="the pooled class frequencies of the training clients, whatever the input")
