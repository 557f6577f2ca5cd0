"""TFF's DP and secure aggregators of FedAvg/FedCurv, routed by :class:`LearningAggregation`.

DP (client-level): ``DifferentiallyPrivateFactory``, fixed or adaptive clip, unweighted mean, seeded noise
(:class:`SeededGaussianSumQuery`); FedCurv's ``(u_b, v_b)`` join the update's release (sensitivity √2·C);
the training metrics are withheld. Secure: ``tff.learning.secure_aggregator``.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
from collections.abc import Sequence

import dp_accounting
import tensorflow as tf
import tensorflow_privacy as tfp
from tensorflow_federated.python.aggregators.differential_privacy import adaptive_clip_noise_params

from tff_esn.privacy import accounting, coverage, sampling
from tff_esn.privacy.config import LEARNING, NO_PRIVACY, PrivacySupport
from tff_esn.runtime import load_tff

tff = load_tff()

CURVATURE_PARTS = 2  # a FedCurv record: the update Δw and the pair (u_b, v_b), each clipped to C


class SeededGaussianSumQuery(tfp.GaussianSumQuery):
    """``tfp.GaussianSumQuery`` (clip to L2 norm C, N(0, stddev²) noise on the sum), stateless noise from seed pair
    ``(seed, stream)``."""

    _GlobalState = collections.namedtuple("_GlobalState", ["l2_norm_clip", "stddev", "seed"])

    def __init__(self, l2_norm_clip: float, stddev: float, seed: int, stream: int = 0):
        super().__init__(l2_norm_clip, stddev)
        self._seed, self._stream = int(seed), int(stream)

    def make_global_state(self, l2_norm_clip, stddev, seed=None):
        seed = tf.constant([self._seed, self._stream], tf.int64) if seed is None else seed
        return self._GlobalState(tf.cast(l2_norm_clip, tf.float32), tf.cast(stddev, tf.float32), seed)

    @staticmethod
    def split_seed(seed, sample_state):
        """Seeds of one release: one per leaf of ``sample_state``, then the next state's seed."""
        return tf.random.experimental.stateless_split(seed, len(tf.nest.flatten(sample_state)) + 1)

    def get_noised_result(self, sample_state, global_state):
        leaves = tf.nest.flatten(sample_state)
        seeds = self.split_seed(global_state.seed, sample_state)
        noised = [v + tf.cast(tf.random.stateless_normal(tf.shape(v), seeds[i], stddev=global_state.stddev), v.dtype)
                  for i, v in enumerate(leaves)]
        event = dp_accounting.GaussianDpEvent(global_state.stddev / global_state.l2_norm_clip)
        return (tf.nest.pack_sequence_as(sample_state, noised), global_state._replace(seed=seeds[-1]), event)


class SeededQuantileEstimatorQuery(tfp.QuantileEstimatorQuery):
    """``tfp.QuantileEstimatorQuery`` (Andrew et al. 2021, Alg. 1) with its below-estimate count noised by
    :class:`SeededGaussianSumQuery` (sensitivity 0.5, std ``below_estimate_stddev``)."""

    def __init__(self, initial_estimate: float, target_quantile: float, learning_rate: float,
                 below_estimate_stddev: float, expected_num_records: float, geometric_update: bool, seed: int,
                 stream: int):
        self._seed, self._stream = int(seed), int(stream)
        super().__init__(initial_estimate, target_quantile, learning_rate, below_estimate_stddev,
                         expected_num_records, geometric_update)

    def _construct_below_estimate_query(self, below_estimate_stddev, expected_num_records):
        count = SeededGaussianSumQuery(0.5, below_estimate_stddev, self._seed, self._stream)
        return tfp.NormalizedQuery(count, denominator=expected_num_records)


class SeededQuantileAdaptiveClipSumQuery(tfp.QuantileAdaptiveClipSumQuery):
    """``tfp.QuantileAdaptiveClipSumQuery`` (clip C_t, noise ``z_v·C_t``; C_t tracks a quantile of update norms,
    Andrew et al. 2021 eq. 3) with sum noise from stream 0 and count noise from stream 1 of ``seed``."""

    def __init__(self, initial_l2_norm_clip: float, noise_multiplier: float, target_unclipped_quantile: float,
                 learning_rate: float, clipped_count_stddev: float, expected_num_records: float,
                 geometric_update: bool, seed: int):
        super().__init__(initial_l2_norm_clip, noise_multiplier, target_unclipped_quantile, learning_rate,
                         clipped_count_stddev, expected_num_records, geometric_update)
        self._sum_query = SeededGaussianSumQuery(initial_l2_norm_clip, noise_multiplier * initial_l2_norm_clip,
                                                 seed, stream=0)
        self._quantile_estimator_query = SeededQuantileEstimatorQuery(
            initial_l2_norm_clip, target_unclipped_quantile, learning_rate, clipped_count_stddev,
            expected_num_records, geometric_update, seed, stream=1)

    def get_noised_result(self, sample_state, global_state):
        """tfp's release; the new sum state (rebuilt there for the new clip) keeps the split seed."""
        noised, state, event = super().get_noised_result(sample_state, global_state)
        next_seed = SeededGaussianSumQuery.split_seed(global_state.sum_state.seed, sample_state.sum_state)[-1]
        return noised, state._replace(sum_state=state.sum_state._replace(seed=next_seed)), event


def seeded_adaptive_query(noise_multiplier: float, clients_per_round: float, seed: int,
                          initial_l2_norm_clip: float = 0.1, target_unclipped_quantile: float = 0.5,
                          learning_rate: float = 0.2, clipped_count_stddev: float | None = None,
                          ) -> tfp.NormalizedQuery:
    """``DifferentiallyPrivateFactory.gaussian_adaptive``'s query with seeded noise: same arguments, defaults,
    multipliers (value noise ``(z^-2 − (2σ_b)^-2)^-½``), mean over ``clients_per_round``."""
    m = float(clients_per_round)
    value_noise_multiplier, clipped_count_stddev = adaptive_clip_noise_params(noise_multiplier, m,
                                                                              clipped_count_stddev)
    query = SeededQuantileAdaptiveClipSumQuery(initial_l2_norm_clip, value_noise_multiplier,
                                               target_unclipped_quantile, learning_rate, clipped_count_stddev,
                                               m, geometric_update=True, seed=seed)
    return tfp.NormalizedQuery(query, denominator=m)


@dataclasses.dataclass(frozen=True)
class LearningPrivacy:
    """DP (multiplier ``z``, clip C, ``adaptive``) and/or ``secure`` aggregation of FedAvg/FedCurv updates; ε at
    ``delta``; ``seed`` draws noise and sampling (``seed_known``: not private); checked by :class:`PrivacyConfig`."""

    noise_multiplier: float | None = None
    clip: float = 0.1
    adaptive: bool = False
    secure: bool = False
    delta: float = 1e-5
    seed: int = 0
    seed_known: bool = False

    @property
    def dp(self) -> bool:
        return self.noise_multiplier is not None

    def noise_stddev(self, parts: int = 1) -> float:
        """``z·√parts·C``: per-coordinate noise std of a sum of records of ``parts`` pieces clipped to C."""
        return float(self.noise_multiplier) * math.sqrt(parts) * self.clip

    def query(self, clients_per_round: int, parts: int = 1) -> tfp.NormalizedQuery:
        """The update DP query: seeded Gaussian sum (std :meth:`noise_stddev`) or :func:`seeded_adaptive_query`."""
        z, m = float(self.noise_multiplier), float(clients_per_round)
        if self.adaptive:
            return seeded_adaptive_query(z, m, self.seed, initial_l2_norm_clip=self.clip,
                                         clipped_count_stddev=max(0.05 * m, z))
        return tfp.NormalizedQuery(SeededGaussianSumQuery(self.clip, self.noise_stddev(parts), self.seed),
                                   denominator=m)

    def curvature_query(self) -> SeededGaussianSumQuery:
        """DP query of FedCurv's ``(u_b, v_b)`` sum (fixed clip; joint record's second part), noise from stream 2."""
        return SeededGaussianSumQuery(self.clip, self.noise_stddev(CURVATURE_PARTS), self.seed, stream=2)

    def aggregation(self, clients_per_round: int, *, curvature: bool) -> LearningAggregation:
        """What FedAvg (``curvature=False``) or FedCurv's client values go through."""
        return LearningAggregation(self, clients_per_round, curvature)

    def sampling(self, clients_per_round: int, clients: int) -> sampling.ClientSampling:
        """How the run picks its clients (:func:`tff_esn.privacy.sampling.client_sampling`)."""
        return sampling.client_sampling(self.dp, clients_per_round, clients, self.seed_known)

    def round_event(self, clients_per_round: int, clients: int) -> accounting.RoundEvent:
        """The DP release of one round: z, clip C and the sampling rate the accountant uses (1 unless Poisson)."""
        scheme = self.sampling(clients_per_round, clients)
        return accounting.RoundEvent(float(self.noise_multiplier), float(self.clip),
                                     scheme.rate if scheme.amplified else 1.0)

    def sections(self, rounds: int, clients_per_round: int, clients: int, support: PrivacySupport = LEARNING, *,
                 curvature: bool = False, own_client_work: bool = False,
                 events: Sequence[accounting.RoundEvent] | None = None, calibrated: dict | None = None) -> dict:
        """``privacy``/``secure_aggregation`` metrics sections: coverage declaration and the RDP ε of the rounds'
        ``events`` as they ran (default: ``rounds`` of :meth:`round_event`); ``calibrated``: what z was set for."""
        scheme = self.sampling(clients_per_round, clients)
        declared = coverage.declaration(support, secure=self.secure, dp=self.dp,
                                        own_client_work=own_client_work, selection_published=scheme.published)
        privacy = dict(NO_PRIVACY, **declared)
        if self.dp:
            query = ("gaussian_adaptive, with the seeded SeededQuantileAdaptiveClipSumQuery (client-level)"
                     if self.adaptive else "gaussian_fixed, with the seeded SeededGaussianSumQuery (client-level)"
                     + (" on the joint record (update, (u, v))" if curvature else ""))
            events = list(events) if events is not None else [self.round_event(clients_per_round, clients)] * rounds
            z, q = events[-1].noise_multiplier, events[-1].sampling_rate
            unsampled = [dataclasses.replace(e, sampling_rate=1.0) for e in events]
            privacy = accounting.PrivacyReport(
                mechanism="tff.aggregators.DifferentiallyPrivateFactory as " + query, clip=self.clip,
                noise_multiplier=z, epsilon=accounting.composed_epsilon(events, self.delta), delta=self.delta,
                rounds=len(events), sampling_rate=q,
                details={"privacy_unit": "one client's upload per round", "noise_seeded": True,
                         "sampling": scheme.section(), "accountant": accounting.describe(q),
                         "composed_events": accounting.grouped_events(events),
                         **({} if calibrated is None else {"noise_calibrated_for": calibrated}),
                         "epsilon_without_amplification": _finite(accounting.composed_epsilon(unsampled,
                                                                                              self.delta)),
                         "sensitivity": f"√{CURVATURE_PARTS}·C (update and (u, v) each clipped to C)" if curvature
                         else "C",
                         "noise_stddev_on_sum": None if self.adaptive else self.noise_stddev(
                             CURVATURE_PARTS if curvature else 1),
                         **declared},
                dp_seed=self.seed if self.seed_known else None).to_dict()
        secure = {"enabled": self.secure}
        if self.secure:
            secure["factory"] = ("DifferentiallyPrivateFactory(GaussianSumQuery, SecureSumFactory(clip))" if self.dp
                                 else "tff.learning.secure_aggregator(zeroing=True, clipping=True)")
        return {"privacy": privacy, "secure_aggregation": secure}


@dataclasses.dataclass(frozen=True)
class LearningAggregation:
    """How FedAvg/FedCurv client values reach the server: update mean (``model``), FedCurv's ``(u_b, v_b)`` sum
    (``curvature``), metrics; ``privacy`` ``None``: TFF's weighted mean and plain sums."""

    privacy: LearningPrivacy | None = None
    clients_per_round: int = 1
    fedcurv: bool = False

    @property
    def dp(self) -> bool:
        return self.privacy is not None and self.privacy.dp

    @property
    def secure(self) -> bool:
        return self.privacy is not None and self.privacy.secure

    @property
    def model_query(self) -> tfp.NormalizedQuery | None:
        """The DP query of the model updates (``None`` without DP)."""
        return self.privacy.query(self.clients_per_round, CURVATURE_PARTS if self.fedcurv else 1) if self.dp else None

    @property
    def curvature_query(self) -> SeededGaussianSumQuery | None:
        """The DP query of FedCurv's ``(u_b, v_b)`` (``None`` without DP or for FedAvg)."""
        return self.privacy.curvature_query() if self.dp and self.fedcurv else None

    @property
    def model(self) -> tff.aggregators.AggregationFactory | None:
        """TFF's model aggregator: weighted secure sum (secure only), DP (unweighted), ``None``: mean."""
        inner = tff.aggregators.SecureSumFactory(float(self.privacy.clip)) if self.secure else None
        if self.dp:
            return tff.aggregators.DifferentiallyPrivateFactory(self.model_query, inner)
        return tff.learning.secure_aggregator(zeroing=True, clipping=True, weighted=True) if self.secure else None

    @property
    def curvature(self) -> tff.aggregators.UnweightedAggregationFactory | None:
        """TFF's sum of FedCurv's ``(u_b, v_b)`` (``None``: FedAvg): DP, secure or plain."""
        if not self.fedcurv:
            return None
        if self.dp:
            inner = tff.aggregators.SecureSumFactory(float(self.privacy.clip)) if self.secure else None
            return tff.aggregators.DifferentiallyPrivateFactory(self.curvature_query, inner)
        if self.secure:
            return tff.aggregators.SecureSumFactory(tff.aggregators.PrivateQuantileEstimationProcess.no_noise(
                initial_estimate=50.0, target_quantile=0.95, learning_rate=1.0, multiplier=2.0,
                secure_estimation=True))
        return tff.aggregators.SumFactory()

    def metrics_aggregator(self):
        """Withheld under DP, secure-summed under secure aggregation, else ``sum_then_finalize``."""
        if self.dp:
            return withheld_metrics
        return tff.learning.metrics.secure_sum_then_finalize if self.secure else tff.learning.metrics.sum_then_finalize

    def count_sum(self, flags):
        """Sum of the clients' int32 0/1 ``flags``, public by design, secure-summed under secure aggregation."""
        marked = coverage.public(flags, "accepted_clients")
        return tff.federated_secure_sum_bitwidth(marked, 1) if self.secure else tff.federated_sum(marked)


def fold_sum(values: list, like=None):
    """``Σ_k values[k]`` per leaf as TFF's runtime folds it from zero in client order; zeros like ``like``
    for no client (a Poisson DP round may have none)."""
    return functools.reduce(lambda a, b: tf.nest.map_structure(tf.add, a, b), values,
                            tf.nest.map_structure(tf.zeros_like, values[0] if values else like))


def dp_release(query: tfp.SumAggregationDPQuery, records: list, state, like=None) -> tuple:
    """``(result, new state)`` of one DP release of ``query`` on ``records``, in ``DifferentiallyPrivateFactory``'s order."""
    params = query.derive_sample_params(state)
    clipped = [query.preprocess_record(params, r) for r in records]
    summed = fold_sum(clipped) if clipped else query.initial_sample_state(like)
    result, new_state, _ = query.get_noised_result(summed, state)
    return result, new_state


def _finite(value: float) -> float | None:
    """``value``, or ``None`` for ∞ (JSON has no ∞)."""
    return None if math.isinf(value) else value


def secure_clipped(measurements) -> int:
    """The values a ``SecureSumFactory`` clipped to its range, found in an aggregator's ``measurements``."""
    if isinstance(measurements, dict):
        return sum(int(v) if k.startswith("secure_") and k.endswith("_clipped_count") else secure_clipped(v)
                   for k, v in measurements.items())
    return 0


def withheld_metrics(metric_finalizers, local_unfinalized_metrics_type=None):
    """A metrics aggregator that releases nothing (DP runs: the clients send no training metrics)."""
    del metric_finalizers, local_unfinalized_metrics_type

    @tff.federated_computation
    def aggregate(client_metrics):
        del client_metrics
        return tff.federated_value(collections.OrderedDict(), tff.SERVER)

    return aggregate


def lower_secure_process(process: tff.learning.templates.LearningProcess) -> tff.learning.templates.LearningProcess:
    """``process`` with TFF's reference bodies for the secure intrinsics (same types)."""

    def lower(comp):
        lowered = tff.backends.test.replace_secure_intrinsics_with_bodies(comp)
        return tff.framework.ConcreteComputation.with_type(lowered, comp.type_signature)

    return tff.learning.templates.LearningProcess(
        lower(process.initialize), lower(process.next), process.get_model_weights, process.set_model_weights,
        get_hparams_fn=process.get_hparams, set_hparams_fn=process.set_hparams)
