"""``tff-esn run`` privacy flags: metrics.json sections and clear usage errors."""

import json

import pytest

from tff_esn.registry import algorithms
from tff_esn.closed_form.configs import ReadoutConfig
from tff_esn.cli import main
from tff_esn.data.sequences import Split
from tff_esn.privacy import accounting
from tff_esn.privacy.config import NO_PRIVACY

from closed_form_data import random_dataset, toy_model
from test_closed_form_cli import FAST, fake_sources  # noqa: F401 (fixture)


def _metrics(tmp_path):
    return json.loads((tmp_path / "metrics.json").read_text())


def test_a_run_without_privacy_gets_a_none_privacy_section(monkeypatch):
    data = random_dataset(n_clients=4, seed=2)
    split = Split("s", data.client_ids[:2], (data.client_ids[2],), (data.client_ids[3],))
    sections = {"train": None, "val": None, "test": None, "communication": {}}
    monkeypatch.setattr(algorithms, "_REGISTRY", dict(algorithms.available_algorithms()))  # providers loaded first
    algorithms.register_algorithm("privacy-fake", ReadoutConfig, lambda d, s, a: {**sections, "model": toy_model(d)})
    record = algorithms.run_algorithm(algorithms.resolve_run("privacy-fake", data, config=ReadoutConfig()), data, split)
    assert record["privacy"] == NO_PRIVACY and record["privacy"] is not NO_PRIVACY


def test_incfed_with_dp_and_secure_aggregation_reports_both(fake_sources, tmp_path):  # noqa: F811
    args = ["run", "incfed", "--out", str(tmp_path), *FAST, "--dp-epsilon", "2", "--dp-delta", "1e-6",
            "--dp-model", "distributed", "--secure-aggregation", "--secure-bits", "40"]
    assert main(args) == 0
    record = _metrics(tmp_path)
    privacy, secure = record["privacy"], record["secure_aggregation"]
    assert privacy["epsilon"] == pytest.approx(2.0, rel=1e-3) and privacy["delta"] == 1e-6
    assert privacy["noise_multiplier"] == pytest.approx(accounting.noise_multiplier_for(2.0, 1e-6))
    assert privacy["model"] == "distributed" and privacy["rounds"] == 1 and privacy["sampling_rate"] == 1.0
    assert privacy["clip"] == pytest.approx(3.0)  # √(8 units + bias)
    assert privacy["psd"]["eigenvalues_raised"] >= 0 and privacy["psd"]["floor"] > 0
    assert secure["enabled"] and secure["bits"] == 40 and secure["client_bits"] == 38 and secure["clipped_values"] == 0
    assert record["test"]["accuracy"] is not None


@pytest.mark.parametrize("flags,message", [
    (["--dp-epsilon", "0"], "epsilon"),
    (["--dp-epsilon", "1", "--dp-delta", "1"], "delta"),
    (["--dp-noise-multiplier", "1", "--dp-clip", "0"], "clip"),
    (["--dp-epsilon", "1", "--dp-noise-multiplier", "1"], "either"),
    (["--dp-epsilon", "1", "--backend", "numpy"], "backend"),
    (["--dp-epsilon", "1", "--dp-adaptive-clip"], "adaptive"),
])
def test_bad_privacy_settings_exit_2(fake_sources, tmp_path, capsys, flags, message):  # noqa: F811
    assert main(["run", "incfed", "--out", str(tmp_path), *FAST, *flags]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "metrics.json").exists()


def test_fedcurv_with_adaptive_clipping_exits_2(fake_sources, tmp_path, capsys):  # noqa: F811
    """FedCurv's u, v have no adaptive-clip joint release: refused in one line, before any run."""
    assert main(["run", "fedcurv", "--out", str(tmp_path), "--dp-noise-multiplier", "1", "--dp-adaptive-clip"]) == 2
    assert "fedcurv with --dp-adaptive-clip" in capsys.readouterr().err
    assert not (tmp_path / "metrics.json").exists()


def test_a_secure_bit_width_too_small_for_the_clients_is_found_by_the_library(fake_sources, tmp_path):  # noqa: F811
    """The clients' count is known only inside the run: a ValueError with its traceback, not exit 2."""
    with pytest.raises(ValueError, match="no bit per client"):
        main(["run", "incfed", "--out", str(tmp_path), *FAST, "--secure-aggregation", "--secure-bits", "2"])


def test_privacy_flags_on_an_algorithm_without_privacy_exit_2(fake_sources, tmp_path, capsys):  # noqa: F811
    assert main(["run", "fedavg-ridge", "--out", str(tmp_path), *FAST, "--secure-aggregation"]) == 2
    assert "implemented for incfed" in capsys.readouterr().err
    assert main(["run", "pfedrr", "--out", str(tmp_path), *FAST, "--secure-aggregation", "--dp-epsilon", "1"]) == 2
    assert "add --dp-model local" in capsys.readouterr().err
