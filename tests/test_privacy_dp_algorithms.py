"""DP of pFedRR, Partial IncFed (each client's own noise) and FedIP's (g, b) rounds: noise scale,
ε against dp_accounting, and noise multiplier 0 = the non-private run."""

import json

import dp_accounting
import numpy as np
import pytest
import tensorflow as tf

from tff_esn.registry.algorithms import check_privacy, get_algorithm
from tff_esn.cli import main
from tff_esn.closed_form.fedip import IPConfig, fedip_tff
from tff_esn.privacy.config import PrivacyConfig
from tff_esn.privacy.dp_stats import GaussianStats
from tff_esn.privacy.dp_fedip import GaussianUpdates
from tff_esn.privacy.dp_local_stats import local_noisy_stats
from tff_esn.esn.ridge import RidgeStats

from closed_form_data import random_dataset
from test_closed_form_cli import FAST, fake_sources  # noqa: F401 (fixture)
from test_privacy_secure_algorithms import WEIGHTS

F = 40  # features; the default clip √F


def _big_stats(clients: int = 3) -> list[RidgeStats]:
    """Statistics whose B (1e6·I) lies far above any eigenvalue floor: the floor leaves B + noise as is."""
    return [RidgeStats(np.zeros((3, F)), 1e6 * np.eye(F), 50, 1, True) for _ in range(clients)]


def test_local_noise_has_the_configured_scale_and_a_fixed_seed():
    dp = GaussianStats(0.7, 1e-5, np.sqrt(F), states_per_record=2, model="local", seed=11)
    stats = _big_stats()
    noisy, raised = local_noisy_stats(stats, dp)
    sa, sb, _ = dp.client_stddevs(3)
    assert (sa, sb) == pytest.approx((0.7 * np.sqrt(3) * 2 * np.sqrt(F), 0.7 * np.sqrt(3) * 2 * F))
    a = np.concatenate([s.A.ravel() for s in noisy])
    b = np.concatenate([(s.B - 1e6 * np.eye(F))[np.triu_indices(F)] for s in noisy])
    # 360 and 2460 N(0, σ²) draws: std within 4 standard errors (σ/√(2n)), mean within 4 σ/√n
    assert np.std(a) == pytest.approx(sa, rel=4 / np.sqrt(2 * a.size)) and abs(a.mean()) < 4 * sa / np.sqrt(a.size)
    assert np.std(b) == pytest.approx(sb, rel=4 / np.sqrt(2 * b.size)) and abs(b.mean()) < 4 * sb / np.sqrt(b.size)
    assert raised == 0 and all(np.allclose(s.B, s.B.T) for s in noisy)
    assert not np.allclose(noisy[0].A, noisy[1].A)  # each client its own draw
    again, _ = local_noisy_stats(stats, dp)
    np.testing.assert_array_equal(again[0].A, noisy[0].A)


def test_local_noise_floors_each_client_b_and_refuses_a_central_model_or_a_small_clip():
    stats = [RidgeStats(np.zeros((2, F)), np.eye(F), 5, 1, True)]
    dp = GaussianStats(1.0, 1e-5, np.sqrt(F), 1, model="local")
    noisy, raised = local_noisy_stats(stats, dp)
    assert raised > 0 and np.linalg.eigvalsh(noisy[0].B).min() >= dp.client_floor(1, F) * (1 - 1e-9)
    with pytest.raises(ValueError, match="--dp-model local"):  # the boundary: the run's privacy check
        check_privacy(get_algorithm("partial-incfed"), PrivacyConfig(dp_epsilon=1.0))
    with pytest.raises(ValueError, match="omit --dp-clip"):
        local_noisy_stats(stats, GaussianStats(1.0, 1e-5, 1.0, 1, model="local"))


def test_fedip_update_noise_has_the_configured_scale():
    dp = GaussianUpdates(1.5, 1e-5, clip=0.4, clients=4, seed=2)
    zeros = tf.zeros([20000], tf.float64)
    first, second = dp.noisy_mean(zeros, 0).numpy(), dp.noisy_mean(zeros, 1).numpy()
    assert np.std(first) == pytest.approx(1.5 * 0.4 / 4, rel=0.03) and abs(np.corrcoef(first, second)[0, 1]) < 0.05
    np.testing.assert_array_equal(first, dp.noisy_mean(zeros, 0).numpy())
    assert np.linalg.norm(dp.clip_update(tf.constant(np.full(8, 3.0)))) == pytest.approx(0.4)


def test_fedip_without_noise_and_clip_equals_the_plain_rounds():
    """z = 0 and a clip no update reaches: the noisy-mean path is FedIP's mean (equal client sizes)."""
    clients = list(random_dataset(n_clients=3, seed=5, sizes=[6, 6, 6]).clients.values())
    cfg = IPConfig(sigma=0.2, eta=0.01, epochs=1, batch_size=3)
    plain = fedip_tff(WEIGHTS, clients, cfg, 2)[0]
    private, _ = fedip_tff(WEIGHTS, clients, cfg, 2, dp=GaussianUpdates(0.0, 1e-5, clip=1e6, clients=3))
    np.testing.assert_allclose(private.gain, plain.gain, rtol=0, atol=1e-6)  # float32 (g, b), another sum order
    np.testing.assert_allclose(private.bias, plain.bias, rtol=0, atol=1e-6)
    noisy, _ = fedip_tff(WEIGHTS, clients, cfg, 2, dp=GaussianUpdates(1.0, 1e-5, clip=0.05, clients=3))
    assert np.abs(noisy.gain - plain.gain).max() > 1e-3


def _epsilon(z: float, releases: int) -> float:
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), releases))
    return accountant.get_epsilon(1e-5)


@pytest.mark.parametrize("algorithm", ["pfedrr", "partial-incfed", "fedip"])
def test_dp_runs_report_the_accountants_epsilon_and_z0_is_the_plain_run(
        fake_sources, tmp_path, algorithm):  # noqa: F811
    extra = ["--rounds", "2", "--ip-epochs", "1"] if algorithm == "fedip" else []
    model = [] if algorithm == "fedip" else ["--dp-model", "local"]

    def run(name, *flags):
        assert main(["run", algorithm, "--out", str(tmp_path / name), *FAST, *extra, *flags]) == 0
        return json.loads((tmp_path / name / "metrics.json").read_text())

    private = run("eps", "--dp-epsilon", "2", *model)
    section = private["privacy"]
    releases = 3 if algorithm == "fedip" else 1
    assert section["epsilon"] == pytest.approx(2.0, abs=1e-4)
    assert section["epsilon"] == pytest.approx(_epsilon(section["noise_multiplier"], releases), rel=1e-9)
    assert section["rounds"] == releases and section["delta"] == 1e-5
    if algorithm == "fedip":
        assert section["ip_rounds"]["noise_multiplier"] == section["noise_multiplier"]
        assert section["ip_rounds"]["epsilon"] == pytest.approx(_epsilon(section["noise_multiplier"], 2), rel=1e-9)
        return
    assert section["model"] == "local" and section["psd"]["eigenvalues_raised"] > 0
    plain, zero = run("plain"), run("z0", "--dp-noise-multiplier", "0", *model)
    assert zero["privacy"]["epsilon_infinite"]
    assert "train" not in zero and zero["privacy"]["private"] is False  # withheld under DP; z = 0 is no privacy
    for group in ("val", "test"):
        assert zero[group] == plain[group]
