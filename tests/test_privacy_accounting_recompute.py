"""The ε of metrics.json recomputed with dp_accounting (RDP and PLD) from the scheme it names: never below."""

import pytest

import dp_accounting

from tff_esn.privacy import accounting
from tff_esn.privacy.dp_stats import GaussianStats
from tff_esn.privacy.learning import LearningPrivacy
from tff_esn.privacy.sampling import ALL, FIXED_PUBLIC, POISSON, client_sampling


def _event(section: dict) -> dp_accounting.DpEvent:
    """The event of the scheme a privacy section names, built here from its fields alone."""
    z, rounds = section["noise_multiplier"], section["rounds"]
    sampling = section.get("sampling", {"scheme": ALL, "rate": 1.0})
    event = dp_accounting.GaussianDpEvent(z)
    if sampling["scheme"] == POISSON:
        event = dp_accounting.PoissonSampledDpEvent(sampling["rate"], event)
    else:
        assert sampling["scheme"] == ALL, sampling
    return dp_accounting.SelfComposedDpEvent(event, rounds)


def _recomputed(section: dict) -> tuple[float, float]:
    rdp = dp_accounting.rdp.RdpAccountant()
    rdp.compose(_event(section))
    pld = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3)
    pld.compose(_event(section))
    return rdp.get_epsilon(section["delta"]), pld.get_epsilon(section["delta"])


@pytest.mark.parametrize("clients_per_round,clients,rounds,z", [
    (2, 4, 2, 0.8), (5, 7, 5, 1.1), (3, 30, 20, 0.9), (10, 10, 3, 1.5), (1, 50, 40, 1.0)])
def test_fedavg_epsilon_is_the_accountants_for_the_named_scheme(clients_per_round, clients, rounds, z):
    privacy = LearningPrivacy(noise_multiplier=z, clip=0.5)
    section = privacy.sections(rounds, clients_per_round, clients)["privacy"]
    assert section["sampling"]["scheme"] == (ALL if clients_per_round == clients else POISSON)
    assert section["sampling"]["selection_published"] == (clients_per_round == clients)
    assert "RdpAccountant" in section["accountant"]
    rdp, pld = _recomputed(section)
    assert section["epsilon"] == pytest.approx(rdp, rel=1e-9)
    assert section["epsilon"] >= pld * (1 - 1e-3)  # the RDP conversion is looser than the PLD
    without = accounting.epsilon(z, 1e-5, rounds)
    assert section["epsilon_without_amplification"] == pytest.approx(without) and without >= section["epsilon"]


def test_calibrated_fedavg_meets_the_target_under_both_accountants():
    q, rounds = 5 / 7, 5
    z = accounting.noise_multiplier_for(2.0, 1e-5, rounds, q)
    section = LearningPrivacy(noise_multiplier=z, clip=0.1).sections(rounds, 5, 7)["privacy"]
    rdp, pld = _recomputed(section)
    assert section["epsilon"] == pytest.approx(2.0, rel=1e-4) and rdp <= 2.0 * (1 + 1e-6) and pld <= 2.0


@pytest.mark.parametrize("z,model", [(1.0, "central"), (4.05, "local"), (0.6, "distributed")])
def test_incfed_epsilon_is_the_accountants_for_one_release(z, model):
    section = GaussianStats(z, 1e-5, 3.0, 4, model=model).report(3, 9, 0).to_dict()
    assert section["rounds"] == 1 and section["sampling_rate"] == 1.0
    rdp, pld = _recomputed(section)
    assert section["epsilon"] == pytest.approx(rdp, rel=1e-9) and section["epsilon"] >= pld * (1 - 1e-3)


def test_sampling_schemes():
    assert client_sampling(True, 5, 7, seed_known=False).section() == {
        "scheme": POISSON, "rate": 5 / 7, "selection_secret": True, "selection_published": False,
        "amplification_by_sampling": True}
    assert client_sampling(True, 5, 7, seed_known=True).secret is False
    assert client_sampling(False, 5, 7, seed_known=False).scheme == FIXED_PUBLIC
    assert client_sampling(True, 9, 7, seed_known=False).scheme == ALL


@pytest.mark.parametrize("call,match", [
    (lambda: accounting.noise_multiplier_for(1e12, 1e-5), r"calibrates ε in \["),
    (lambda: accounting.noise_multiplier_for(1e-9, 1e-5, 3, 0.5), r"calibrates ε in \["),
    (lambda: accounting.epsilon(1e7, 1e-5, 100, 0.1), r"\[1e-06, 10000\]"),
    (lambda: accounting.check_delta(1.0), r"\(0, 1\)"),
])
def test_the_accountants_limits_are_refused_with_the_valid_range(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_huge_epsilon_inside_the_range_calibrates_without_a_traceback():
    low, high = accounting.epsilon_range(1e-5)
    z = accounting.noise_multiplier_for(high / 2, 1e-5)
    assert accounting.epsilon(z, 1e-5) <= high / 2 * (1 + 1e-6) and low < 0.01
