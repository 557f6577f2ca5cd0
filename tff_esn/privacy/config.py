"""Typed privacy settings: :class:`PrivacyConfig` (the ``--secure-*``/``--dp-*`` flags) and the
:class:`PrivacySupport` a registry entry declares. Imports neither TensorFlow nor ``dp_accounting``."""

from __future__ import annotations

import dataclasses

from tff_esn.common.validation import SEED_MAX, check_field, is_count, is_finite, is_seed

DEFAULT_SECURE_BITS = 48
DEFAULT_CLIENT_SEQUENCES = 2 ** 20
"""The public bound on a DP client's sequences that sets the secure sum's range by default (a coordinate's rounding
error is then ``K·R/L``, ``metrics.json``'s ``secure_aggregation.error_bound``)."""
MODELS = ("central", "local", "distributed")
DEFAULT_IP_CLIP = 1.0
NO_PRIVACY = {"mechanism": "none", "clip": None, "noise_multiplier": 0.0, "epsilon": None,
              "epsilon_infinite": True, "delta": None, "rounds": None, "sampling_rate": None}


CLIPS = (1e-6, 1e6)
"""The norm bounds C accepted: the noise std z·C (up to 1e4·1e6) and C² (B's sensitivity) stay far
inside float32 and float64."""


def _clip_ok(clip: float) -> bool:
    return is_finite(clip) and CLIPS[0] <= clip <= CLIPS[1]


@dataclasses.dataclass(frozen=True)
class PrivacyConfig:
    """Secure aggregation and differential privacy of one run (default: neither).

    Attributes:
        secure_aggregation: sum the clients' uploads with TFF's secure sum (fixed-point encoding).
        secure_bits: closed form: bit width of the secure sum (each client gets bits − ⌈log₂ K⌉).
        secure_range: closed form: values are clipped to ±R before encoding (``None``: a bound on a client's
            state count, which bounds every entry of A, B, n, plus 8 σ of the clients' DP noise — under DP
            ``dp_max_client_sequences`` × the states per record, else the largest client's state count).
        dp_epsilon: target ε of the Gaussian mechanism (``None``: no DP unless ``dp_noise_multiplier``).
        dp_noise_multiplier: noise multiplier z instead of ``dp_epsilon`` (ε is then reported).
        dp_delta: δ.
        dp_clip: closed form: state norm bound C (``None``: √N_F, no state changes); FedAvg/FedCurv:
            the clients' update norm bound (``None``: 0.1; initial value with dp_adaptive_clip).
        dp_model: closed form: noise added by the server (``central``), by each client in full
            (``local``) or in shares σ/√K (``distributed``; with secure aggregation).
        dp_ip_clip: FedIP: L2 norm bound of a client's (Δg, Δb) update per round.
        dp_seed: seed of the DP noise and secret client sampling for tests and debugging (``None``:
            a fresh secret seed from the OS's entropy, never written; given, the run is not private).
        dp_adaptive_clip: FedAvg/FedCurv: adaptive clipping instead of a fixed clip.
        dp_max_steps: closed form: the public bound N on a training sequence's steps under DP (state mode
            ``all``: a record adds N − washout states); longer training sequences are cut to their last N
            steps (``None``: the data's one sequence length; sequences of unequal length are refused).
        dp_max_client_sequences: closed form under DP with secure aggregation and no ``secure_range``: the public
            bound on a client's sequences that sets the secure sum's range (a client holding more has the values
            beyond the range clipped and counted); the training data's largest client is never read for it.
    """

    secure_aggregation: bool = False
    secure_bits: int = DEFAULT_SECURE_BITS
    secure_range: float | None = None
    dp_epsilon: float | None = None
    dp_noise_multiplier: float | None = None
    dp_delta: float = 1e-5
    dp_clip: float | None = None
    dp_ip_clip: float = DEFAULT_IP_CLIP
    dp_model: str = dataclasses.field(default="central", metadata={"choices": MODELS})
    dp_seed: int | None = None
    dp_adaptive_clip: bool = False
    dp_max_steps: int | None = None
    dp_max_client_sequences: int = DEFAULT_CLIENT_SEQUENCES

    def __post_init__(self) -> None:
        if self.dp_epsilon is not None and self.dp_noise_multiplier is not None:
            raise ValueError("PrivacyConfig: give either dp_epsilon (--dp-epsilon) or dp_noise_multiplier "
                             "(--dp-noise-multiplier), not both.")
        if self.dp_requested:
            from tff_esn.privacy import accounting  # dp_accounting: only when DP is asked for

            accounting.check_delta(self.dp_delta)
            if self.dp_epsilon is not None:
                accounting.check_epsilon_in_range(self.dp_epsilon, self.dp_delta)
            if self.dp_noise_multiplier is not None:
                accounting.check_noise_multiplier(self.dp_noise_multiplier)
        check_field(self, "dp_seed", self.dp_seed is None or is_seed(self.dp_seed),
                    f"None or an integer in [0, {SEED_MAX}]")
        bound = f"a finite norm bound in [{CLIPS[0]:g}, {CLIPS[1]:g}]"
        check_field(self, "dp_clip", self.dp_clip is None or _clip_ok(self.dp_clip), f"None or {bound}")
        check_field(self, "dp_ip_clip", _clip_ok(self.dp_ip_clip), bound)
        if self.dp_adaptive_clip and not self.dp_requested:
            raise ValueError("PrivacyConfig.dp_adaptive_clip (--dp-adaptive-clip) needs --dp-epsilon or "
                             "--dp-noise-multiplier.")
        check_field(self, "dp_max_steps", self.dp_max_steps is None or is_count(self.dp_max_steps, 1),
                    "None or an integer ≥ 1")
        if self.dp_max_steps is not None and not self.dp_requested:
            raise ValueError("PrivacyConfig.dp_max_steps (--dp-max-steps) bounds a DP record; it needs --dp-epsilon or "
                             "--dp-noise-multiplier.")
        check_field(self, "dp_max_client_sequences", is_count(self.dp_max_client_sequences, 1), "an integer ≥ 1")
        if self.dp_max_client_sequences != DEFAULT_CLIENT_SEQUENCES and not (
                self.dp_requested and self.secure_aggregation and self.secure_range is None):
            raise ValueError("PrivacyConfig.dp_max_client_sequences (--dp-max-client-sequences) sets the secure sum's "
                             "range under DP; it needs --dp-epsilon or --dp-noise-multiplier and --secure-aggregation, "
                             "without --secure-range.")
        if self.dp_adaptive_clip and self.secure_aggregation:
            raise ValueError("secure aggregation with DP needs a fixed clip (SecureSumFactory bounds each coordinate "
                             "by C); drop --dp-adaptive-clip or --secure-aggregation.")
        check_field(self, "dp_model", self.dp_model in MODELS, f"one of {MODELS}")
        if self.dp_model == "distributed" and not self.secure_aggregation:
            raise ValueError("PrivacyConfig.dp_model (--dp-model) distributed: each client adds a share σ/√K of the "
                             "noise, private only inside a secure sum; add --secure-aggregation (or use --dp-model "
                             "central/local).")
        check_field(self, "secure_bits", is_count(self.secure_bits, 1), "an integer ≥ 1")
        check_field(self, "secure_range", self.secure_range is None or (is_finite(self.secure_range)
                                                                          and self.secure_range > 0),
                    "None or a finite number > 0")

    @property
    def dp_requested(self) -> bool:
        return self.dp_epsilon is not None or self.dp_noise_multiplier is not None

    @property
    def requested(self) -> bool:
        return self.dp_requested or self.secure_aggregation

    def noise_multiplier(self, rounds: int = 1, sampling_rate: float = 1.0) -> float:
        """``dp_noise_multiplier``, or the one that meets ``dp_epsilon`` over the schedule."""
        from tff_esn.privacy import accounting

        if self.dp_noise_multiplier is not None:
            return accounting.check_noise_multiplier(self.dp_noise_multiplier)
        return accounting.noise_multiplier_for(self.dp_epsilon, self.dp_delta, rounds, sampling_rate)


@dataclasses.dataclass(frozen=True)
class PrivacySupport:
    """The privacy an algorithm implements (its registry entry's ``privacy``): the :class:`PrivacyConfig`
    ``settings`` it reads (any other is refused, with a reason from ``refused``), DP with each client's own
    noise only (``local_only``), the ``dp_backends``, what it ``covers``, whether clients send
    ``training_metrics`` and whether our client work counts the kept clients (``own_client_work``)."""

    settings: tuple[str, ...] = ()
    local_only: bool = False
    refused: tuple[tuple[str, str], ...] = ()
    dp_backends: tuple[str, ...] = ("tff",)
    covers: str = ""
    training_metrics: bool = False
    own_client_work: bool = False

    def __post_init__(self) -> None:
        unknown = sorted(set(self.settings) - {f.name for f in dataclasses.fields(PrivacyConfig)})
        if unknown:
            raise ValueError(f"PrivacySupport.settings: {unknown} are no PrivacyConfig fields.")

    def __bool__(self) -> bool:
        return bool(self.settings)


_DP = ("dp_epsilon", "dp_noise_multiplier", "dp_delta", "dp_clip", "dp_seed")
NONE = PrivacySupport()
"""No secure aggregation, no DP."""
STATISTICS = PrivacySupport(("secure_aggregation", "secure_bits", "secure_range", *_DP, "dp_model", "dp_max_steps",
                             "dp_max_client_sequences"))
"""Closed form: secure sum and Gaussian mechanism on the summed statistics (central, local or distributed)."""
LOCAL_STATISTICS = PrivacySupport(STATISTICS.settings, local_only=True)
"""Closed form with data-dependent uploads (masks, completions): DP with each client's own noise only."""
IP_STATISTICS = PrivacySupport((*STATISTICS.settings, "dp_ip_clip"))
"""FedIP: the closed form's statistics plus the clipped (Δg, Δb) updates of its rounds."""
LEARNING = PrivacySupport(("secure_aggregation", *_DP, "dp_adaptive_clip"), dp_backends=("tff", "sim"),
                          training_metrics=True)
"""FedAvg: TFF's DP (fixed or adaptive clip; TFF's aggregator or, on the ``sim`` backend, the same
DP query in one process) and secure-sum aggregators as they are."""
