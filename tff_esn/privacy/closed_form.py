"""What the privacy settings (:class:`~tff_esn.privacy.config.PrivacyConfig`) become for the closed form: the
secure sum of the statistics, the Gaussian mechanism and ``metrics.json``'s ``privacy`` section."""

from __future__ import annotations

from collections.abc import Sequence

from tff_esn.privacy import noise_seed
from tff_esn.privacy.aggregation import SecureRidgeSum, StatsAggregation
from tff_esn.privacy.config import NO_PRIVACY, PrivacyConfig, PrivacySupport
from tff_esn.privacy.coverage import declaration
from tff_esn.privacy.dp_stats import GaussianStats, natural_clip, states_per_record
from tff_esn.privacy.dp_fedip import GaussianUpdates
from tff_esn.privacy.secure_sum import FixedPoint, stats_bound

__all__ = ["gaussian_stats", "gaussian_updates", "secure_ridge_sum", "stats_aggregation", "stats_sections"]

NOISE_HEADROOM = 8.0  # client noise σ added to the default secure range: P(clip) < 1e-15 per coordinate
ROUNDING_MARGIN = 1e-6  # relative widening of a derived secure range that a client's value can attain


def stats_aggregation(privacy: PrivacyConfig, *, state_mode: str, washout: int, n_features: int,
                      steps: int, client_sequences: Sequence[int], releases: int = 1,
                      record_bound: str = "") -> StatsAggregation | None:
    """The closed-form :class:`StatsAggregation` of ``privacy`` (``None``: plain IncFed), ε met over ``releases``;
    ``steps`` is the public bound on a record's steps (``record_bound`` says where it comes from)."""
    if not privacy.requested:
        return None
    m = states_per_record(state_mode, steps, washout)
    dp = gaussian_stats(privacy, state_mode=state_mode, washout=washout, n_features=n_features,
                        steps=steps, releases=releases, record_bound=record_bound)
    secure = None
    if privacy.secure_aggregation:
        bound, source = privacy.secure_range, "--secure-range"
        if bound is None and dp is not None:  # public bounds only: the clients' sizes are training data
            cap = privacy.dp_max_client_sequences
            bound = cap * m + NOISE_HEADROOM * max(dp.client_stddevs(len(client_sequences)))
            source = (f"--dp-max-client-sequences {cap} × {m} states per sequence (every entry of a client's A, B, "
                      f"n) + {NOISE_HEADROOM:g} σ of a client's noise: public bounds, no statistic of the training "
                      "data")
        elif bound is None:
            bound, source = stats_bound([n * m for n in client_sequences]), "the largest training client's states"
        secure = FixedPoint(privacy.secure_bits, float(bound), len(client_sequences), source)
    return StatsAggregation(len(client_sequences), n_features, dp=dp, secure=secure)


def gaussian_updates(privacy: PrivacyConfig, *, clients: int, rounds: int) -> GaussianUpdates | None:
    """FedIP's DP on the (g, b) updates (``None`` without DP), met over ``rounds`` + 1 releases."""
    if not privacy.dp_requested:
        return None
    z = privacy.noise_multiplier(rounds + 1)
    noise_seed.warn_no_noise(z)
    return GaussianUpdates(z, privacy.dp_delta, privacy.dp_ip_clip, clients,
                           seed=noise_seed.mechanism_seed(privacy.dp_seed), seed_known=privacy.dp_seed is not None)


def gaussian_stats(privacy: PrivacyConfig, *, state_mode: str, washout: int, n_features: int,
                   steps: int, releases: int = 1, record_bound: str = "") -> GaussianStats | None:
    """The Gaussian mechanism on ``(A, B, n)`` of ``privacy`` (``None`` without DP), its noise seed secret; ``steps``
    is the public bound on a record's steps (``record_bound`` says where it comes from)."""
    if not privacy.dp_requested:
        return None
    clip = natural_clip(n_features) if privacy.dp_clip is None else privacy.dp_clip
    z = privacy.noise_multiplier(releases)
    noise_seed.warn_no_noise(z)
    return GaussianStats(z, privacy.dp_delta, clip, states_per_record(state_mode, steps, washout),
                         model=privacy.dp_model, seed=noise_seed.mechanism_seed(privacy.dp_seed),
                         seed_known=privacy.dp_seed is not None, record_bound=record_bound)


def secure_ridge_sum(privacy: PrivacyConfig, client_states: Sequence[int]) -> SecureRidgeSum | None:
    """Secure sum of pFedRR / Partial IncFed uploads, range ``--secure-range`` or, without DP, ``max_c n_c`` +
    :data:`ROUNDING_MARGIN` (``None``: not secure); under DP without ``--secure-range`` a ``ValueError`` (the
    clients' sizes are training data)."""
    if not privacy.secure_aggregation:
        return None
    if privacy.secure_range is not None:
        return SecureRidgeSum(FixedPoint(privacy.secure_bits, float(privacy.secure_range), len(client_states),
                                         "--secure-range"))
    if privacy.dp_requested:
        raise ValueError("secure aggregation under DP: the clients' noisy statistics have no public bound for the "
                         "secure sum; give --secure-range R (values beyond ±R are clipped and counted).")
    bound = stats_bound(list(client_states)) * (1 + ROUNDING_MARGIN)
    return SecureRidgeSum(FixedPoint(privacy.secure_bits, bound, len(client_states),
                                     "the largest training client's states"))


def stats_sections(agg: StatsAggregation | None, clipped: int, raised: int, support: PrivacySupport) -> dict:
    """``privacy`` and ``secure_aggregation`` sections of a closed-form run (what :func:`declaration` says)."""
    privacy = dict(NO_PRIVACY)
    if agg is not None and agg.dp is not None:
        privacy = agg.dp.report(agg.clients, agg.n_features, raised if agg.noisy else 0).to_dict()
    privacy.update(declaration(support, secure=agg is not None and agg.secure is not None,
                               dp=agg is not None and agg.dp is not None))
    secure = {"enabled": False}
    if agg is not None and agg.secure is not None:
        secure = {"enabled": True, **agg.secure.to_dict(clipped)}
    return {"privacy": privacy, "secure_aggregation": secure}

