"""Typed configs of the thesis' models (thesis Table 6.2, §6.1–6.2) and their registry entries.

:class:`ThesisModelConfig` is the model and its local training; :class:`ThesisCentralConfig`
the centralized run (``thesis-central``); :class:`FedAvgConfig` / :class:`FedCurvConfig` a
federated run (``fedavg``/``fedcurv``), including where it writes (``out``) and its client
filter. Light: importing this module imports no TensorFlow; the run functions live in
:mod:`tff_esn.federated.commands` and are imported when a run starts.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from tff_esn.algorithms import register_algorithm
from tff_esn.closed_form.configs import check_field
from tff_esn.config import STATE_MODES, ReservoirConfig
from tff_esn.privacy.config import PrivacyConfig

THESIS_RESERVOIR = ReservoirConfig(units=200, spectral_radius=0.99, leaky=1.0)
"""Table 6.2's reservoir: 200 units, ρ = 0.99, α = 1.0 (other hyperparameters: defaults)."""
RESERVOIR_MODES = ("same", "different")
STATE_SOURCES = ("cached", "faithful")
_RUN = "tff_esn.federated.commands:"


def check_class_weight(class_weight: Any) -> tuple[float, float]:
    """``{0: w0, 1: w1}`` (or a pair) → ``(w0, w1)``, finite and ≥ 0, not both 0."""
    if isinstance(class_weight, dict):
        if set(class_weight) != {0, 1}:
            raise ValueError(f"class_weight: expected keys {{0, 1}}, got {sorted(class_weight)}.")
        pair = (class_weight[0], class_weight[1])
    else:
        pair = tuple(class_weight)
    if len(pair) != 2 or not all(isinstance(w, (int, float)) and math.isfinite(w) and w >= 0 for w in pair) \
            or sum(pair) == 0:
        raise ValueError(f"class_weight: expected two finite weights ≥ 0 (not both 0), got {class_weight!r}.")
    return float(pair[0]), float(pair[1])



@dataclasses.dataclass(frozen=True)
class ThesisModelConfig:
    """Everything that defines the thesis model and its local training (thesis Table 6.2).

    Attributes:
        reservoir: the reservoir hyperparameters (Table 6.2: 200 units, ρ 0.99, α 1.0).
        learning_rate: Adam's learning rate η (Table 6.2: 0.1) — the clients' optimizer.
        batch_size: sequences per mini-batch B (Table 6.2: 20).
        epochs: local epochs E per round (thesis §6.1: one epoch per round).
        class_weight: ``(w0, w1)`` loss weights of the two classes (thesis §6.1: 12, 88).
        state_mode: ``"all"`` (a prediction per time step; per-step labels) or ``"last"`` /
            ``"mean"`` (one prediction per sequence; per-sequence labels).
        washout: initial steps whose states and labels are dropped (≥ 0).
    """

    reservoir: ReservoirConfig = THESIS_RESERVOIR
    learning_rate: float = dataclasses.field(default=0.1, metadata={"flag": "client_lr"})
    batch_size: int = 20
    epochs: int = 1
    class_weight: tuple[float, float] = (12.0, 88.0)
    state_mode: str = "all"
    washout: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.reservoir, ReservoirConfig):
            raise TypeError(f"ThesisModelConfig.reservoir: expected a ReservoirConfig, got {type(self.reservoir).__name__}.")
        if not (isinstance(self.learning_rate, (int, float)) and math.isfinite(self.learning_rate)
                and self.learning_rate > 0):
            raise ValueError(f"ThesisModelConfig.learning_rate: expected a finite number > 0, got {self.learning_rate!r}.")
        for name in ("batch_size", "epochs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ThesisModelConfig.{name}: expected an integer ≥ 1, got {value!r}.")
        object.__setattr__(self, "class_weight", check_class_weight(self.class_weight))
        if self.state_mode not in STATE_MODES:
            raise ValueError(f"ThesisModelConfig.state_mode: expected 'all', 'last' or 'mean', got {self.state_mode!r}.")
        if not isinstance(self.washout, int) or self.washout < 0:
            raise ValueError(f"ThesisModelConfig.washout: expected an integer ≥ 0, got {self.washout!r}.")

    @property
    def per_step(self) -> bool:
        """Whether the model predicts at every time step (``state_mode="all"``)."""
        return self.state_mode == "all"

    def replace(self, **changes: Any) -> "ThesisModelConfig":
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class ThesisCentralConfig:
    """The centralized thesis ESN on the design set (thesis Table 6.3): ``model`` and the
    (refused) ``privacy`` settings; the seed is the reservoir's."""

    model: ThesisModelConfig = ThesisModelConfig()
    privacy: PrivacyConfig = PrivacyConfig()

    def __post_init__(self) -> None:
        if not isinstance(self.model, ThesisModelConfig):
            raise TypeError(f"{type(self).__name__}.model: expected a ThesisModelConfig, got {type(self.model).__name__}.")

    @property
    def seed(self) -> int:
        """The run's seed (reservoir, client sampling, noise, shuffling)."""
        return self.model.reservoir.seed


@dataclasses.dataclass(frozen=True)
class FedAvgConfig(ThesisCentralConfig):
    """A federated run of the thesis model (thesis §6.1–6.2, Alg. 1; flags of ``tff-esn run fedavg``).

    Attributes:
        server_lr: the server SGD's learning rate (thesis: 1.0, 0.1, 0.01, 0.001).
        rounds: communication rounds (thesis: 78).
        clients_per_round: clients sampled per round (thesis: 5).
        noise_std: std of the Gaussian noise on the noisy clients' inputs (thesis: 0.5).
        noisy_clients: ids of the clients that get noise (``None``: every training client).
        reservoirs: ``same`` (the server's reservoir) or ``different`` (flag ``--reservoir``).
        states: ``cached`` (states harvested once) or ``faithful`` (reservoir in the model).
        shuffle: shuffle each client's sequences every round (seeded).
        out: the run folder (``rounds.csv``, ``tensorboard/``, ``checkpoints/``); required.
        resume: continue the run in ``out`` from its last completed round.
        progress: show a progress bar.
        cache_dir: data cache root (harvested states go to ``CACHE/federated-states``).
        discriminator: a discriminator folder used as client filter (thesis Alg. 3–4).
        discriminator_threshold: accept a client when its P(real) exceeds this.
    """

    server_lr: float = 1.0
    rounds: int = 78
    clients_per_round: int = 5
    noise_std: float = 0.5
    noisy_clients: tuple[str, ...] | None = None
    reservoirs: str = dataclasses.field(default="same", metadata={"flag": "reservoir"})
    states: str = "cached"
    shuffle: bool = True
    out: str | None = None
    resume: bool = False
    progress: bool = True
    cache_dir: str | None = None
    discriminator: str | None = None
    discriminator_threshold: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.noisy_clients is not None:
            object.__setattr__(self, "noisy_clients", tuple(self.noisy_clients))
        check_field(self, "server_lr", isinstance(self.server_lr, (int, float)) and math.isfinite(self.server_lr)
                    and self.server_lr > 0, "a finite number > 0")
        for name in ("rounds", "clients_per_round"):
            value = getattr(self, name)
            check_field(self, name, isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                        "an integer ≥ 1")
        check_field(self, "noise_std", isinstance(self.noise_std, (int, float)) and math.isfinite(self.noise_std)
                    and self.noise_std >= 0, "a finite number ≥ 0")
        if self.reservoirs not in RESERVOIR_MODES:
            raise ValueError(f"{type(self).__name__}.reservoirs (--reservoir): expected one of {RESERVOIR_MODES}, "
                             f"got {self.reservoirs!r}.")
        check_field(self, "states", self.states in STATE_SOURCES, f"one of {STATE_SOURCES}")
        check_field(self, "out", isinstance(self.out, str) and bool(self.out),
                    "the run folder (rounds.csv, checkpoints/ and tensorboard/ are written there)")
        check_field(self, "discriminator_threshold", isinstance(self.discriminator_threshold, (int, float))
                    and 0 <= self.discriminator_threshold <= 1, "a probability in [0, 1]")


@dataclasses.dataclass(frozen=True)
class FedCurvConfig(FedAvgConfig):
    """A FedCurv run (thesis ch. 3, Alg. 2): :class:`FedAvgConfig` and the penalty weight λ."""

    penalty: float = 1e-4

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field(self, "penalty", isinstance(self.penalty, (int, float)) and math.isfinite(self.penalty)
                    and self.penalty >= 0, "a finite number ≥ 0")


register_algorithm("fedavg", FedAvgConfig, _RUN + "run_fedavg",
                   help="FedAvg of the thesis ESN readout in TFF, with a server learning rate (thesis Alg. 1)")
register_algorithm("fedcurv", FedCurvConfig, _RUN + "run_fedcurv",
                   help="FedCurv of the thesis ESN readout in TFF (thesis ch. 3, Alg. 2)")
register_algorithm("thesis-central", ThesisCentralConfig, _RUN + "run_central", tff=False,
                   help="centralized thesis ESN on the design set (thesis Table 6.3)")
