"""Sensitivity of every Gaussian mechanism, checked on random data sets (hypothesis).

Adding or removing one unit — a record (one sequence) for the closed-form statistics, a
client for FedIP's (Δg, Δb) and FedAvg/FedCurv's uploads — moves the clipped quantity by at
most the sensitivity the mechanism's noise is scaled to, so that noise / sensitivity is the
noise multiplier z the accountant composes:

* closed-form ``(A, B, n)`` (IncFed, FedIP's readout; pFedRR / Partial IncFed per client):
  record-level, Δ = (m·C, m·C², m), noise z·√3·Δ_j per block;
* FedIP's clipped (Δg, Δb): client-level, Δ = C, noise z·C on the sum;
* FedAvg's clipped update: client-level, Δ = C, noise z·C on the sum;
* FedCurv's joint (update, (u_b, v_b)): client-level, Δ = √2·C, noise z·√2·C on both sums.

The learning mechanisms run through the TFF aggregators the runs build
(:meth:`~tff_esn.privacy.learning.LearningPrivacy.aggregation`) with z = 0, so their output is
the clipped sum itself.
"""

import functools
import math

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tff_esn.esn.ridge_tf import ridge_products
from tff_esn.privacy.dp_stats import GaussianStats, clip_rows
from tff_esn.privacy.dp_fedip import GaussianUpdates
from tff_esn.privacy.learning import CURVATURE_PARTS, LearningPrivacy

SLOW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAST = settings(max_examples=60, deadline=None)
TRAINABLE = ((4, 1), (1,))


def _stats(records, clip: float, n_classes: int):
    """(A, B, n) of the clipped rows of ``records`` (each (states (m, F), labels (m,))) by the harvest's function."""
    states = np.concatenate([r[0] for r in records])
    targets = np.eye(n_classes)[np.concatenate([r[1] for r in records])]
    a, b = ridge_products(tf.constant(states), tf.constant(targets), readout_bias=True,
                          clip=functools.partial(clip_rows, clip=clip))
    return np.asarray(a), np.asarray(b), float(len(states))


@FAST
@given(seed=st.integers(0, 2**31 - 1), records=st.integers(2, 6), m=st.integers(1, 4), features=st.integers(1, 5),
       n_classes=st.integers(2, 4), clip=st.floats(0.05, 4.0), scale=st.floats(0.01, 10.0))
def test_one_record_moves_the_clipped_statistics_by_at_most_the_sensitivity(seed, records, m, features, n_classes,
                                                                             clip, scale):
    rng = np.random.default_rng(seed)
    data = [(rng.normal(0, scale, (m, features)), rng.integers(0, n_classes, m)) for _ in range(records)]
    a, b, n = _stats(data, clip, n_classes)
    a0, b0, n0 = _stats(data[1:], clip, n_classes)  # record 0 removed
    mech = GaussianStats(1.3, 1e-5, clip, m, model="local")
    d_a, d_b, d_n = mech.sensitivities
    tol = 1 + 1e-9
    assert np.linalg.norm(a - a0) <= d_a * tol
    assert np.linalg.norm(b - b0) <= d_b * tol
    assert np.linalg.norm(np.triu(b - b0)) <= d_b * tol  # the noise is drawn on B's upper triangle
    assert abs(n - n0) <= d_n
    joint = math.sqrt((np.linalg.norm(a - a0) / d_a) ** 2 + (np.linalg.norm(b - b0) / d_b) ** 2 + ((n - n0) / d_n) ** 2)
    assert joint <= math.sqrt(3) * tol
    for stddevs in (mech.client_stddevs(records), GaussianStats(1.3, 1e-5, clip, m).sum_stddevs(records)):
        np.testing.assert_allclose(np.array(stddevs) / (math.sqrt(3) * np.array(mech.sensitivities)), 1.3)


@FAST
@given(seed=st.integers(0, 2**31 - 1), clients=st.integers(2, 8), units=st.integers(1, 6),
       clip=st.floats(0.01, 3.0), scale=st.floats(0.001, 10.0))
def test_one_client_moves_fedips_clipped_update_sum_by_at_most_c(seed, clients, units, clip, scale):
    rng = np.random.default_rng(seed)
    mech = GaussianUpdates(0.9, 1e-5, clip, clients)
    updates = [np.asarray(mech.clip_update(tf.constant(rng.normal(0, scale, 2 * units)))) for _ in range(clients)]
    assert np.linalg.norm(np.sum(updates, 0) - np.sum(updates[1:], 0)) <= clip * (1 + 1e-9)
    assert math.isclose(mech.stddev_on_mean * clients / clip, 0.9)


def _records(rng, clients: int, scale: float):
    return [tuple(rng.normal(0, scale, shape).astype(np.float32) for shape in TRAINABLE) for _ in range(clients)]


def _summed(process, records, m: int) -> np.ndarray:
    output = process.next(process.initialize(), records)
    return np.concatenate([np.ravel(t) for t in output.result]) * m


def _value_type():
    return tff.types.tensorflow_to_type(tuple(tf.TensorSpec(s, tf.float32) for s in TRAINABLE))


@SLOW
@given(seed=st.integers(0, 2**31 - 1), clients=st.integers(1, 4), clip=st.floats(0.05, 2.0),
       scale=st.floats(0.01, 5.0))
def test_one_client_moves_fedavgs_private_update_sum_by_at_most_c(seed, clients, clip, scale):
    rng = np.random.default_rng(seed)
    m = clients + 1
    privacy = LearningPrivacy(noise_multiplier=0.0, clip=clip)
    process = privacy.aggregation(m, curvature=False).model.create(_value_type())
    records = _records(rng, m, scale)
    change = _summed(process, records, m) - _summed(process, records[1:], m)
    assert np.linalg.norm(change) <= clip * (1 + 1e-5)
    assert math.isclose(LearningPrivacy(noise_multiplier=0.7, clip=clip).noise_stddev(1) / clip, 0.7)


@SLOW
@given(seed=st.integers(0, 2**31 - 1), clients=st.integers(1, 4), clip=st.floats(0.05, 2.0),
       scale=st.floats(0.01, 5.0), curvature_scale=st.floats(0.01, 50.0))
def test_one_client_moves_fedcurvs_joint_release_by_at_most_root2_c(seed, clients, clip, scale, curvature_scale):
    """The update and (u_b, v_b) through the model and curvature aggregators of one FedCurv run."""
    rng = np.random.default_rng(seed)
    m = clients + 1
    aggregation = LearningPrivacy(noise_multiplier=0.0, clip=clip).aggregation(m, curvature=True)
    model = aggregation.model.create(_value_type())
    curvature_type = tff.types.tensorflow_to_type({"u": tuple(tf.TensorSpec(s, tf.float32) for s in TRAINABLE),
                                                   "v": tuple(tf.TensorSpec(s, tf.float32) for s in TRAINABLE)})
    curvature = aggregation.curvature.create(curvature_type)
    updates = _records(rng, m, scale)
    pairs = [{"u": tuple(np.abs(t) for t in u), "v": v}
             for u, v in zip(_records(rng, m, curvature_scale), _records(rng, m, curvature_scale))]

    def curvature_sum(values):
        out = curvature.next(curvature.initialize(), values).result
        return np.concatenate([np.ravel(t) for part in ("u", "v") for t in out[part]])

    d_update = _summed(model, updates, m) - _summed(model, updates[1:], m)
    d_curvature = curvature_sum(pairs) - curvature_sum(pairs[1:])
    assert np.linalg.norm(d_update) <= clip * (1 + 1e-5) and np.linalg.norm(d_curvature) <= clip * (1 + 1e-5)
    joint = math.hypot(np.linalg.norm(d_update), np.linalg.norm(d_curvature))
    sensitivity = math.sqrt(CURVATURE_PARTS) * clip
    assert joint <= sensitivity * (1 + 1e-5)
    assert math.isclose(LearningPrivacy(noise_multiplier=0.7, clip=clip).noise_stddev(CURVATURE_PARTS) / sensitivity,
                        0.7)
