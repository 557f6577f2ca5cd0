"""Typed configs of the closed-form algorithms and their entries in the run registry.

Every config is a frozen dataclass validated on construction (a ``ValueError`` names the
field, its ``tff-esn run`` flag and what is expected). :class:`ReadoutConfig` holds what
every closed-form run shares — the reservoir, ridge λ, the states entering the readout,
the seed (the reservoir's) and the privacy settings — and the algorithms' own configs add
their hyperparameters. Light: importing this module imports no TensorFlow; each run
function lives beside its algorithm's math (``tff_esn.closed_form.<module>:run_<name>``)
and is imported when a run starts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tff_esn.algorithms import register_algorithm
from tff_esn.esn.hyperparameters import STATE_MODES, ReservoirConfig
from tff_esn.closed_form.selection import AUTO, L2_GRID, OBJECTIVES, check_grid, check_search
from tff_esn.tasks import TASK_KINDS
from tff_esn.privacy.config import IP_STATISTICS, LOCAL_STATISTICS, STATISTICS, PrivacyConfig
from tff_esn.validation import check_field, is_count, is_finite

BACKENDS = ("tff", "numpy")
INCFED_BACKENDS = ("auto", *BACKENDS)
"""IncFed's backends: ``auto`` resolves to one of the others (:attr:`IncFedConfig.resolved_backend`)."""
MASKS: tuple[str, ...] = ("nystrom", "block", "columns")
READINGS: tuple[str, ...] = ("consistent", "literal")
DEFAULT_ALPHA = 0.9
"""Default interpolation weight of ``alignment`` toward the target (see :mod:`tff_esn.closed_form.heterogeneous`)."""
L2_SCALES = ("state", "absolute")


@dataclasses.dataclass(frozen=True)
class IPConfig:
    """IP hyperparameters (FedIP Table 1; the default η is 1e-3, not the table's 0.01: DEVIATIONS.md).

    Attributes:
        mu: IP target mean μ (FedIP Table 1: 0).
        sigma: IP target std σ > 0 (FedIP: 0.005–0.15).
        eta: IP learning rate η ≥ 0 (FedIP Table 1: 0.01; one update per time step).
        epochs: local IP epochs per round (FedIP: 3–10).
        batch_size: sequences per online IP step.
        min_gain: gain floor after every IP step (projection onto g > 0, see
            :mod:`tff_esn.closed_form.fedip`); ``None``: the literal eqs. 2–3, whose gain can cross zero.
    """

    mu: float = 0.0
    sigma: float = 0.1
    eta: float = 1e-3
    epochs: int = 1
    batch_size: int = 16
    min_gain: float | None = 1e-2

    def __post_init__(self) -> None:
        for name, ok, expected in (
            ("mu", is_finite(self.mu), "a finite number"),
            ("sigma", is_finite(self.sigma) and self.sigma > 0, "a finite number > 0"),
            ("eta", is_finite(self.eta) and self.eta >= 0, "a finite number ≥ 0"),
            ("epochs", is_count(self.epochs, 1), "an integer ≥ 1"),
            ("batch_size", is_count(self.batch_size, 1), "an integer ≥ 1"),
            ("min_gain", self.min_gain is None or (is_finite(self.min_gain) and self.min_gain > 0),
             "None or a finite number > 0"),
        ):
            check_field(self, name, ok, expected, flag=f"--ip-{name.replace('_', '-')}")


@dataclasses.dataclass(frozen=True)
class ReadoutConfig:
    """What every closed-form run shares (``centralized``, ``fedavg-ridge``, ``ensemble``).

    Attributes:
        reservoir: the reservoir; its ``seed`` is the run's seed (every random choice).
        l2: ridge λ ≥ 0 (IncFed eq. 3), or ``"auto"``: chosen from ``l2_grid`` by ``objective``
            on the validation data (the validation clients, else folds carved from training; a
            tie to the larger λ); with privacy settings, or nothing to validate on, the stated
            default :data:`~tff_esn.closed_form.selection.DEFAULT_L2`. ``metrics.json``'s
            ``l2_selection`` records the λ used and how it was chosen.
        l2_grid: the λ ``"auto"`` searches, ascending (default 1e-6 … 1e3 in decades).
        state_mode: states entering the readout: every step after the washout (``all``),
            the ``last`` or the ``mean``; ``"auto"``: the one whose exact readout validates best
            (:mod:`tff_esn.closed_form.selection`).
        objective: the validation score every choice maximises (``accuracy``: the seeds' rule;
            ``balanced_accuracy`` or ``f1_macro``, which a constant predictor cannot win).
        reservoir_search: reservoir settings (``leaky``, ``spectral_radius``,
            ``input_scaling``) chosen on the validation data from a small grid; ``()``: none.
        washout: initial steps dropped (≥ 0).
        readout_bias: append a constant-1 input (the readout's bias) to the states.
        privacy: secure aggregation / DP (only the algorithms that implement them accept any).
    """

    reservoir: ReservoirConfig = ReservoirConfig()
    l2: float | str = dataclasses.field(default=1e-6, metadata={"choices": (AUTO,)})
    l2_grid: tuple[float, ...] = L2_GRID
    state_mode: str = dataclasses.field(default="all", metadata={"choices": (*STATE_MODES, AUTO)})
    objective: str = dataclasses.field(default="accuracy", metadata={"choices": OBJECTIVES})
    reservoir_search: tuple[str, ...] = ()
    washout: int = 0
    readout_bias: bool = True
    privacy: PrivacyConfig = PrivacyConfig()

    def __post_init__(self) -> None:
        if not isinstance(self.reservoir, ReservoirConfig):
            raise TypeError(f"{type(self).__name__}.reservoir: expected a ReservoirConfig, "
                            f"got {type(self.reservoir).__name__}.")
        if not isinstance(self.privacy, PrivacyConfig):
            raise TypeError(f"{type(self).__name__}.privacy: expected a PrivacyConfig, "
                            f"got {type(self.privacy).__name__}.")
        check_field(self, "l2", self.l2 == AUTO or (is_finite(self.l2) and self.l2 >= 0),
                    f"a finite number ≥ 0 or {AUTO!r}")
        object.__setattr__(self, "l2_grid", check_grid(self.l2_grid))
        check_field(self, "state_mode", self.state_mode in (*STATE_MODES, AUTO), f"one of {(*STATE_MODES, AUTO)}")
        check_field(self, "objective", self.objective in OBJECTIVES, f"one of {OBJECTIVES}")
        object.__setattr__(self, "reservoir_search", check_search(self.reservoir_search))
        check_field(self, "washout", is_count(self.washout, 0), "an integer ≥ 0")
        check_field(self, "readout_bias", isinstance(self.readout_bias, bool), "True or False")

    @property
    def seed(self) -> int:
        """The run's seed: the reservoir's."""
        return self.reservoir.seed


def _check_backend(config: Any) -> None:
    check_field(config, "backend", config.backend in BACKENDS, f"one of {BACKENDS}")


def _check_subrounds(config: Any) -> None:
    size = config.subround_size
    check_field(config, "subround_size", size is None or is_count(size, 1), "None or an integer ≥ 1")
    if size is not None and config.privacy.requested:
        raise ValueError(f"{type(config).__name__}.subround_size (--subround-size) does not combine with the privacy "
                         "settings (--secure-*/--dp-*); drop one of them.")


@dataclasses.dataclass(frozen=True)
class IncFedConfig(ReadoutConfig):
    """IncFed / FedRR (IncFed eqs. 6–10).

    Attributes:
        backend: ``auto`` (default: :attr:`resolved_backend`), ``tff`` (a TFF computation) or
            ``numpy`` (the plain numpy path).
        l2_per_client: each client adds λI to its B_c (IncFed eq. 7: the server's λ is C·λ).
        subround_size: stream the training clients through TFF in subrounds of this many
            (:mod:`tff_esn.closed_form.streaming`); ``None``: all in one computation.
    """

    backend: str = dataclasses.field(default="auto", metadata={"choices": INCFED_BACKENDS})
    l2_per_client: bool = False
    subround_size: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field(self, "backend", self.backend in INCFED_BACKENDS, f"one of {INCFED_BACKENDS}")
        _check_subrounds(self)
        if self.subround_size is not None and self.backend == "numpy":
            raise ValueError("IncFedConfig.subround_size (--subround-size) streams the clients through TFF; "
                             "use backend='tff' (drop --backend numpy).")

    @property
    def resolved_backend(self) -> str:
        """The backend that computes the readout: ``backend``, with ``auto`` resolved to ``tff`` where
        only TFF reaches (privacy settings: clipping, noise and secure sums run inside TFF; streaming
        subrounds) and to ``numpy`` elsewhere, where TFF would only sum statistics that the process
        already holds (the same readout, without TFF's copies of every client's statistics)."""
        if self.backend != "auto":
            return self.backend
        return "tff" if self.privacy.requested or self.subround_size is not None else "numpy"


@dataclasses.dataclass(frozen=True)
class PartialIncFedConfig(ReadoutConfig):
    """Partial IncFed (thesis §B.3, eqs. B.15–B.17).

    Attributes:
        k: features each client uploads, at most the readout's N_F = units (+1 with the readout
            bias) (``None``: the thesis' 1.5/|C| of N_F).
        alpha: share of the k features chosen by importance, the rest at random (Table B.2: 0.3).
        mask: reading of eq. B.16: ``nystrom`` = each client's B_c, A_c completed from its k columns
            (symmetric PSD, Cholesky); ``block`` = D B_c D, the selected rows and columns (PSD; collapses
            on offset-dominated states such as mean states); ``columns`` = B_c D, the literal
            reading (non-symmetric, LU; ill-conditioned, near chance).
    """

    k: int | None = None
    alpha: float = 0.3
    mask: str = dataclasses.field(default="nystrom", metadata={"choices": MASKS})

    def __post_init__(self) -> None:
        super().__post_init__()
        features = self.reservoir.readout_units + int(self.readout_bias)
        check_field(self, "k", self.k is None or (is_count(self.k, 1) and self.k <= features),
                    f"None or an integer in [1, {features}] (the readout's features: --units "
                    f"{self.reservoir.readout_units}{' + the readout bias' if self.readout_bias else ''})")
        check_field(self, "alpha", is_finite(self.alpha) and 0 <= self.alpha <= 1, "a number in [0, 1]")
        check_field(self, "mask", self.mask in MASKS, f"one of {MASKS}")


@dataclasses.dataclass(frozen=True)
class PFedRRConfig(ReadoutConfig):
    """pFedRR (pFedRR eqs. 2–5): I-pFedRR reported, FedRR and R-pFedRR compared.

    Attributes:
        tau: importance threshold τ ∈ (0, 1]: units with scaled importance ≥ 1 − τ are kept.
        reading: ``consistent`` (A_c masked like B̃_c) or ``literal`` (A_c sent whole, eq. 2).
        subround_size: stream the clients in subrounds of this many (``None``: all at once).
    """

    tau: float = 0.5
    reading: str = dataclasses.field(default="consistent", metadata={"choices": READINGS})
    subround_size: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field(self, "tau", is_finite(self.tau) and 0 < self.tau <= 1, "a number in (0, 1]")
        check_field(self, "reading", self.reading in READINGS, f"one of {READINGS}")
        _check_subrounds(self)


@dataclasses.dataclass(frozen=True)
class FedIPConfig(ReadoutConfig):
    """FedIP (FedIP Alg. 1): federated intrinsic-plasticity rounds on (g, b), then IncFed.

    Attributes:
        backend: ``tff`` or ``numpy``.
        rounds: FedIP rounds (≥ 1).
        ip: the IP rule's hyperparameters (flags ``--ip-mu``, ``--ip-sigma``, …).
        l2_scale: ``state``: λ is on the unadapted reservoir's state scale and follows the adapted
            states' (λ × adapted/initial state variance); ``absolute``: λ as given.
    """

    backend: str = dataclasses.field(default="tff", metadata={"choices": BACKENDS})
    rounds: int = 3
    ip: IPConfig = dataclasses.field(default=IPConfig(), metadata={"prefix": "ip_"})
    l2_scale: str = dataclasses.field(default="state", metadata={"choices": L2_SCALES})

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_backend(self)
        check_field(self, "rounds", is_count(self.rounds, 1), "an integer ≥ 1")
        check_field(self, "l2_scale", self.l2_scale in L2_SCALES, f"one of {L2_SCALES}")
        check_field(self.reservoir, "activation", self.reservoir.activation == "tanh",
                    "tanh: intrinsic plasticity (FedIP eqs. 2–3) is derived for tanh units")


@dataclasses.dataclass(frozen=True)
class AlignmentConfig(ReadoutConfig):
    """Different reservoirs interpolated toward a shared one, then IncFed.

    Attributes:
        alpha: interpolation weight toward the shared reservoir in [0, 1] (1 = IncFed), or ``"auto"``:
            the value of :data:`~tff_esn.closed_form.selection.ALPHA_GRID` whose readout validates best
            (at its best λ; :mod:`tff_esn.closed_form.selection`).
        rescale: scale the interpolated Ŵ and W_in back to the target's ρ and norm (default: the
            literal interpolation, under which both shrink).
    """

    alpha: float | str = dataclasses.field(default=DEFAULT_ALPHA, metadata={"choices": (AUTO,)})
    rescale: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field(self, "alpha", self.alpha == AUTO or (is_finite(self.alpha) and 0 <= self.alpha <= 1),
                    f"a number in [0, 1] or {AUTO!r}")


def runs_tff(config: ReadoutConfig) -> bool:
    """Whether a closed-form run executes TFF computations: the ``tff`` backend, any privacy
    setting (secure aggregation and DP run inside TFF) or streaming subrounds; every other run
    is numpy (and TensorFlow for the harvest) only."""
    backend = getattr(config, "resolved_backend", getattr(config, "backend", "numpy"))
    return (backend == "tff" or config.privacy.requested
            or getattr(config, "subround_size", None) is not None)


register_algorithm("centralized", ReadoutConfig, "tff_esn.closed_form.centralized:run_centralized",
                   ragged=True, tff=runs_tff, communication="centralized", tasks=TASK_KINDS,
                   help="centralized ESN: ridge readout on the pooled training clients (IncFed eq. 3)")
register_algorithm("incfed", IncFedConfig, "tff_esn.closed_form.incfed:run_incfed",
                   ragged=True, tff=runs_tff, privacy=STATISTICS, communication="incfed", tasks=TASK_KINDS,
                   help="IncFed/FedRR: exact federated ridge readout via summed statistics (IncFed §III)")
register_algorithm("fedavg-ridge", ReadoutConfig, "tff_esn.closed_form.fedavg_ridge:run_fedavg_ridge",
                   ragged=True, tff=runs_tff, communication="fedavg_ridge", tasks=TASK_KINDS,
                   help="FedAvg of local ridge readouts weighted by local sizes (IncFed eq. 5)")
register_algorithm("rls", ReadoutConfig, "tff_esn.closed_form.rls:run_rls",
                   ragged=True, tff=False, communication="rls", tasks=TASK_KINDS,
                   help="online ridge readout: recursive least squares passed from client to client (= centralized)")
register_algorithm("partial-incfed", PartialIncFedConfig, "tff_esn.closed_form.partial_incfed:run_partial_incfed",
                   ragged=True, tff=runs_tff, privacy=LOCAL_STATISTICS, communication="partial_incfed",
                   tasks=TASK_KINDS,
                   help="Partial IncFed: k important/random columns of A_c, B_c (thesis appendix B)")
register_algorithm("pfedrr", PFedRRConfig, "tff_esn.closed_form.pfedrr:run_pfedrr",
                   ragged=True, tff=runs_tff, privacy=LOCAL_STATISTICS, communication="pfedrr",
                   tasks=TASK_KINDS,
                   help="pFedRR: importance-sparsified B_c (I-), with FedRR and R-pFedRR compared (pFedRR §2)")
register_algorithm("fedip", FedIPConfig, "tff_esn.closed_form.fedip:run_fedip",
                   ragged=True, tff=runs_tff, privacy=IP_STATISTICS, communication="fedip",
                   tasks=TASK_KINDS,
                   help="FedIP: federated intrinsic plasticity rounds on (g, b), then IncFed (FedIP Alg. 1)")
register_algorithm("ensemble", ReadoutConfig, "tff_esn.closed_form.heterogeneous:run_ensemble",
                   ragged=True, tff=runs_tff, communication="ensemble",
                   tasks=TASK_KINDS,
                   help="different reservoir per client; size-weighted ensemble of local readouts")
register_algorithm("alignment", AlignmentConfig, "tff_esn.closed_form.heterogeneous:run_alignment",
                   ragged=True, tff=runs_tff, communication="incfed",
                   tasks=TASK_KINDS,
                   help="different reservoirs interpolated toward a shared one with weight α, then IncFed")
