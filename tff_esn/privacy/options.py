"""The privacy flags of ``tff-esn run`` and what they become for each algorithm family.

``--secure-aggregation [--secure-bits B] [--secure-range R]`` sums the closed-form
statistics with :mod:`tff_esn.privacy.secure_sum` (FedAvg/FedCurv: TFF's
``SecureSumFactory`` inside the mean, :mod:`tff_esn.privacy.learning`).
``--dp-epsilon E`` or ``--dp-noise-multiplier Z`` (with ``--dp-delta``, ``--dp-clip``,
``--dp-model``; ``--dp-adaptive-clip`` for FedAvg/FedCurv) turns on the Gaussian mechanism.
Every ``metrics.json`` gets a ``privacy`` section (:data:`NO_PRIVACY` without DP).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from tff_esn.privacy import accounting
from tff_esn.privacy.aggregation import SecureRidgeSum, StatsAggregation
from tff_esn.privacy.dp_stats import MODELS, GaussianStats, check_clip, natural_clip, states_per_record
from tff_esn.privacy.dp_updates import GaussianUpdates
from tff_esn.privacy.secure_sum import FixedPoint, stats_bound

DEFAULT_SECURE_BITS = 48
NOISE_HEADROOM = 8.0  # client noise σ added to the default secure range: P(clip) < 1e-15 per coordinate
SUPPORTED = ("incfed", "fedip", "fedavg", "fedcurv", "pfedrr", "partial-incfed")
ROUNDING_MARGIN = 1e-6  # relative widening of a derived secure range that a client's value can attain
DEFAULT_IP_CLIP = 1.0
LOCAL_ONLY = ("pfedrr", "partial-incfed")  # data-dependent uploads: DP only with each client's own noise
NO_PRIVACY = {"mechanism": "none", "clip": None, "noise_multiplier": 0.0, "epsilon": None,
              "epsilon_infinite": True, "delta": None, "rounds": None, "sampling_rate": None}


def add_privacy_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("privacy (incfed, fedip, fedavg, fedcurv, pfedrr, partial-incfed; DP of pfedrr "
                                  "and partial-incfed: --dp-model local)")
    g.add_argument("--secure-aggregation", action="store_true",
                   help="sum the clients' updates with TFF's secure sum (fixed-point encoding)")
    g.add_argument("--secure-bits", type=int, default=DEFAULT_SECURE_BITS,
                   help="closed form: bit width of the secure sum; each client value gets bits − ⌈log₂ K⌉ "
                        "(default %(default)s)")
    g.add_argument("--secure-range", type=float, default=None,
                   help="closed form: values are clipped to ±R before encoding (default: the largest client's "
                        "state count, which bounds every entry of A, B, n, plus 8 σ of the clients' DP noise)")
    g.add_argument("--dp-epsilon", type=float, default=None, help="target ε of the Gaussian mechanism")
    g.add_argument("--dp-noise-multiplier", type=float, default=None,
                   help="noise multiplier z instead of --dp-epsilon (ε is then reported)")
    g.add_argument("--dp-delta", type=float, default=1e-5, help="δ (default %(default)s)")
    g.add_argument("--dp-clip", type=float, default=None,
                   help="closed form: state norm bound C (default √N_F: no state changes); FedAvg/FedCurv: the "
                        "clients' update norm bound (default 0.1; initial value with --dp-adaptive-clip)")
    g.add_argument("--dp-ip-clip", type=float, default=DEFAULT_IP_CLIP,
                   help="fedip: L2 norm bound of a client's (Δg, Δb) update per round (default %(default)s)")
    g.add_argument("--dp-model", choices=MODELS, default="central",
                   help="closed form: noise added by the server (central), by each client in full (local) or "
                        "in shares σ/√K (distributed; use with --secure-aggregation)")
    g.add_argument("--dp-seed", type=int, default=None,
                   help="seed of the DP noise (default: --seed; FedAvg/FedCurv: fixed clip only, TFF's adaptive "
                        "query stays unseeded)")
    g.add_argument("--dp-adaptive-clip", action="store_true",
                   help="FedAvg/FedCurv: adaptive clipping (median update norm) instead of a fixed clip")


def dp_requested(args: argparse.Namespace) -> bool:
    return getattr(args, "dp_epsilon", None) is not None or getattr(args, "dp_noise_multiplier", None) is not None


def privacy_requested(args: argparse.Namespace) -> bool:
    return dp_requested(args) or bool(getattr(args, "secure_aggregation", False))


def check_privacy_arguments(algorithm: str, args: argparse.Namespace) -> None:
    """``ValueError`` for privacy flags on an algorithm without privacy, or inconsistent flags."""
    if not privacy_requested(args):
        return
    if algorithm not in SUPPORTED:
        raise ValueError(f"{algorithm}: secure aggregation / DP are implemented for {', '.join(SUPPORTED)}; "
                         "drop the --secure-*/--dp-* flags.")
    if algorithm in LOCAL_ONLY and dp_requested(args) and args.dp_model != "local":
        raise ValueError(f"{algorithm}: a client's upload depends on its data through its mask / completion too, so "
                         "only each client noising its own statistics first is DP: add --dp-model local.")
    if algorithm in LOCAL_ONLY and dp_requested(args) and args.secure_aggregation and args.secure_range is None:
        raise ValueError(f"{algorithm}: the clients' noisy, floored and masked statistics have no derived bound for "
                         "the secure sum; give --secure-range R (values beyond ±R are clipped and counted).")
    if getattr(args, "backend", "tff") != "tff":
        raise ValueError("--backend numpy: secure aggregation and DP run inside the TFF computation; "
                         "use --backend tff.")
    if args.dp_epsilon is not None and args.dp_noise_multiplier is not None:
        raise ValueError("give either --dp-epsilon or --dp-noise-multiplier, not both.")
    if args.dp_epsilon is not None:
        accounting.check_epsilon(args.dp_epsilon)
    if args.dp_noise_multiplier is not None:
        accounting.check_noise_multiplier(args.dp_noise_multiplier)
    if dp_requested(args):
        accounting.check_delta(args.dp_delta)
    if args.dp_clip is not None:
        check_clip(args.dp_clip)
    check_clip(getattr(args, "dp_ip_clip", DEFAULT_IP_CLIP))
    learning = algorithm in ("fedavg", "fedcurv")
    if learning and (args.dp_model != "central" or args.secure_range is not None
                     or args.secure_bits != DEFAULT_SECURE_BITS):
        raise ValueError(f"{algorithm}: --dp-model, --secure-bits and --secure-range apply to the "
                         "closed-form statistics; FedAvg/FedCurv use TFF's DP and secure aggregators as they are.")
    if not learning and args.dp_adaptive_clip:
        raise ValueError(f"{algorithm}: --dp-adaptive-clip applies to fedavg/fedcurv (the closed form clips states "
                         "at --dp-clip).")


def noise_multiplier_from_args(args: argparse.Namespace, rounds: int = 1, sampling_rate: float = 1.0) -> float:
    """``--dp-noise-multiplier``, or the one that meets ``--dp-epsilon`` over the schedule."""
    if args.dp_noise_multiplier is not None:
        return accounting.check_noise_multiplier(args.dp_noise_multiplier)
    return accounting.noise_multiplier_for(args.dp_epsilon, args.dp_delta, rounds, sampling_rate)


def stats_aggregation_from_args(args: argparse.Namespace, n_features: int, steps: int,
                                client_sequences: Sequence[int], releases: int = 1) -> StatsAggregation | None:
    """The closed-form :class:`StatsAggregation` of the flags (``None``: plain IncFed).

    ``steps`` is the sequence length, ``client_sequences`` the training clients' sequence counts;
    ``--dp-epsilon`` is met over ``releases`` Gaussian releases of the same noise multiplier
    (FedIP: its rounds and the statistics).
    """
    if not privacy_requested(args):
        return None
    m = states_per_record(args.state_mode, steps, args.washout)
    dp = gaussian_stats_from_args(args, n_features, steps, releases)
    secure = None
    if args.secure_aggregation:
        bound = args.secure_range
        if bound is None:
            noise = max(dp.client_stddevs(len(client_sequences))) if dp is not None else 0.0
            bound = stats_bound([n * m for n in client_sequences]) + NOISE_HEADROOM * noise
        secure = FixedPoint(args.secure_bits, float(bound), len(client_sequences))
    return StatsAggregation(len(client_sequences), n_features, dp=dp, secure=secure)


def gaussian_updates_from_args(args: argparse.Namespace, clients: int, rounds: int) -> GaussianUpdates | None:
    """FedIP's DP on the (g, b) updates (``None`` without DP flags): clip ``--dp-ip-clip``, the
    noise multiplier that meets ``--dp-epsilon`` over ``rounds`` + 1 releases (the rounds and
    the readout statistics, :mod:`tff_esn.privacy.dp_updates`)."""
    if not dp_requested(args):
        return None
    return GaussianUpdates(noise_multiplier_from_args(args, rounds + 1), args.dp_delta, args.dp_ip_clip, clients,
                           seed=args.seed if args.dp_seed is None else args.dp_seed)


def gaussian_stats_from_args(args: argparse.Namespace, n_features: int, steps: int,
                             releases: int = 1) -> GaussianStats | None:
    """The Gaussian mechanism on ``(A, B, n)`` of the flags (``None`` without DP): IncFed's and
    FedIP's statistics, and each client's own statistics in pFedRR / Partial IncFed."""
    if not dp_requested(args):
        return None
    clip = natural_clip(n_features) if args.dp_clip is None else args.dp_clip
    return GaussianStats(noise_multiplier_from_args(args, releases), args.dp_delta, clip,
                         states_per_record(args.state_mode, steps, args.washout), model=args.dp_model,
                         seed=args.seed if args.dp_seed is None else args.dp_seed)


def secure_ridge_sum_from_args(args: argparse.Namespace, client_states: Sequence[int]) -> SecureRidgeSum | None:
    """The secure sum of pFedRR's / Partial IncFed's uploads (``None`` without ``--secure-aggregation``).

    ``client_states`` are the clients' state counts n_c. The default range ``max_c n_c`` bounds
    every entry of what they upload: pFedRR's masked ``(A_c D_c, B̃_c)`` and Partial IncFed's
    block/column masks are entries of ``(A_c, B_c)``, and the Nyström completion is the Gram
    matrix of the states projected onto a subspace, ``S_c P S_cᵀ`` and ``Y_c P S_cᵀ``
    (``P`` an orthogonal projection), whose entries are bounded by the products of row norms
    of ``S_c``, ``Y_c``: ``√n_c·√n_c`` (states in [−1, 1], one-hot targets). The bound is
    attained (the bias input's ``B_c`` diagonal is n_c), and a client's float arithmetic (the
    Nyström pseudo-inverse) lands a few ulps above it; the range is widened by
    :data:`ROUNDING_MARGIN` so such a value is not clipped (one was, on synthetic WESAD).
    """
    if not getattr(args, "secure_aggregation", False):
        return None
    bound = (stats_bound(list(client_states)) * (1 + ROUNDING_MARGIN) if args.secure_range is None
             else args.secure_range)
    return SecureRidgeSum(FixedPoint(args.secure_bits, float(bound), len(client_states)))


def stats_sections(agg: StatsAggregation | None, clipped: int, raised: int, *, covers: str) -> dict:
    """``privacy`` and ``secure_aggregation`` sections of a closed-form run."""
    privacy = dict(NO_PRIVACY)
    if agg is not None and agg.dp is not None:
        privacy = agg.dp.report(agg.clients, agg.n_features, raised if agg.noisy else 0).to_dict()
    privacy["covers"] = covers
    secure = {"enabled": False}
    if agg is not None and agg.secure is not None:
        secure = {"enabled": True, **agg.secure.to_dict(clipped)}
    return {"privacy": privacy, "secure_aggregation": secure}

