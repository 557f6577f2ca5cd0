"""Secure aggregation of pFedRR's, Partial IncFed's and FedIP's sums: plain result within the bound."""

import json

import numpy as np
import pytest

from tff_esn.registry.algorithms import check_privacy, get_algorithm
from tff_esn.cli import main
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.partial_incfed import fit_partial_incfed, mask_stats, select_all
from tff_esn.closed_form.pfedrr import client_parts, fit_pfedrr
from tff_esn.closed_form.fedip import IPConfig, fedip_tff
from tff_esn.privacy.aggregation import SecureRidgeSum
from tff_esn.privacy.config import PrivacyConfig
from tff_esn.privacy.closed_form import secure_ridge_sum
from tff_esn.privacy.secure_sum import FixedPoint
from tff_esn.esn.ridge import RidgeStats

from closed_form_data import random_dataset
from test_closed_form_cli import FAST, fake_sources  # noqa: F401 (fixture)

WEIGHTS = ReservoirWeights.from_config(ReservoirConfig(units=10, leaky=0.7, seed=2), 3)


def _stats(seed: int, mode: str = "all") -> list[RidgeStats]:
    data = random_dataset(n_clients=4, seed=seed)
    harvester = Harvester(data, StateSpec(mode, 0, True))
    return [harvester.stats(WEIGHTS, c) for c in data.client_ids]


def _args(**kw) -> PrivacyConfig:
    return PrivacyConfig(**{"secure_aggregation": True, **kw})


def _uploads(stats: list[RidgeStats], algorithm: str, mask: str = "nystrom") -> list[RidgeStats]:
    if algorithm == "pfedrr":
        return [client_parts(s, 0.5, 0, i).important for i, s in enumerate(stats)]
    return [mask_stats(s, sel, mask) for s, sel in zip(stats, select_all(stats, 5, 0.3))]


@pytest.mark.parametrize("algorithm,mask", [("pfedrr", None), ("partial", "nystrom"), ("partial", "block")])
def test_secure_uploads_equal_the_plain_sum_within_the_bound_and_the_default_range_never_clips(algorithm, mask):
    stats = _stats(3)
    uploads = _uploads(stats, algorithm, mask)
    summer = secure_ridge_sum(_args(), [s.n for s in stats])
    secure, plain = summer(uploads), RidgeStats.sum(uploads)
    bound = summer.secure.error_bound()
    assert summer.clipped_values == 0 and summer.secure.bound == pytest.approx(max(s.n for s in stats), rel=2e-6)
    assert secure.n == plain.n and secure.clients == plain.clients == 4
    np.testing.assert_allclose(secure.A, plain.A, rtol=0, atol=bound)
    np.testing.assert_allclose(secure.B, plain.B, rtol=0, atol=bound)
    assert max(np.abs(secure.A - plain.A).max(), np.abs(secure.B - plain.B).max()) > 0  # quantized path


def test_secure_pfedrr_and_partial_readouts_match_the_plain_ones():
    stats = _stats(4, "mean")
    make = lambda: secure_ridge_sum(_args(), [s.n for s in stats])  # noqa: E731
    plain, secure = fit_pfedrr(stats, 0.5, 1e-2), fit_pfedrr(stats, 0.5, 1e-2, aggregate=make())
    for name in ("exact", "important", "random"):
        np.testing.assert_allclose(getattr(secure, name), getattr(plain, name), rtol=0, atol=1e-8)
    p_plain = fit_partial_incfed(stats, 6, 0.3, 1e-2)
    p_secure = fit_partial_incfed(stats, 6, 0.3, 1e-2, aggregate=make())
    np.testing.assert_allclose(p_secure.readout, p_plain.readout, rtol=0, atol=1e-8)


def test_values_beyond_the_range_are_clipped_and_counted():
    stats = _stats(3)
    uploads = _uploads(stats, "pfedrr")
    summer = SecureRidgeSum(FixedPoint(40, 5.0, 4))
    total = summer(uploads)
    expected = sum(int((np.abs(u.A) > 5).sum() + (np.abs(u.B) > 5).sum() + (u.n > 5)) for u in uploads)
    assert summer.clipped_values == expected > 0
    assert np.abs(total.B).max() <= 4 * 5.0 + summer.secure.error_bound()  # clipped, not wrapped


def test_bad_settings_give_clear_errors():
    with pytest.raises(ValueError, match="no bit per client"):
        secure_ridge_sum(_args(secure_bits=2), [10, 10, 10, 10, 10])
    with pytest.raises(ValueError, match="add --dp-model local"):
        check_privacy(get_algorithm("pfedrr"), _args(dp_epsilon=1.0))
    with pytest.raises(ValueError, match="give --secure-range"):
        check_privacy(get_algorithm("pfedrr"), _args(dp_epsilon=1.0, dp_model="local"))
    check_privacy(get_algorithm("pfedrr"), _args(dp_epsilon=1.0, dp_model="local", secure_range=1e5))
    check_privacy(get_algorithm("partial-incfed"), _args())


def test_secure_fedip_round_equals_plain_within_the_bound_and_counts_clips():
    data = random_dataset(n_clients=3, seed=5)
    clients = list(data.clients.values())
    cfg = IPConfig(sigma=0.2, eta=0.01, epochs=1, batch_size=3)
    plain = fedip_tff(WEIGHTS, clients, cfg, 1)[0]
    fp = FixedPoint(48, 64.0 * max(len(c) for c in clients), 3)
    secure, clipped = fedip_tff(WEIGHTS, clients, cfg, 1, fp)
    atol = fp.error_bound() / sum(len(c) for c in clients) + 2 * np.finfo(np.float32).eps * 2
    assert clipped == 0
    np.testing.assert_allclose(secure.gain, plain.gain, rtol=0, atol=atol)
    np.testing.assert_allclose(secure.bias, plain.bias, rtol=0, atol=atol)
    _, clipped = fedip_tff(WEIGHTS, clients, cfg, 2, FixedPoint(48, 0.5, 3))  # n_c·g_c > 0.5: all gains clip
    assert clipped >= 2 * 3 * WEIGHTS.units


@pytest.mark.parametrize("algorithm", ["pfedrr", "partial-incfed", "fedip"])
def test_run_with_secure_aggregation_reports_the_encoding(fake_sources, tmp_path, algorithm):  # noqa: F811
    extra = ["--rounds", "1", "--ip-epochs", "1"] if algorithm == "fedip" else []
    assert main(["run", algorithm, "--out", str(tmp_path), *FAST, *extra, "--secure-aggregation",
                 "--secure-bits", "40"]) == 0
    record = json.loads((tmp_path / "metrics.json").read_text())
    secure = record["secure_aggregation"]
    assert secure["enabled"] and secure["bits"] == 40 and secure["clipped_values"] == 0
    assert secure["error_bound"] > 0 and secure["range"][1] > 0
    assert record["privacy"]["mechanism"] == "none" and record["test"]["accuracy"] is not None
    if algorithm == "fedip":
        assert secure["rounds"]["clipped_values"] == 0 and secure["rounds"]["bits"] == 40
    else:  # the masked upload is sent dense under secure aggregation: IncFed's N_F² + N_Y·N_F floats
        assert record["communication"]["up_floats_per_client"] == 9 ** 2 + 3 * 9


def test_streamed_pfedrr_refuses_secure_aggregation(fake_sources, tmp_path, capsys):  # noqa: F811
    assert main(["run", "pfedrr", "--out", str(tmp_path), *FAST, "--subround-size", "2",
                 "--secure-aggregation"]) == 2
    assert "(--subround-size) does not combine with the privacy settings" in capsys.readouterr().err
