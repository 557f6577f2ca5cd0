"""Typed configs of the closed-form algorithms, their communication costs and their registrations.
Imports no TensorFlow: each run function (``tff_esn.closed_form.<module>:run_<name>``) loads when a run starts."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from tff_esn.registry.algorithms import register_algorithm
from tff_esn.common.communication import CommunicationCost, Phase, readout_floats
from tff_esn.esn.hyperparameters import STATE_MODES, ReservoirConfig
from tff_esn.closed_form.selection import (AUTO, L2_GRID, OBJECTIVES, SEARCHABLE, check_grid, check_search,
                                          chooses, parse_switch)
from tff_esn.common.tasks import TASK_KINDS
from tff_esn.privacy.config import IP_STATISTICS, LOCAL_STATISTICS, STATISTICS, PrivacyConfig
from tff_esn.common.validation import check_field, is_count, is_finite

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
        washout: initial steps dropped (≥ 0), or ``"auto"``: chosen from ``WASHOUT_GRID`` on the validation
            data by the exact readout's error on the steps every candidate keeps.
        readout_bias: append a constant-1 input (the readout's bias) to the states.
        raw_inputs: the readout sees the input u(t) beside the state x(t), rows ``[u, x]`` read as the
            state mode reads states (esnfed's features, reservoirpy's ``use_raw_inputs``); ``"auto"``: chosen on
            the validation data like the state mode (:mod:`tff_esn.closed_form.selection`). Not with secure
            aggregation unless ``secure_range`` is given: its derived range bounds states in [−1, 1].
        privacy: secure aggregation / DP (only the algorithms that implement them accept any).
    """

    reservoir: ReservoirConfig = ReservoirConfig()
    l2: float | str = dataclasses.field(default=1e-6, metadata={"choices": (AUTO,)})
    l2_grid: tuple[float, ...] = L2_GRID
    state_mode: str = dataclasses.field(default="all", metadata={"choices": (*STATE_MODES, AUTO)})
    objective: str = dataclasses.field(default="accuracy", metadata={"choices": OBJECTIVES})
    reservoir_search: tuple[str, ...] = ()
    washout: int | str = dataclasses.field(default=0, metadata={"choices": (AUTO,)})
    readout_bias: bool = True
    raw_inputs: bool | str = dataclasses.field(default=False, metadata={
        "choices": (AUTO,), "type": parse_switch, "metavar": "{true,false,auto}"})
    privacy: PrivacyConfig = PrivacyConfig()

    def __post_init__(self) -> None:
        check_field(self, "reservoir", isinstance(self.reservoir, ReservoirConfig), "a ReservoirConfig", flag="")
        check_field(self, "privacy", isinstance(self.privacy, PrivacyConfig), "a PrivacyConfig", flag="")
        check_field(self, "l2", self.l2 == AUTO or (is_finite(self.l2) and self.l2 >= 0),
                    f"a finite number ≥ 0 or {AUTO!r}")
        object.__setattr__(self, "l2_grid", check_grid(self.l2_grid))
        check_field(self, "state_mode", self.state_mode in (*STATE_MODES, AUTO), f"one of {(*STATE_MODES, AUTO)}")
        check_field(self, "objective", self.objective in OBJECTIVES, f"one of {OBJECTIVES}")
        object.__setattr__(self, "reservoir_search", check_search(self.reservoir_search))
        check_field(self, "washout", self.washout == AUTO or is_count(self.washout, 0), f"an integer ≥ 0 or {AUTO!r}")
        check_field(self, "readout_bias", isinstance(self.readout_bias, bool), "True or False")
        check_field(self, "raw_inputs", isinstance(self.raw_inputs, bool) or self.raw_inputs == AUTO,
                    f"True, False or {AUTO!r}")
        if self.raw_inputs is True and self.privacy.secure_aggregation and self.privacy.secure_range is None:
            raise ValueError("ReadoutConfig.raw_inputs (--raw-inputs) with secure aggregation needs "
                             "--secure-range: the derived range bounds states in [−1, 1], not the raw inputs.")
        bound = self.privacy.dp_max_steps
        if bound is not None and bound <= self.washout:
            raise ValueError(f"--dp-max-steps {bound}: a training sequence cut to {bound} steps keeps no state after "
                             f"--washout {self.washout}; give --dp-max-steps above the washout.")

    @property
    def seed(self) -> int:
        """The run's seed: the reservoir's."""
        return self.reservoir.seed


def _check_unclipped_inputs(config: ReadoutConfig) -> None:
    """Refuses the inputs beside the states with DP where the statistics are harvested unclipped (their DP
    sensitivity holds for rows of norm ≤ √N_F, which states in [−1, 1] meet and inputs need not)."""
    if config.raw_inputs is True and config.privacy.dp_requested:
        raise ValueError(f"{type(config).__name__}.raw_inputs (--raw-inputs) with DP: this algorithm's statistics "
                         "are harvested unclipped and the inputs are not bounded like states; drop one of them "
                         "(incfed clips every row inside TFF).")


def _check_subrounds(config: Any) -> None:
    size = config.subround_size
    check_field(config, "subround_size", size is None or is_count(size, 1), "None or an integer ≥ 1")
    if size is not None and config.privacy.requested:
        raise ValueError(f"{type(config).__name__}.subround_size (--subround-size) does not combine with the privacy "
                         "settings (--secure-*/--dp-*); drop one of them.")


@dataclasses.dataclass(frozen=True)
class ExactReadoutConfig(ReadoutConfig):
    """The exact ridge readout's runs (``centralized``, ``incfed``): :class:`ReadoutConfig` and what the model keeps.

    Attributes:
        keep_stats: keep the aggregate ridge statistics (A, B, n, clients; IncFed eqs. 8–9) with the saved model,
            so that ``incfed --add-to`` can extend it with new clients; under DP the statistics the mechanism
            released, never the raw sums.
    """

    keep_stats: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field(self, "keep_stats", isinstance(self.keep_stats, bool), "True or False")


@dataclasses.dataclass(frozen=True)
class IncFedConfig(ExactReadoutConfig):
    """IncFed / FedRR (IncFed eqs. 6–10).

    Attributes:
        add_to: a run folder (or its ``model/`` folder) saved with ``keep_stats``: this run's training clients'
            statistics are added to the kept ones and the readout re-solved (IncFed eq. 10), the model IncFed
            trains on both runs' clients together. The reservoir, state mode and washout are the saved model's
            (a differing setting is refused), λ the saved one unless a number is given; the model keeps the
            summed statistics.
        backend: ``auto`` (default: :attr:`resolved_backend`), ``tff`` (a TFF computation) or
            ``numpy`` (the plain numpy path).
        l2_per_client: each client adds λI to its B_c (IncFed eq. 7: the server's λ is C·λ).
        subround_size: stream the training clients through TFF in subrounds of this many
            (:mod:`tff_esn.closed_form.streaming`); ``None``: all in one computation.
    """

    backend: str = dataclasses.field(default="auto", metadata={"choices": INCFED_BACKENDS})
    l2_per_client: bool = False
    subround_size: int | None = None
    add_to: str | None = dataclasses.field(default=None, metadata={"metavar": "DIR"})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field(self, "backend", self.backend in INCFED_BACKENDS, f"one of {INCFED_BACKENDS}")
        check_field(self, "add_to", self.add_to is None or (isinstance(self.add_to, str) and self.add_to != ""),
                    "None or a run folder saved with --keep-stats")
        _check_subrounds(self)
        if self.subround_size is not None and self.backend == "numpy":
            raise ValueError("IncFedConfig.subround_size (--subround-size) streams the clients through TFF; "
                             "use backend='tff' (drop --backend numpy).")

    @property
    def resolved_backend(self) -> str:
        """``backend``, with ``auto`` resolved to ``tff`` where only TFF reaches (privacy settings, streaming
        subrounds) and to ``numpy`` elsewhere (the same readout, without TFF's copies of the statistics)."""
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
        _check_unclipped_inputs(self)


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
        _check_unclipped_inputs(self)


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
        check_field(self, "backend", self.backend in BACKENDS, f"one of {BACKENDS}")
        check_field(self, "rounds", is_count(self.rounds, 1), "an integer ≥ 1")
        check_field(self, "l2_scale", self.l2_scale in L2_SCALES, f"one of {L2_SCALES}")
        check_field(self, "l2_scale", self.l2_scale == "absolute" or self.readout_bias or self.privacy.dp_requested,
                    "absolute without the readout bias (--l2-scale state reads Σ s and n from its row of B)")
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
    """Whether a closed-form run executes TFF computations: the ``tff`` backend, privacy settings or subrounds."""
    backend = getattr(config, "resolved_backend", getattr(config, "backend", "numpy"))
    return (backend == "tff" or config.privacy.requested
            or getattr(config, "subround_size", None) is not None)


def streams_clients(config: ReadoutConfig) -> bool:
    """Whether an exact-sum run (centralized, incfed, fedavg-ridge) streams its training clients: nothing chosen on
    validation data (no carved folds to keep) and, for incfed, the numpy path or TFF's subrounds."""
    if chooses(config) or config.privacy.requested:
        return False
    backend = getattr(config, "resolved_backend", "numpy")
    return backend == "numpy" or getattr(config, "subround_size", None) is not None


OWN_DATA = {"state_mode": AUTO, "bias_scaling": 1.0, "l2": AUTO, "objective": "balanced_accuracy",
            "reservoir_search": ("leaky", "spectral_radius", "input_scaling")}
"""The own-data state selection both families share: λ, the state mode and the reservoir's scaling chosen on the
validation data."""
CLOSED_FORM_OWN_DATA = {**OWN_DATA, "raw_inputs": AUTO, "reservoir_search": SEARCHABLE}
"""The closed form's own-data defaults: :data:`OWN_DATA`, the inputs beside the states and the reservoir's size
chosen too."""
SERIES_RESERVOIR = {"units": 500, "state_mode": "all", "washout": 100, "bias_scaling": 1.0}
SERIES = {**SERIES_RESERVOIR, "l2": AUTO}
"""Its defaults on a generated series (per-step forecasting): every state after a washout of 100
steps, a 500-unit reservoir with a bias, λ chosen on the validation client."""


def centralized_cost(raw_floats: Sequence[int]) -> CommunicationCost:
    """Centralized training: each client uploads its raw inputs (mean over clients), nothing down."""
    return CommunicationCost((Phase("centralized", sum(raw_floats) / len(raw_floats), 0, 1, 4),))


def incfed_cost(n_features: int, n_outputs: int) -> CommunicationCost:
    """IncFed §III: up N_F² + N_F·N_Y, down N_Y·N_F."""
    w = readout_floats(n_features, n_outputs)
    return CommunicationCost((Phase("incfed", n_features**2 + w, w),))


def fedavg_ridge_cost(n_features: int, n_outputs: int) -> CommunicationCost:
    """IncFed §II-B: up and down N_Y·N_F."""
    w = readout_floats(n_features, n_outputs)
    return CommunicationCost((Phase("fedavg-ridge", w, w),))


def rls_cost(n_features: int, n_outputs: int) -> CommunicationCost:
    """Sequential RLS: each client receives ``(W, P)`` and passes them on, N_F² + N_Y·N_F each way."""
    state = n_features**2 + readout_floats(n_features, n_outputs)
    return CommunicationCost((Phase("rls", state, state),))


def partial_incfed_cost(k: int, n_features: int, n_outputs: int) -> CommunicationCost:
    """Thesis §B.3: up k(N_Y + N_F) (= k(1 + N_x) for one output), down N_Y·N_F."""
    return CommunicationCost((Phase("partial-incfed", k * (n_outputs + n_features),
                                    readout_floats(n_features, n_outputs)),))


def pfedrr_cost(selected: Sequence[int], n_features: int, n_outputs: int) -> CommunicationCost:
    """pFedRR eq. 2: up N_Y·N_F + N_F + |S_c|(|S_c| − 1), averaged over clients; down N_Y·N_F."""
    w = readout_floats(n_features, n_outputs)
    up = sum(w + n_features + s * (s - 1) for s in selected) / len(selected)
    return CommunicationCost((Phase("pfedrr", up, w),))


def fedip_cost(rounds: int, units: int, n_features: int, n_outputs: int) -> CommunicationCost:
    """FedIP Alg. 1: ``rounds`` rounds of (g, b), 2·N_R float32 each way, then one IncFed round."""
    ip = Phase("fedip", 2 * units, 2 * units, rounds, bytes_per_float=4)
    return CommunicationCost((ip,)) + incfed_cost(n_features, n_outputs)


def ensemble_cost(clients: int, n_features: int, n_outputs: int) -> CommunicationCost:
    """Prediction ensemble: up one readout N_Y·N_F, down all C members' readouts."""
    w = readout_floats(n_features, n_outputs)
    return CommunicationCost((Phase("ensemble", w, clients * w),))


def _register(name: str, config: type, run: str, cost: Any, help: str, **entry: Any) -> None:
    """Registers a closed-form algorithm with the family's defaults; ``entry`` adds or replaces registry fields."""
    register_algorithm(name, config, "tff_esn.closed_form." + run, communication=cost, help=help,
                       **{"ragged": True, "tff": runs_tff, "tasks": TASK_KINDS, "own_data": CLOSED_FORM_OWN_DATA,
                          **entry})


_register("centralized", ExactReadoutConfig, "centralized:run_centralized", centralized_cost,
          "centralized ESN: ridge readout on the pooled training clients (IncFed eq. 3)", pooled=True,
          series_data=SERIES, streamed=streams_clients)
_register("incfed", IncFedConfig, "incfed:run_incfed", incfed_cost,
          "IncFed/FedRR: exact federated ridge readout via summed statistics (IncFed §III)", series_data=SERIES,
          streamed=streams_clients,
          privacy=dataclasses.replace(STATISTICS, covers="the readout statistics (A, B, n)"))
_register("fedavg-ridge", ReadoutConfig, "fedavg_ridge:run_fedavg_ridge", fedavg_ridge_cost,
          "FedAvg of local ridge readouts weighted by local sizes (IncFed eq. 5)", series_data=SERIES,
          streamed=streams_clients)
_register("rls", ReadoutConfig, "rls:run_rls", rls_cost,
          "online ridge readout: recursive least squares passed from client to client (= centralized)",
          series_data=SERIES, tff=False)
_register("partial-incfed", PartialIncFedConfig, "partial_incfed:run_partial_incfed", partial_incfed_cost,
          "Partial IncFed: k important/random columns of A_c, B_c (thesis appendix B)",
          privacy=dataclasses.replace(LOCAL_STATISTICS, covers=(
              "the masked statistics (A_c*, B_c*, n_c) of eq. B.16; under secure aggregation each client "
              "completes/zero-fills its own and uploads them dense; under DP each client noises its full "
              "(A_c, B_c, n_c) before masking or completing")))
_register("pfedrr", PFedRRConfig, "pfedrr:run_pfedrr", pfedrr_cost,
          "pFedRR: importance-sparsified B_c (I-), with FedRR and R-pFedRR compared (pFedRR §2)",
          privacy=dataclasses.replace(LOCAL_STATISTICS, covers=(
              "the uploads (A_c D_c, B̃_c, n_c) of I-pFedRR, R-pFedRR and FedRR (three secure sums); under secure "
              "aggregation B̃_c is uploaded dense (zeros outside the selection); under DP each client noises its "
              "full (A_c, B_c, n_c) before ranking and masking")))
_register("fedip", FedIPConfig, "fedip:run_fedip", fedip_cost,
          "FedIP: federated intrinsic plasticity rounds on (g, b), then IncFed (FedIP Alg. 1)",
          privacy=dataclasses.replace(IP_STATISTICS, covers="FedIP's (Δg, Δb) rounds and the readout statistics "
                                                            "(A, B, n)"))
_register("ensemble", ReadoutConfig, "heterogeneous:run_ensemble", ensemble_cost,
          "different reservoir per client; size-weighted ensemble of local readouts")
_register("alignment", AlignmentConfig, "heterogeneous:run_alignment", incfed_cost,
          "different reservoirs interpolated toward a shared one with weight α, then IncFed",
          own_data={**CLOSED_FORM_OWN_DATA, "alpha": AUTO})
