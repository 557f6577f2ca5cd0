"""The discriminator's configs: how its training deltas are made and its network (thesis §6.1).

Light: importing this module imports no TensorFlow, so ``tff-esn discriminator --help``
reads the defaults of these configs at once (``DiscriminatorConfig`` imports TensorFlow
when constructed, to validate its activation).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tff_esn.federated.configs import ThesisModelConfig
from tff_esn.common.validation import check_field, is_count, is_finite


@dataclasses.dataclass(frozen=True)
class DeltaConfig:
    """How the real/fake readout deltas are generated (thesis §6.1).

    Attributes:
        model: the thesis ESN both models are (Table 6.2: 200 units, ρ 0.99, α 1.0, Adam
            η 0.1, batch 20, weighted cross-entropy); its ``epochs`` are not used. Its
            ``class_weight`` holds one weight per class (resolve ``"balanced"`` first:
            :func:`tff_esn.federated.configs.for_data`): their number sets the readout.
        noise_std: std of the Gaussian noise on the fake ESN's inputs (thesis: 1.0).
        steps: optimisation steps, i.e. deltas, per ESN; the sequences are passed over
            (reshuffled each pass) as often as needed. The thesis fixes the
            discriminator's 5 epochs but not the number of deltas, and the epochs only
            give the discriminator ``5 · 0.8 · 2 · 0.8 · steps / 64`` Adam steps: with 300
            steps (30 Adam steps) it stayed undertrained on the 100-minute synthetic WESAD
            (test F1 0.69–0.79; 0.91 with 20 epochs), with 1000 steps (100 Adam steps) it
            reached test F1 0.94–0.95 at the thesis' 5 epochs (seeds 0, 1).
        test_fraction: the last fraction of each ESN's steps kept as test deltas, in (0, 1).
        restart_every: reset the optimiser state every this many steps (a federated
            client's round); ``None`` = one continuous training (thesis).
        seed: seed of the noise and of the per-epoch shuffling.
    """

    model: ThesisModelConfig = ThesisModelConfig()
    noise_std: float = 1.0
    steps: int = 1000
    test_fraction: float = 0.2
    restart_every: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.model, ThesisModelConfig):
            raise TypeError(f"DeltaConfig.model: expected a ThesisModelConfig, got {type(self.model).__name__}.")
        check_field(self, "noise_std", is_finite(self.noise_std) and self.noise_std > 0, "a finite number > 0")
        check_field(self, "steps", is_count(self.steps, 2), "an integer ≥ 2")
        check_field(self, "test_fraction", is_finite(self.test_fraction) and 0 < self.test_fraction < 1,
                    "a number in (0, 1)")
        check_field(self, "restart_every", self.restart_every is None or is_count(self.restart_every, 1),
                    "an integer ≥ 1 or None")
        check_field(self, "seed", is_count(self.seed, 0), "an integer ≥ 0")

    @property
    def n_inputs(self) -> int:
        """Length of one delta: readout kernel (U·C) plus bias (C); the model's class weights resolved."""
        return (self.model.reservoir.units + 1) * self.model.n_outputs


@dataclasses.dataclass(frozen=True)
class DiscriminatorConfig:
    """The discriminator's architecture and training (thesis §6.1, Fig. 6.2).

    Attributes:
        hidden: units of the two hidden ``Dense`` layers (set by hand).
        dropout: rates of the two ``Dropout`` layers, in [0, 1) (set by hand).
        activation: activation of the hidden layers.
        learning_rate: Adam's learning rate (thesis: 1e-3).
        epochs: training epochs (thesis: 5).
        batch_size: deltas per batch (thesis: 64).
        validation_split: fraction of the (shuffled) training deltas held out for
            validation, in [0, 1) (thesis: 0.2).
        seed: seed of the initialisation, the shuffling and the dropout.
    """

    hidden: tuple[int, int] = (64, 16)
    dropout: tuple[float, float] = (0.1, 0.1)
    activation: str = "relu"
    learning_rate: float = 1e-3
    epochs: int = 5
    batch_size: int = 64
    validation_split: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(self.hidden))
        object.__setattr__(self, "dropout", tuple(self.dropout))
        check_field(self, "hidden", len(self.hidden) == 2 and all(is_count(h, 1) for h in self.hidden),
                    "two integers ≥ 1")
        check_field(self, "dropout", len(self.dropout) == 2 and all(is_finite(r) and 0 <= r < 1 for r in self.dropout),
                    "two rates in [0, 1)")
        import tensorflow as tf  # only to validate the activation: the defaults are read without TensorFlow

        try:
            tf.keras.activations.get(self.activation)
        except ValueError:
            raise ValueError(f"DiscriminatorConfig.activation: unknown Keras activation {self.activation!r}.") from None
        check_field(self, "learning_rate", is_finite(self.learning_rate) and self.learning_rate > 0,
                    "a finite number > 0", flag="")
        check_field(self, "epochs", is_count(self.epochs, 1), "an integer ≥ 1")
        check_field(self, "batch_size", is_count(self.batch_size, 1), "an integer ≥ 1", flag="--disc-batch-size")
        check_field(self, "validation_split", is_finite(self.validation_split) and 0 <= self.validation_split < 1,
                    "a number in [0, 1)", flag="")
        check_field(self, "seed", is_count(self.seed, 0), "an integer ≥ 0")

    def replace(self, **changes: Any) -> "DiscriminatorConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
