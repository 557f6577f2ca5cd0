"""The empirical ε lower bound: below the claim with secret noise, above it with a known noise seed."""

import math

import numpy as np
import pytest
from scipy import stats

from tff_esn.privacy import empirical_audit as ea

DELTA = 1e-5


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (250, 500), (1, 1000)])
def test_clopper_pearson_is_scipys_exact_interval(k, n):
    want = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    np.testing.assert_allclose(ea.clopper_pearson(k, n, 0.1), (want.low, want.high), rtol=1e-9, atol=1e-12)


def test_the_bound_of_a_perfect_and_of_a_useless_test():
    perfect = ea.epsilon_lower_bound(500, 0, 500, DELTA)
    lo, _ = ea.clopper_pearson(500, 500, 0.025)
    _, hi = ea.clopper_pearson(0, 500, 0.025)
    assert perfect == pytest.approx(math.log((lo - DELTA) / hi)) and perfect > 4.5
    assert ea.epsilon_lower_bound(250, 250, 500, DELTA) == 0.0
    assert ea.epsilon_lower_bound(0, 500, 500, DELTA) == pytest.approx(perfect)  # the other side of the test


def test_gaussian_samples_give_a_bound_below_their_exact_epsilon():
    """A Gaussian mechanism with μ = 1 (its exact ε at δ=1e-5 is ≈ 4.3): the audit stays below."""
    rng = np.random.default_rng(3)
    result = ea.audit(lambda world, t: np.array([world + rng.normal()]), 2000, DELTA, direction=np.array([1.0]))
    assert 0 < result.epsilon_lower_bound < 2.0


@pytest.mark.parametrize("make", [ea.incfed_neighbours, ea.fedavg_neighbours], ids=["incfed", "fedavg"])
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_secret_noise_keeps_the_bound_below_the_claim(make, epsilon):
    case = make(epsilon, DELTA)
    assert case.claimed_epsilon == pytest.approx(epsilon, rel=1e-4)
    result = ea.audit_neighbours(case, 300, DELTA)
    assert result.epsilon_lower_bound < epsilon


@pytest.mark.parametrize("make", [ea.incfed_neighbours, ea.fedavg_neighbours], ids=["incfed", "fedavg"])
def test_a_known_noise_seed_is_flagged_as_not_private(make):
    """The same --dp-seed on both datasets: the noise cancels, the outputs never overlap."""
    case = make(4.0, DELTA, dp_seed=11)
    result = ea.audit_neighbours(case, 700, DELTA)
    assert result.true_positives == result.trials and result.false_positives == 0
    assert result.epsilon_lower_bound > 4.0


@pytest.mark.slow
@pytest.mark.parametrize("make", [ea.incfed_neighbours, ea.fedavg_neighbours], ids=["incfed", "fedavg"])
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_many_trials_keep_the_bound_below_the_claim_and_flag_the_known_seed(make, epsilon):
    assert ea.audit_neighbours(make(epsilon, DELTA), 4000, DELTA).epsilon_lower_bound < epsilon
    assert ea.audit_neighbours(make(epsilon, DELTA, dp_seed=3), 4000, DELTA).epsilon_lower_bound > epsilon
