"""The typed library API under a thin CLI: configs validate themselves, flags map
to configs one to one, the CLI answers ``--help`` without TensorFlow, and only bad input is a
user error (exit 2, no traceback)."""

import dataclasses
import os
import subprocess
import sys

import pytest

from tff_esn.registry import algorithms
from tff_esn.registry.algorithms import check_privacy, get_algorithm
from tff_esn.cli import main
from tff_esn.closed_form.configs import (AlignmentConfig, FedIPConfig, IncFedConfig, IPConfig, PartialIncFedConfig,
                                         PFedRRConfig, ReadoutConfig)
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.federated.configs import FedAvgConfig, FedCurvConfig, ThesisCentralConfig, ThesisModelConfig
from tff_esn.privacy.config import PrivacyConfig


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    """``python -c code`` in a fresh process (PYTHONPATH kept, TF's log variable unset unless given)."""
    environ = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**environ, **env})


# ------------------------------------------------------------------ configs
@pytest.mark.parametrize("make, message", [
    (lambda: ReadoutConfig(l2=-1.0), r"ReadoutConfig.l2 \(--l2\): expected a finite number ≥ 0 or 'auto', got -1.0"),
    (lambda: ReadoutConfig(state_mode="first"), r"ReadoutConfig.state_mode \(--state-mode\): expected one of"),
    (lambda: ReadoutConfig(washout=-2), r"ReadoutConfig.washout \(--washout\): expected an integer ≥ 0"),
    (lambda: ReadoutConfig(reservoir=ReservoirConfig(units=0)), r"ReservoirConfig.units \(--units\): expected an integer ≥ 1"),
    (lambda: ReservoirConfig(leaky=True), r"ReservoirConfig.leaky \(--leaky\): expected a number in \(0, 1\], got True"),
    (lambda: IncFedConfig(backend="jax"), r"IncFedConfig.backend \(--backend\): expected one of \('auto', 'tff', 'numpy'\)"),
    (lambda: IncFedConfig(subround_size=0), r"IncFedConfig.subround_size \(--subround-size\)"),
    (lambda: IncFedConfig(backend="numpy", subround_size=2), "streams the clients through TFF"),
    (lambda: IncFedConfig(subround_size=2, privacy=PrivacyConfig(secure_aggregation=True)), "does not combine"),
    (lambda: PartialIncFedConfig(mask="rows"), r"PartialIncFedConfig.mask \(--mask\): expected one of"),
    (lambda: PartialIncFedConfig(alpha=1.5), r"PartialIncFedConfig.alpha \(--alpha\): expected a number in \[0, 1\]"),
    (lambda: PFedRRConfig(tau=0.0), r"PFedRRConfig.tau \(--tau\): expected a number in \(0, 1\]"),
    (lambda: PFedRRConfig(reading="loose"), r"PFedRRConfig.reading \(--reading\)"),
    (lambda: FedIPConfig(rounds=0), r"FedIPConfig.rounds \(--rounds\): expected an integer ≥ 1"),
    (lambda: FedIPConfig(ip=IPConfig(sigma=0.0)), r"IPConfig.sigma \(--ip-sigma\): expected a finite number > 0"),
    (lambda: IPConfig(min_gain=0.0), r"IPConfig.min_gain \(--ip-min-gain\): expected None or a finite number > 0"),
    (lambda: FedIPConfig(l2_scale="log"), r"FedIPConfig.l2_scale \(--l2-scale\)"),
    (lambda: AlignmentConfig(alpha=-0.1), r"AlignmentConfig.alpha \(--alpha\)"),
    (lambda: FedAvgConfig(out=""), r"FedAvgConfig.out \(--out\): expected the run folder"),
    (lambda: FedAvgConfig(out="o", reservoirs="shared"), r"FedAvgConfig.reservoirs \(--reservoir\)"),
    (lambda: FedAvgConfig(out="o", rounds=0), r"FedAvgConfig.rounds \(--rounds\): expected an integer ≥ 1"),
    (lambda: FedCurvConfig(out="o", penalty=-1.0), r"FedCurvConfig.penalty \(--penalty\)"),
    (lambda: FedAvgConfig(out="o", model=ThesisModelConfig(batch_size=0)), r"ThesisModelConfig.batch_size"),
    (lambda: PrivacyConfig(dp_epsilon=1.0, dp_noise_multiplier=1.0), "either dp_epsilon"),
    (lambda: PrivacyConfig(dp_epsilon=-1.0), "dp epsilon: expected a number > 0"),
    (lambda: PrivacyConfig(dp_model="global"), r"PrivacyConfig.dp_model \(--dp-model\)"),
    (lambda: PrivacyConfig(dp_clip=-1.0), r"PrivacyConfig.dp_clip \(--dp-clip\): expected None or a finite norm bound"),
    (lambda: PrivacyConfig(dp_ip_clip=float("nan")), r"PrivacyConfig.dp_ip_clip \(--dp-ip-clip\): expected a finite"),
    (lambda: PrivacyConfig(secure_bits=0), r"PrivacyConfig.secure_bits \(--secure-bits\): expected an integer ≥ 1"),
    (lambda: PrivacyConfig(secure_range="wide"), r"PrivacyConfig.secure_range \(--secure-range\): expected None or"),
    (lambda: PrivacyConfig(dp_adaptive_clip=True), r"dp_adaptive_clip \(--dp-adaptive-clip\) needs"),
])
def test_a_config_refuses_bad_values_naming_the_field_and_flag(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_configs_are_frozen_and_the_seed_is_the_reservoirs():
    config = IncFedConfig(reservoir=ReservoirConfig(units=5, seed=7))
    assert config.seed == 7 and FedAvgConfig(out="o", model=ThesisModelConfig(ReservoirConfig(seed=4))).seed == 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.l2 = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("algorithm, model, message", [
    ("centralized", "local", "centralized: secure aggregation / DP are implemented for"),
    ("pfedrr", "central", "pfedrr: .* add --dp-model local"),
    ("partial-incfed", "distributed", "partial-incfed: .* add --dp-model local"),
    ("fedavg", "local", "fedavg: --dp-model does not apply to its privacy"),
])
def test_privacy_is_refused_where_it_is_not_implemented(algorithm, model, message):
    with pytest.raises(ValueError, match=message):
        check_privacy(get_algorithm(algorithm), PrivacyConfig(dp_epsilon=1.0, dp_model=model,
                                               secure_aggregation=model == "distributed"))
    privacy = PrivacyConfig(dp_epsilon=1.0, dp_model="local")
    check_privacy(get_algorithm("pfedrr"), privacy)
    check_privacy(get_algorithm("incfed"), privacy)
    with pytest.raises(ValueError, match="--backend numpy"):
        check_privacy(get_algorithm("incfed"), privacy, backend="numpy")


def test_every_registered_config_round_trips_through_its_flat_settings():
    """``config_from_flags(flat_config(c)) == c``: the settings' names (the flags') lose nothing."""
    changed = {"units": 9, "seed": 2, "l2": 0.5, "ip_sigma": 0.2, "reservoir": "different", "client_lr": 0.01,
               "tau": 0.25, "alpha": 0.5, "dp_delta": 1e-6, "out": "run"}
    for name, algo in algorithms.available_algorithms().items():
        fields = algorithms.config_fields(algo.config)
        config = algorithms.config_from_flags(algo.config, {k: v for k, v in changed.items() if k in fields})
        flat = algorithms.flat_config(config)
        assert set(flat) == set(fields), name
        assert algorithms.config_from_flags(algo.config, flat) == config, name
        assert flat["units"] == 9 and flat["seed"] == 2 and config.seed == 2
    assert algorithms.config_from_flags(FedIPConfig, {"ip_sigma": 0.2}).ip.sigma == 0.2
    assert algorithms.config_from_flags(FedAvgConfig, {"client_lr": 0.01, "out": "o"}).model.learning_rate == 0.01
    with pytest.raises(ValueError, match=r"IncFedConfig: unknown setting\(s\) \['tau'\]"):
        algorithms.config_from_flags(IncFedConfig, {"tau": 0.5})


def test_run_algorithm_wants_the_algorithms_config():
    from closed_form_data import default_split, random_dataset

    data = random_dataset(n_clients=4, seed=1)
    with pytest.raises(TypeError, match="config must be a PFedRRConfig, got IncFedConfig"):
        algorithms.run_algorithm(algorithms.resolve_run("pfedrr", data, config=IncFedConfig()),
                                 data, default_split(data))


# ------------------------------------------------------------------ the CLI process
def test_help_imports_no_tensorflow_and_the_package_import_changes_nothing():
    code = ("import os, sys, contextlib, io\n"
            "import tff_esn\n"
            "assert 'TF_CPP_MIN_LOG_LEVEL' not in os.environ, 'importing tff_esn set an environment variable'\n"
            "from tff_esn.cli import main\n"
            "for argv in (['--help'], ['run', '--help'], ['run', 'incfed', '--help'], ['run', 'fedavg', '--help']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
            "        main(argv)\n"
            "    assert 'usage: tff-esn' in out.getvalue(), argv\n"
            "heavy = sorted(m for m in ('tensorflow', 'tensorflow_federated', 'keras', 'keras_tuner', 'sklearn',\n"
            "                           'dp_accounting', 'numpy') if m in sys.modules)\n"
            "print(heavy, len(sys.modules))\n")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    heavy, modules = proc.stdout.rsplit(" ", 1)
    assert heavy == "[]" and int(modules) < 400


def test_a_usage_error_is_one_line_with_exit_2_before_any_heavy_import(tmp_path):
    code = ("import sys\nfrom tff_esn.cli import main\n"
            f"rc = main(['run', 'incfed', '--out', {str(tmp_path)!r}, '--l2', '-1'])\n"
            "print(rc, 'tensorflow' in sys.modules)\n")
    proc = _python(code)
    assert proc.stdout.split() == ["2", "False"]
    assert proc.stderr.strip() == ("tff-esn run: error: IncFedConfig.l2 (--l2): expected a finite number ≥ 0 or "
                                   "'auto', got -1.0.")


@pytest.mark.parametrize("error", ["KeyError('internal')", "ValueError('internal')"])
def test_any_other_exception_keeps_its_traceback(error, tmp_path):
    code = ("import sys\nimport tff_esn.cli.run as run\n"
            f"def boom(*args):\n    raise {error}\n"
            "run._run = boom\nfrom tff_esn.cli import main\n"
            f"sys.exit(main(['run', 'incfed', '--out', {str(tmp_path)!r}]))\n")
    proc = _python(code)
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr and f"{error.split('(')[0]}: " in proc.stderr


def test_lazy_commands_build_their_flags_when_used(capsys):
    from tff_esn.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["reproduce", "--help"])
    assert stop.value.code == 0 and "--profile" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        main(["run", "incfed", "--out", "x", "--no-such-flag"])
    assert stop.value.code == 2 and "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_numpy_only_runs_never_import_tff_and_the_registry_says_which_runs_do(tmp_path):
    """``Algorithm.runs_tff`` is what the CLI reads before it installs TFF's context: every closed-form
    run it calls numpy-only must run (and write its metrics) without importing TFF at all, and every
    one but FedIP (its plasticity rule runs in TensorFlow) without importing TensorFlow."""
    from closed_form_data import random_dataset, write_npz

    path = write_npz(tmp_path / "data.npz", random_dataset(n_clients=5, seed=9), ["train"] * 3 + ["val", "test"])
    runs = {"centralized": [], "incfed": ["--backend", "numpy"], "fedavg-ridge": [], "partial-incfed": [],
            "pfedrr": [], "ensemble": [], "alignment": [], "fedip": ["--backend", "numpy", "--rounds", "1"]}
    code = ("import sys\nfrom tff_esn.cli import main\n"
            f"for name, extra in {runs!r}.items():\n"
            "    if name == 'fedip':\n"
            "        print('tensorflow imported:', 'tensorflow' in sys.modules)\n"
            f"    assert main(['run', name, '--data', 'npz:{path}', '--out', '{tmp_path}/' + name, '--units', '8',\n"
            "                 '--l2', '1e-2', *extra]) == 0, name\n"
            "print('tensorflow_federated imported:', 'tensorflow_federated' in sys.modules)\n")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "tensorflow imported: False" in proc.stdout and "tensorflow_federated imported: False" in proc.stdout
    assert all((tmp_path / name / "metrics.json").exists() for name in runs)

    predicate = {name: algorithms.get_algorithm(name).runs_tff for name in runs}
    assert not predicate["incfed"](IncFedConfig(backend="numpy"))
    assert not predicate["incfed"](IncFedConfig())  # auto: numpy where TFF would only sum the statistics
    assert predicate["incfed"](IncFedConfig(backend="tff"))
    assert predicate["incfed"](algorithms.config_from_flags(IncFedConfig, {"dp_epsilon": 1.0}))  # auto: DP in TFF
    assert predicate["incfed"](IncFedConfig(subround_size=2))
    assert predicate["pfedrr"](algorithms.config_from_flags(algorithms.get_algorithm("pfedrr").config,
                                                            {"secure_aggregation": True}))
    fedavg = algorithms.get_algorithm("fedavg")
    assert not fedavg.runs_tff(FedAvgConfig(out=str(tmp_path)))  # auto: the single-process simulation
    assert fedavg.runs_tff(FedAvgConfig(out=str(tmp_path), backend="tff"))
    assert fedavg.runs_tff(algorithms.config_from_flags(FedAvgConfig, {"out": str(tmp_path), "secure_aggregation": True}))
    assert not algorithms.get_algorithm("thesis-central").runs_tff(ThesisCentralConfig())  # Keras only, no TFF
    proc = _python("import sys\nfrom tff_esn.federated.commands import run_central\n"
                   "print('tensorflow_federated' in sys.modules)\n")
    assert proc.returncode == 0 and proc.stdout.split()[-1] == "False", proc.stderr[-2000:]


def test_workers_with_a_numpy_only_run_is_a_usage_error(tmp_path, capsys):
    assert main(["run", "centralized", "--out", str(tmp_path), "--workers", "localhost:8000"]) == 2
    assert "--workers: centralized with these settings runs no TFF computation" in capsys.readouterr().err
    assert not (tmp_path / "metrics.json").exists()
