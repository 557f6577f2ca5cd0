"""TFF's DP and secure aggregators as the model aggregator of FedAvg/FedCurv.

* DP (client-level: a client's whole update is the privacy unit): TFF's
  ``tff.aggregators.DifferentiallyPrivateFactory`` — ``gaussian_fixed`` (each client's
  update clipped to L2 norm C, Gaussian noise of std ``z·C`` on the sum, divided by the
  clients per round; McMahan et al. 2018) or ``gaussian_adaptive`` (C follows the median
  update norm by private quantile estimation; Andrew et al. 2021). The mean is unweighted
  (each client counts once, as the sensitivity requires). ε over ``rounds`` rounds with
  ``m`` of ``N`` clients sampled per round: :func:`tff_esn.privacy.accounting.epsilon` with
  sampling rate ``q = m/N`` (the Poisson-sampling RDP bound, the usual approximation for
  sampling ``m`` without replacement). With adaptive clipping ``z`` is TFF's *effective*
  noise multiplier: the clipped-count noise is set to ``max(0.05·m, z)`` so that the value
  noise is ``z·(1 − ¼)^-½ ≈ 1.155·z`` and the pair composes to ``z``.
* DP + secure aggregation: the clipped records are summed with ``SecureSumFactory`` (each
  coordinate of a clipped record lies in [−C, C]) before the server adds the noise
  (fixed clipping only).
* Secure aggregation alone: ``tff.learning.secure_aggregator`` (weighted mean, adaptive
  zeroing and clipping, ``SecureSumFactory`` on the weighted values).

TFF's native runtime does not run the secure intrinsics; :func:`lower_secure_process`
replaces them by TFF's reference bodies as :mod:`tff_esn.privacy.aggregation` does.
"""

from __future__ import annotations

import dataclasses

import tensorflow_federated as tff

from tff_esn.privacy import accounting
from tff_esn.privacy.dp_stats import check_clip


@dataclasses.dataclass(frozen=True)
class LearningPrivacy:
    """DP and/or secure aggregation of FedAvg/FedCurv's model updates.

    Attributes:
        noise_multiplier: ``z`` ≥ 0, or ``None`` for no DP.
        clip: update norm bound C (initial C with ``adaptive``).
        adaptive: adaptive clipping (median update norm) instead of a fixed C.
        secure: secure aggregation of the (clipped) updates.
        delta: δ of the reported ε.
    """

    noise_multiplier: float | None = None
    clip: float = 0.1
    adaptive: bool = False
    secure: bool = False
    delta: float = 1e-5

    def __post_init__(self) -> None:
        if self.noise_multiplier is not None:
            accounting.check_noise_multiplier(self.noise_multiplier)
        check_clip(self.clip)
        accounting.check_delta(self.delta)
        if self.adaptive and self.noise_multiplier is None:
            raise ValueError("--dp-adaptive-clip needs --dp-epsilon or --dp-noise-multiplier.")
        if self.adaptive and self.secure:
            raise ValueError("secure aggregation with DP needs a fixed clip (SecureSumFactory bounds each "
                             "coordinate by C); drop --dp-adaptive-clip or --secure-aggregation.")

    @property
    def dp(self) -> bool:
        return self.noise_multiplier is not None

    def factory(self, clients_per_round: int) -> tff.aggregators.AggregationFactory:
        """The model aggregator (weighted for secure-only, unweighted with DP)."""
        if not self.dp:
            return tff.learning.secure_aggregator(zeroing=True, clipping=True, weighted=True)
        z, m = float(self.noise_multiplier), float(clients_per_round)
        if self.adaptive:
            return tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive(
                z, m, initial_l2_norm_clip=self.clip, clipped_count_stddev=max(0.05 * m, z))
        if not self.secure:
            return tff.aggregators.DifferentiallyPrivateFactory.gaussian_fixed(z, m, self.clip)
        import tensorflow_privacy as tfp

        query = tfp.NormalizedQuery(tfp.GaussianSumQuery(l2_norm_clip=self.clip, stddev=self.clip * z), denominator=m)
        return tff.aggregators.DifferentiallyPrivateFactory(query, tff.aggregators.SecureSumFactory(float(self.clip)))

    def sections(self, rounds: int, clients_per_round: int, clients: int) -> dict:
        """``privacy`` and ``secure_aggregation`` sections of ``metrics.json``."""
        from tff_esn.privacy.options import NO_PRIVACY

        q = min(1.0, clients_per_round / clients)
        privacy = dict(NO_PRIVACY, covers="the model updates (readout kernel and bias)")
        if self.dp:
            kind = "adaptive" if self.adaptive else "fixed"
            privacy = accounting.PrivacyReport(
                mechanism=f"tff.aggregators.DifferentiallyPrivateFactory.gaussian_{kind} (client-level)",
                clip=self.clip, noise_multiplier=float(self.noise_multiplier),
                epsilon=accounting.epsilon(self.noise_multiplier, self.delta, rounds, q), delta=self.delta,
                rounds=rounds, sampling_rate=q,
                details={"privacy_unit": "one client's update per round", "accountant": "dp_accounting RDP, "
                         "Poisson-sampled Gaussian composed over rounds", "covers": privacy["covers"]}).to_dict()
        secure = {"enabled": self.secure}
        if self.secure:
            secure["factory"] = ("DifferentiallyPrivateFactory(GaussianSumQuery, SecureSumFactory(clip))" if self.dp
                                 else "tff.learning.secure_aggregator(zeroing=True, clipping=True)")
        return {"privacy": privacy, "secure_aggregation": secure}


def lower_secure_process(process: tff.learning.templates.LearningProcess) -> tff.learning.templates.LearningProcess:
    """``process`` with TFF's reference bodies for the secure intrinsics (same types)."""

    def lower(comp):
        lowered = tff.backends.test.replace_secure_intrinsics_with_bodies(comp)
        return tff.framework.ConcreteComputation.with_type(lowered, comp.type_signature)

    return tff.learning.templates.LearningProcess(
        lower(process.initialize), lower(process.next), process.get_model_weights, process.set_model_weights,
        get_hparams_fn=process.get_hparams, set_hparams_fn=process.set_hparams)
