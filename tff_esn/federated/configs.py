"""Typed configs of the thesis' models (thesis Table 6.2, §6.1–6.2), their costs and registrations
(``fedavg``, ``fedcurv``, ``thesis-central``). Imports no TensorFlow."""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
from collections.abc import Iterable
from types import EllipsisType
from typing import TYPE_CHECKING, Any, ClassVar

from tff_esn.registry.algorithms import available_algorithms, register_algorithm
from tff_esn.closed_form.configs import OWN_DATA as RIDGE_OWN_DATA, SERIES_RESERVOIR, centralized_cost
from tff_esn.closed_form.selection import AUTO, check_search
from tff_esn.common.communication import CommunicationCost, Phase, check_counts
from tff_esn.common.run_warnings import warn
from tff_esn.common.validation import check_field, is_count, is_finite
from tff_esn.esn.hyperparameters import STATE_MODES, ReservoirConfig
from tff_esn.data.errors import DataError
from tff_esn.privacy.config import LEARNING, PrivacyConfig
from tff_esn.common.tasks import TASK_KINDS

if TYPE_CHECKING:
    import numpy as np

    from tff_esn.data.sequences import ClientSequences, SequenceDataset

THESIS_RESERVOIR = ReservoirConfig(units=200, spectral_radius=0.99, leaky=1.0)
"""Table 6.2's reservoir: 200 units, ρ = 0.99, α = 1.0 (other hyperparameters: defaults)."""
RESERVOIR_MODES = ("same", "different")
STATE_SOURCES = ("cached", "faithful")
BACKENDS = ("auto", "tff", "sim")
"""How a federated run's rounds execute: ``auto`` (the default: :func:`resolve_backend` chooses and says
why), ``tff`` (TFF's runtime and workers) or ``sim`` (one process, :mod:`tff_esn.federated.simulation`)."""
PREFERRED_BACKEND = "sim"
"""What ``auto`` resolves to where both backends can run the rounds (no secure aggregation, no TFF workers)."""
SIM_SECURE = ("backend (--backend): 'sim' has no secure aggregation (a protocol between TFF's clients and server); "
              "run --secure-aggregation with --backend tff.")
_RUN = "tff_esn.federated.commands:"


OPTIMIZERS = ("adam", "sgd")
"""The readout's optimizer: Adam (the thesis) or plain SGD (no momentum)."""
READOUT_INPUTS = ("raw", "standardized")
"""The readout's inputs: the reservoir states as they are, or standardised with the training
clients' federated feature means and variances (:mod:`tff_esn.esn.standardization`)."""
CLIENT_LR_GRIDS: dict[str, tuple[float, ...]] = {"adam": (1e-3, 1e-2, 1e-1), "sgd": (1e-2, 1e-1, 1.0)}
"""The client learning rates ``--client-lr auto`` tries on the validation clients, per optimizer."""
REAL_LR_GRIDS: dict[str, tuple[float, ...]] = {"adam": (1e-3, 1e-2, 1e-1), "sgd": (1e-4, 1e-3, 1e-2)}
"""The client learning rates ``--client-lr auto`` tries on real targets (mean squared error): plain SGD
diverges above 1/λ_max of the states' covariance (≈ 250 for 500 standardised units of NARMA10)."""
PENALTY_GRID: tuple[float, ...] = (0.0, 1e-4, 1e-2, 1.0)
"""FedCurv's penalty weights ``--penalty auto`` tries on the validation clients (0: FedAvg)."""
DEFAULT_PENALTY = 1e-4
"""FedCurv's penalty weight of ``--penalty auto`` with nothing to choose it on (thesis Listing 3.7)."""


def client_lr_choices(model: "ThesisModelConfig") -> tuple[tuple[float, ...], float]:
    """The grid ``--client-lr auto`` tries for ``model`` (its optimizer and loss) and the rate it takes with
    nothing to choose on (no validation clients, or DP): the grid's middle value."""
    grid = (REAL_LR_GRIDS if model.real else CLIENT_LR_GRIDS)[model.optimizer]
    return grid, grid[1]


ADAPTIVE_FEDCURV = ("fedcurv with --dp-adaptive-clip: the curvature terms (u, v) need the fixed clip of the joint "
                    "release; drop --dp-adaptive-clip.")
"""The one privacy combination refused rather than covered: adaptive clipping has no joint release of
FedCurv's update and (u, v) (:mod:`tff_esn.privacy.learning`)."""


def chosen_index(scores: Iterable[tuple[float, float]]) -> int:
    """Index of the best ``(validation macro-F1, validation cross-entropy)`` of a grid: the highest
    F1, a tie to the lower cross-entropy, then to the earlier value; NaN never wins."""
    keys = [(-math.inf if math.isnan(f) else f, -math.inf if math.isnan(loss) else -loss) for f, loss in scores]
    return keys.index(max(keys))

BALANCED = "balanced"
"""``class_weight`` resolved from the training labels: ``n / (K · n_k)`` per class k."""
REAL_TARGETS: tuple[float, ...] = ()
"""``class_weight`` resolved for real targets (forecast, regress): no classes, one linear output
trained on the mean squared error."""


def check_class_weight(class_weight: Any) -> tuple[float, ...] | str:
    """``"balanced"``, ``{0: w0, …, K−1: w_{K−1}}`` or K ≥ 2 weights → ``"balanced"`` or ``(w0, …)``,
    finite and ≥ 0, not all 0."""
    if class_weight == BALANCED:
        return BALANCED
    if class_weight == REAL_TARGETS:
        return REAL_TARGETS
    if isinstance(class_weight, dict):
        keys = set(class_weight) == set(range(len(class_weight)))
        weights = tuple(class_weight[k] for k in range(len(class_weight))) if keys else ()
    else:
        weights = () if isinstance(class_weight, str) else tuple(class_weight)
    if len(weights) < 2 or not all(isinstance(w, numbers.Real) and not isinstance(w, bool) and math.isfinite(w)
                                   and w >= 0 for w in weights) or sum(weights) == 0:
        raise ValueError(f"class_weight: expected {BALANCED!r} or K ≥ 2 finite weights ≥ 0 (not all 0; as a dict "
                         f"keyed 0 … K − 1), got {class_weight!r}.")
    return tuple(float(w) for w in weights)


@dataclasses.dataclass(frozen=True)
class ThesisModelConfig:
    """Everything that defines the thesis model and its local training (thesis Table 6.2).

    Attributes:
        reservoir: the reservoir hyperparameters (Table 6.2: 200 units, ρ 0.99, α 1.0).
        learning_rate: the optimizer's learning rate η (Table 6.2: Adam, 0.1) — the clients'
            optimizer; ``auto``: the rate of ``CLIENT_LR_GRIDS[optimizer]`` whose model scores best
            on the validation clients.
        optimizer: ``adam`` (thesis Table 6.2; the clients' Adam starts anew every round) or
            ``sgd`` (plain SGD: its step follows the gradient's size, so local training settles
            where Adam's fresh first steps of ±η per weight keep it moving).
        batch_size: sequences per mini-batch B (Table 6.2: 20).
        epochs: local epochs E per round (thesis §6.1: one epoch per round).
        class_weight: loss weight of each class, ``W0,W1,…`` (one per class; thesis §6.1: 12, 88),
            or ``balanced``: ``n / (K · n_k)`` from the training clients' labels, resolved when
            the run starts (:func:`for_data`; the numbers used are recorded). A resolved
            config holds one weight per class, so it also fixes the readout: a sigmoid unit
            for two classes, a softmax over K for more.
        state_mode: ``"all"`` (a prediction per time step; per-step labels) or ``"last"`` /
            ``"mean"`` (one prediction per sequence; per-sequence labels; sequences of unequal
            length each give the state at their own end or the mean over their own steps).
        washout: initial steps whose states and labels are dropped (≥ 0).
        readout_inputs: ``raw`` (the thesis: the reservoir states) or ``standardized`` (every
            state feature shifted and scaled by the training clients' federated mean and
            standard deviation, one exact sum before training; cached states only).
        reservoir_search: reservoir settings chosen on the validation data before training, with
            ``state_mode="auto"`` (``mean`` or ``last``): the closed-form selection's choice
            (:func:`tff_esn.federated.commands.choose_states`); ``()``: none.
    """

    reservoir: ReservoirConfig = THESIS_RESERVOIR
    learning_rate: float | str = dataclasses.field(default=0.1, metadata={"flag": "client_lr", "choices": (AUTO,)})
    optimizer: str = dataclasses.field(default="adam", metadata={"choices": OPTIMIZERS})
    batch_size: int = 20
    epochs: int = 1
    class_weight: tuple[float, ...] | str = dataclasses.field(
        default=(12.0, 88.0), metadata={"choices": (BALANCED,), "metavar": "W0,W1,…|balanced"})
    state_mode: str = dataclasses.field(default="all", metadata={"choices": (*STATE_MODES, AUTO)})
    washout: int = 0
    readout_inputs: str = dataclasses.field(default="raw", metadata={"choices": READOUT_INPUTS})
    reservoir_search: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.reservoir, ReservoirConfig):
            raise TypeError(f"ThesisModelConfig.reservoir: expected a ReservoirConfig, got {type(self.reservoir).__name__}.")
        check_field(self, "learning_rate", self.learning_rate == AUTO or (is_finite(self.learning_rate)
                    and self.learning_rate > 0), f"a finite number > 0 or {AUTO!r}")
        check_field(self, "optimizer", self.optimizer in OPTIMIZERS, f"one of {OPTIMIZERS}")
        check_field(self, "readout_inputs", self.readout_inputs in READOUT_INPUTS, f"one of {READOUT_INPUTS}")
        for name in ("batch_size", "epochs"):
            check_field(self, name, is_count(getattr(self, name), 1), "an integer ≥ 1")
        object.__setattr__(self, "class_weight", check_class_weight(self.class_weight))
        check_field(self, "state_mode", self.state_mode in (*STATE_MODES, AUTO), f"one of {(*STATE_MODES, AUTO)}")
        object.__setattr__(self, "reservoir_search", check_search(self.reservoir_search))
        check_field(self, "washout", is_count(self.washout, 0), "an integer ≥ 0")

    @property
    def n_classes(self) -> int:
        """K, the number of classes the (resolved) config's readout separates."""
        if self.class_weight == BALANCED:
            raise ValueError("ThesisModelConfig: class_weight='balanced' is resolved from the training labels first "
                             "(tff_esn.federated.configs.for_data).")
        return len(self.class_weight)

    @property
    def n_outputs(self) -> int:
        """Readout units: 1 (sigmoid, two classes: the thesis; linear, real targets) or K (softmax)."""
        return 1 if self.real or self.n_classes == 2 else self.n_classes

    @property
    def real(self) -> bool:
        """Whether the readout predicts real targets: ``x w + b`` on the mean squared error
        (``class_weight`` :data:`REAL_TARGETS`, resolved by :func:`for_data`)."""
        return self.class_weight == REAL_TARGETS

    @property
    def standardized(self) -> bool:
        """Whether the readout's inputs are standardised (``readout_inputs="standardized"``)."""
        return self.readout_inputs == "standardized"

    @property
    def per_step(self) -> bool:
        """Whether the model predicts at every time step (``state_mode="all"``)."""
        return self.state_mode == "all"

    def replace(self, **changes: Any) -> "ThesisModelConfig":
        return dataclasses.replace(self, **changes)


def loss_labels(clients: Iterable[ClientSequences], config: ThesisModelConfig) -> np.ndarray:
    """The labels the loss counts, flat: one per sequence, or one per step after the washout."""
    import numpy as np

    parts = [c.y[:, config.washout:].reshape(-1) if c.per_step else c.y for c in clients]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def for_data(config: ThesisModelConfig, dataset: SequenceDataset, train_ids: Iterable[str], *,
             faithful: bool = False) -> ThesisModelConfig:
    """``config`` checked against the data (label layout, washout, equal lengths when ``faithful``; a
    :class:`~tff_esn.data.errors.DataError`) and resolved for it: one class weight per class, or :data:`REAL_TARGETS`."""
    if config.state_mode == AUTO or config.reservoir_search:
        raise ValueError("ThesisModelConfig: state_mode 'auto' and reservoir_search are chosen by the run function "
                         "(tff_esn.federated.commands.choose_states) before training.")
    train = dataset.select(train_ids).values()
    per_step = {c.per_step for c in dataset.clients.values()}
    if config.per_step and per_step != {True}:
        raise DataError(f"{dataset.source}: y: one label per sequence, but state_mode 'all' is the thesis' per-step "
                        "classifier (a label at every step); use --state-mode mean (or last) to predict one class "
                        "per sequence.")
    if not config.per_step and per_step != {False}:
        raise DataError(f"{dataset.source}: y: labels per time step, but state_mode {config.state_mode!r} predicts "
                        "once per sequence; use --state-mode all.")
    if config.state_mode != "last" and config.washout >= dataset.shortest:
        raise DataError(f"{dataset.source}: X: the shortest sequence has {dataset.shortest} steps; washout "
                        f"{config.washout} must be shorter.")
    if faithful and dataset.ragged:
        raise DataError(f"{dataset.source}: X: sequences of unequal length; --states faithful runs the reservoir "
                        "inside the Keras model on equal-length batches: use --states cached (each sequence "
                        "harvested at its own length) or --ragged crop.")
    if dataset.task.real:
        return dataclasses.replace(config, class_weight=REAL_TARGETS)
    return dataclasses.replace(config, class_weight=resolve_class_weight(
        config.class_weight, loss_labels(train, config), dataset.n_classes, dataset.source))


def resolve_class_weight(class_weight: tuple[float, ...] | str, labels: np.ndarray, n_classes: int,
                         source: str = "data") -> tuple[float, ...]:
    """One weight per class: ``"balanced"`` → ``n / (K · n_k)`` over ``labels``, K the classes present (sklearn's
    ``compute_class_weight("balanced")`` over them), 0 with a warning for a class without training labels; explicit
    weights must number ``n_classes``."""
    import numpy as np

    if class_weight == BALANCED:
        counts = np.bincount(labels, minlength=n_classes)
        absent = np.flatnonzero(counts == 0)
        if absent.size:
            warn(f"{source}: y: class(es) {absent.tolist()} have no training labels; class_weight 'balanced' gives "
                 "them weight 0 (the model is never trained to predict them)")
        present = counts > 0
        weights = np.zeros(n_classes)
        weights[present] = counts.sum() / (int(present.sum()) * counts[present])
        return tuple(float(w) for w in weights)
    if len(class_weight) != n_classes:
        raise DataError(f"{source}: y: {n_classes} classes, but class_weight has {len(class_weight)} weights "
                        f"{list(class_weight)}; give --class-weight {n_classes} weights W0,…,W{n_classes - 1} or "
                        "'balanced'.")
    return tuple(class_weight)


@dataclasses.dataclass(frozen=True)
class ThesisRunConfig:
    """What every run of the thesis model has: ``model`` and the ``privacy`` settings; the
    seed is the reservoir's."""

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
class ThesisCentralConfig(ThesisRunConfig):
    """The centralized thesis ESN on the design set (thesis Table 6.3; ``privacy`` is refused).

    Attributes:
        patience: 0 trains on the design set (training + validation clients) for ``epochs``
            epochs (thesis Table 6.3); n ≥ 1 trains on the training clients for at most
            ``epochs`` epochs and stops once the validation clients' macro-F1 (a tie: the lower loss) has not improved
            for n epochs, restoring the best epoch's weights (without validation clients:
            ``epochs`` epochs on the design set, with a recorded warning).
        refit: with ``patience``, train a fresh readout on training + validation clients for the
            stopped run's best epoch count at its learning rate, the model returned (the validation
            data carved from the training data go back into training); with ``l2`` > 0 until the
            penalised training loss has not improved for ``patience`` epochs.
        l2: λ of the penalty λ‖W‖² on the readout kernel added to the loss (the thesis: 0).
        progress: show a progress bar of the candidates and epochs on a terminal.
    """

    patience: int = 0
    refit: bool = False
    l2: float = 0.0
    progress: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field(self, "patience", is_count(self.patience, 0), "an integer ≥ 0")
        check_field(self, "l2", is_finite(self.l2) and self.l2 >= 0, "a finite number ≥ 0")


@dataclasses.dataclass(frozen=True)
class FedAvgConfig(ThesisRunConfig):
    """A federated run of the thesis model (thesis §6.1–6.2, Alg. 1; flags of ``tff-esn run fedavg``),
    what :func:`tff_esn.federated.training.run_federated` runs.

    Attributes:
        algorithm: the registered name of the process the run builds (a class attribute, not a
            setting).
        curvature: whether the process is FedCurv's (its client work and the ``(u, v)`` aggregate;
            a class attribute).
        server_lr: the server SGD's learning rate (thesis: 1.0, 0.1, 0.01, 0.001).
        rounds: communication rounds (thesis: 78).
        clients_per_round: clients sampled per round (thesis: 5).
        noise_std: std of the Gaussian noise on the noisy clients' inputs (thesis: 0.5).
        noisy_clients: ids of the clients that get noise (``None``: every training client).
        reservoirs: ``same`` (the server's reservoir) or ``different`` (each client its own).
        states: ``cached`` (readout trained on states harvested once, noise fixed per client) or
            ``faithful`` (reservoir inside the model, noise redrawn every round).
        shuffle: shuffle each client's sequences every round (seeded).
        out: the run folder (``rounds.csv``, ``tensorboard/``, ``checkpoints/``); ``None`` keeps
            everything in memory (no resume; the command line always gives one). ``out`` and
            ``cache_dir`` are made absolute on construction (the TFF worker reads the cached
            states from its own working folder, which a later ``os.chdir`` does not move).
        resume: continue the run in ``out`` from its last completed round.
        init_from: a saved model (a run folder or its ``model/`` folder: a fedavg, fedcurv or thesis-central run's)
            whose readout is the server model before the first round: training continues from it. Its reservoir,
            state mode, washout, features, classes and readout inputs must be this run's (the run refuses
            otherwise); a standardised readout keeps the saved model's state standardisation.
        progress: show a progress bar of the candidates and rounds on a terminal.
        cache_dir: data cache root (harvested states go to ``CACHE/federated-states``; ``None``:
            the command line uses ``$TFF_ESN_CACHE`` or ``~/.cache/tff_esn``, a library call a
            temporary folder).
        discriminator: a discriminator folder used as client filter (thesis Alg. 3–4, FedAvg/FedCurv+Disc),
            loaded by the ``discriminator`` entry point of the ``tff_esn.client_filters`` group.
        discriminator_threshold: accept a client when its P(real) exceeds this.
        keep_best: the result is the server model of the round with the best validation
            macro-F1 instead of the last round's (without validation clients: the last
            round's, with a recorded warning).
        patience: 0 trains for ``rounds`` rounds; n ≥ 1 stops once the validation macro-F1 has
            not improved for n rounds (with ``keep_best``; without validation clients: every round).
        backend: ``auto`` (default): ``tff`` with secure aggregation or TFF workers, else ``sim``
            (:func:`resolve_backend`); ``tff`` runs the rounds in TFF's runtime (the only one with
            ``--workers`` and secure aggregation), ``sim`` in this process (with DP too).
    """

    algorithm: ClassVar[str] = "fedavg"
    curvature: ClassVar[bool] = False
    server_lr: float = 1.0
    rounds: int = 78
    clients_per_round: int = 5
    noise_std: float = 0.5
    noisy_clients: tuple[str, ...] | None = dataclasses.field(default=None, metadata={"metavar": "ID,ID"})
    reservoirs: str = dataclasses.field(default="same", metadata={"flag": "reservoir", "choices": RESERVOIR_MODES})
    states: str = dataclasses.field(default="cached", metadata={"choices": STATE_SOURCES})
    shuffle: bool = True
    out: str | None = None
    resume: bool = False
    init_from: str | None = dataclasses.field(default=None, metadata={"metavar": "DIR"})
    progress: bool = True
    cache_dir: str | None = None
    discriminator: str | None = dataclasses.field(default=None, metadata={"metavar": "PATH"})
    discriminator_threshold: float = 0.5
    keep_best: bool = False
    patience: int = 0
    backend: str = dataclasses.field(default="auto", metadata={"choices": BACKENDS})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.noisy_clients is not None:
            object.__setattr__(self, "noisy_clients", tuple(self.noisy_clients))
        check_field(self, "server_lr", is_finite(self.server_lr) and self.server_lr > 0, "a finite number > 0")
        for name in ("rounds", "clients_per_round"):
            check_field(self, name, is_count(getattr(self, name), 1), "an integer ≥ 1")
        check_field(self, "noise_std", is_finite(self.noise_std) and self.noise_std >= 0, "a finite number ≥ 0")
        check_field(self, "reservoirs", self.reservoirs in RESERVOIR_MODES, f"one of {RESERVOIR_MODES}")
        check_field(self, "states", self.states in STATE_SOURCES, f"one of {STATE_SOURCES}")
        check_field(self, "out", self.out is None or (isinstance(self.out, str) and bool(self.out)),
                    "the run folder (rounds.csv, checkpoints/ and tensorboard/ are written there) or None (in memory)")
        check_field(self, "resume", not self.resume or self.out is not None, "False when out is None (the checkpoints are in out)")
        check_field(self, "init_from", self.init_from is None or (isinstance(self.init_from, str)
                    and bool(self.init_from)), "a saved model's folder (a run folder or its model/) or None")
        for name in ("out", "cache_dir", "init_from"):
            if getattr(self, name):
                object.__setattr__(self, name, os.path.abspath(getattr(self, name)))
        check_field(self, "discriminator_threshold", is_finite(self.discriminator_threshold)
                    and 0 <= self.discriminator_threshold <= 1, "a probability in [0, 1]")
        check_field(self, "backend", self.backend in BACKENDS, f"one of {BACKENDS}")
        check_field(self, "patience", is_count(self.patience, 0), "an integer ≥ 0")
        if self.model.standardized and self.states == "faithful":
            raise ValueError("readout_inputs (--readout-inputs): 'standardized' scales cached reservoir states; "
                             "--states faithful runs the reservoir inside the model: use --states cached or "
                             "--readout-inputs raw.")
        res = self.model.reservoir
        if self.states == "faithful" and self.reservoirs == "different" and (
                res.activation == "mixed" or res.leak_distribution != "constant"):
            raise ValueError("--reservoir different --states faithful: a client's own reservoir enters the model as "
                             "weights, but its per-unit draws (--activation mixed, --leak-distribution) would stay the "
                             "server's; use --states cached.")
        if self.backend == "sim" and self.privacy.secure_aggregation:
            raise ValueError(SIM_SECURE)


@dataclasses.dataclass(frozen=True)
class FedCurvConfig(FedAvgConfig):
    """A FedCurv run (thesis ch. 3, Alg. 2): :class:`FedAvgConfig` and the penalty weight λ.

    Attributes:
        penalty: FedCurv's penalty weight λ (thesis Listing 3.7: 1e-4); ``auto``: the weight of
            ``PENALTY_GRID`` (0 included: FedAvg) whose model scores best on the validation clients.
    """

    algorithm: ClassVar[str] = "fedcurv"
    curvature: ClassVar[bool] = True
    penalty: float | str = dataclasses.field(default=1e-4, metadata={"choices": (AUTO,)})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field(self, "penalty", self.penalty == AUTO or (is_finite(self.penalty) and self.penalty >= 0),
                    f"a finite number ≥ 0 or {AUTO!r}")
        if self.privacy.dp_adaptive_clip:
            raise ValueError(ADAPTIVE_FEDCURV)


def resolve_backend(backend: str, *, secure: bool = False, workers: list[str] | None | EllipsisType = ...) -> str:
    """``backend`` checked against the TFF ``workers`` (default: the runtime's), or for ``auto`` ``tff`` with
    secure aggregation or TFF workers, else :data:`PREFERRED_BACKEND`."""
    if workers is ...:
        from tff_esn import runtime

        workers = runtime.current_workers()
    if backend == "auto":
        return "tff" if secure or workers is not None else PREFERRED_BACKEND
    if backend == "sim" and workers is not None:
        raise ValueError(f"backend (--backend): 'sim' runs every client in this process, not on the workers "
                         f"{workers}; use --backend tff with --workers.")
    return backend


def _runs_tff(config: FedAvgConfig) -> bool:
    """Whether the rounds run in TFF's runtime, so the entry point installs TFF's execution
    context; the simulation needs none."""
    return resolve_backend(config.backend, secure=config.privacy.secure_aggregation) == "tff"


def fedavg_cost(trainable: int, non_trainable: int, rounds: int = 1) -> CommunicationCost:
    """Thesis Alg. 1: per round down the model (trainable + non-trainable weights), up the trainable delta."""
    check_counts(trainable=trainable)
    return CommunicationCost((Phase("fedavg", trainable, trainable + non_trainable, rounds, bytes_per_float=4),))


def fedcurv_cost(trainable: int, non_trainable: int, rounds: int = 1) -> CommunicationCost:
    """Thesis Alg. 2: FedAvg's floats plus the Fisher terms u and v (2 × trainable) both ways."""
    (phase,) = fedavg_cost(trainable, non_trainable, rounds).phases
    return CommunicationCost((dataclasses.replace(phase, name="fedcurv", up=phase.up + 2 * trainable,
                                                  down=phase.down + 2 * trainable),))


_THESIS_MODEL = {"state_mode": AUTO, "reservoir_search": RIDGE_OWN_DATA["reservoir_search"], "bias_scaling": 1.0,
                 "class_weight": "balanced", "readout_inputs": "standardized", "client_lr": "auto"}
_THESIS_FEDERATION = {**_THESIS_MODEL, "noise_std": 0.0, "optimizer": "sgd", "epochs": 10, "rounds": 300,
                      "keep_best": True, "patience": 100}
_FEDAVG_COVERS = "the model updates (readout kernel and bias)"
register_algorithm("fedavg", FedAvgConfig, _RUN + "run_federation", ragged=True, tff=_runs_tff,
                   privacy=dataclasses.replace(LEARNING, covers=_FEDAVG_COVERS), communication=fedavg_cost,
                   pipeline="thesis", own_data=_THESIS_FEDERATION, tasks=TASK_KINDS,
                   series_data={**_THESIS_FEDERATION, **SERIES_RESERVOIR, "reservoir_search": ()},
                   help="FedAvg of the thesis ESN readout, with a server learning rate (thesis Alg. 1)")
register_algorithm("fedcurv", FedCurvConfig, _RUN + "run_federation", ragged=True, tff=_runs_tff,
                   privacy=dataclasses.replace(
                       LEARNING, settings=tuple(s for s in LEARNING.settings if s != "dp_adaptive_clip"),
                       refused=(("dp_adaptive_clip", ADAPTIVE_FEDCURV),), own_client_work=True,
                       covers=_FEDAVG_COVERS + " and the curvature terms (u_b, v_b) of thesis Alg. 2, one joint "
                                               "release per round under DP"),
                   communication=fedcurv_cost, pipeline="thesis", own_data={**_THESIS_FEDERATION, "penalty": AUTO},
                   tasks=TASK_KINDS, series_data={**_THESIS_FEDERATION, **SERIES_RESERVOIR, "reservoir_search": (),
                                                   "penalty": AUTO},
                   help="FedCurv of the thesis ESN readout (thesis ch. 3, Alg. 2)")
register_algorithm("thesis-central", ThesisCentralConfig, _RUN + "run_central", tff=False, ragged=True,
                   communication=centralized_cost, pooled=True, pipeline="thesis",
                   own_data={**_THESIS_MODEL, "epochs": 1000, "patience": 100, "refit": True, "l2": 1e-3},
                   help="centralized thesis ESN on the design set (thesis Table 6.3)")


def federated_algorithms() -> tuple[str, ...]:
    """The registered algorithms that train the thesis model in a federation (their config is a
    :class:`FedAvgConfig`), what ``tff-esn discriminator phase --algorithm`` offers."""
    return tuple(n for n, a in available_algorithms().items() if issubclass(a.config, FedAvgConfig))
