"""One registry entry declares an algorithm: flags generated from its config, foreign flags refused
in one line, privacy, communication cost and own-data defaults (with their origins) from the entry."""

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from tff_esn.registry import algorithms
from tff_esn.common import communication
from tff_esn.cli import main
from tff_esn.closed_form.configs import IncFedConfig, incfed_cost
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.errors import DataError
from tff_esn.registry.algorithms import resolve_run
from tff_esn.registry.launch import RunRequest, launch
from tff_esn.registry.defaults import default_pipeline
from tff_esn.federated.configs import FedAvgConfig, fedavg_cost, fedcurv_cost
from tff_esn.privacy import coverage
from tff_esn.privacy.config import STATISTICS, PrivacyConfig
from tff_esn.common.settings import config_from_flags, settings

from closed_form_data import default_split, random_dataset, toy_model, write_npz
from test_closed_form_cli import FAST, fake_sources  # noqa: F401 (fixture)


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    """A toy algorithm's settings.

    Attributes:
        scale: factor of the reported score, > 0.
        mode: which toy rule runs.
        rate: a number, or ``auto``.
        seed: seed of the toy.
    """

    scale: float = 1.0
    mode: str = dataclasses.field(default="plain", metadata={"choices": ("plain", "fancy")})
    rate: float | str = dataclasses.field(default=1.0, metadata={"choices": ("auto",)})
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"ToyConfig.scale (--scale): expected a number > 0, got {self.scale!r}.")


def toy_cost(clients: int) -> communication.CommunicationCost:
    """Toy: one float up per client, nothing down."""
    return communication.CommunicationCost((communication.Phase("toy", 1, 0, clients),))


def _toy_run(dataset, split, config):
    test = {"accuracy": 0.1 * config.scale, "f1_macro": 0.0, "random_baseline_accuracy": 0.5, "n": len(split.test),
            "mode": config.mode}
    return {"train": None, "val": None, "test": test, "communication": toy_cost(len(split.train)).to_dict(),
            "model": toy_model(dataset)}


@pytest.fixture
def toy(monkeypatch):
    """The registry with a toy algorithm added (taken back after the test)."""
    monkeypatch.setattr(algorithms, "_REGISTRY", dict(algorithms.available_algorithms()))
    return algorithms.register_algorithm("toy", ToyConfig, _toy_run, tff=False, communication=toy_cost,
                                         own_data={"mode": "fancy"}, help="a toy")


def _metrics(path):
    return json.loads((path / "metrics.json").read_text())


def test_a_toy_algorithm_runs_through_the_cli_with_its_generated_flags(toy, fake_sources, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["run", "toy", "--help"])
    out = capsys.readouterr().out
    assert "--scale SCALE  factor of the reported score, > 0 (default 1.0)" in " ".join(out.split()).replace(
        "SCALE factor", "SCALE  factor")
    assert "--mode {plain,fancy}" in out and "--workers" not in out and "--dp-epsilon" not in out
    assert "--l2" not in out and "--units" not in out

    assert main(["run", "toy", "--out", str(tmp_path), "--scale", "2.5", "--mode", "fancy"]) == 0
    record = _metrics(tmp_path)
    assert record["test"]["accuracy"] == pytest.approx(0.25) and record["test"]["mode"] == "fancy"
    assert {k: v["value"] for k, v in record["config"].items()} == {"scale": 2.5, "mode": "fancy", "rate": 1.0, "seed": 0,
                                                                     "pipeline": "incfed-wesad", "split": "incfed-wesad"}
    assert record["config"]["scale"] == {"value": 2.5, "origin": "flag"}
    assert record["config"]["seed"] == {"value": 0, "origin": "default"}
    capsys.readouterr()
    assert main(["run", "toy", "--out", str(tmp_path / "b"), "--scale", "-1"]) == 2
    assert capsys.readouterr().err.strip() == ("tff-esn run: error: ToyConfig.scale (--scale): expected a number > 0, "
                                               "got -1.0.")
    assert main(["run", "toy", "--out", str(tmp_path / "b"), "--l2", "1"]) == 2
    assert "toy: --l2 does not apply (a flag of " in capsys.readouterr().err
    for text, value in (("auto", "auto"), ("0.5", 0.5)):  # a number-or-option setting
        assert main(["run", "toy", "--out", str(tmp_path / text), "--rate", text]) == 0
        assert _metrics(tmp_path / text)["config"]["rate"]["value"] == value
    with pytest.raises(SystemExit):
        main(["run", "toy", "--out", str(tmp_path / "c"), "--rate", "fast"])
    assert "expected a float or one of auto, got 'fast'" in capsys.readouterr().err


SHRUNK_MODULE = '''
"""A closed-form algorithm outside the package: pooled ridge with the readout scaled."""

import dataclasses

from tff_esn.closed_form.configs import ReadoutConfig, incfed_cost
from tff_esn.closed_form.run import Run
from tff_esn.esn.ridge import RidgeStats
from tff_esn.common.validation import check_field, is_finite


@dataclasses.dataclass(frozen=True)
class ShrunkConfig(ReadoutConfig):
    """Pooled ridge, the readout scaled.

    Attributes:
        shrink: factor of the readout, in (0, 1].
    """

    shrink: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        check_field(self, "shrink", is_finite(self.shrink) and 0 < self.shrink <= 1, "a number in (0, 1]")


def run_shrunk(dataset, split, config):
    run = Run(dataset, split, config, "shrunk")
    stats = run.stats()
    readout = config.shrink * RidgeStats.sum(stats).solve(run.choose_l2(run.exact_sweep(stats)))
    return run.report(run.model(readout), incfed_cost(run.n_features, run.n_outputs), shrink=config.shrink)
'''


def test_a_closed_form_algorithm_is_its_own_module_and_one_registry_entry(monkeypatch, fake_sources, tmp_path,
                                                                         capsys):
    """A module outside the package (its config, its run function on the Run harness) and one
    register_algorithm call: the CLI runs it with the shared readout flags and its own."""
    (tmp_path / "toy_shrunk.py").write_text(SHRUNK_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(algorithms, "_REGISTRY", dict(algorithms.available_algorithms()))
    from toy_shrunk import ShrunkConfig

    algorithms.register_algorithm("shrunk", ShrunkConfig, "toy_shrunk:run_shrunk", ragged=True, tff=False,
                                  communication=incfed_cost, help="pooled ridge, readout scaled")
    assert "--shrink SHRINK factor of the readout, in (0, 1] (default 0.5)" in _help("run", "shrunk")
    assert main(["run", "shrunk", "--out", str(tmp_path / "s"), *FAST, "--shrink", "0.25"]) == 0
    assert main(["run", "centralized", "--out", str(tmp_path / "c"), *FAST]) == 0
    shrunk, central = _metrics(tmp_path / "s"), _metrics(tmp_path / "c")
    assert shrunk["extra"]["shrink"] == 0.25 and shrunk["config"]["shrink"]["value"] == 0.25
    for group in ("train", "val", "test"):  # a positive factor changes no prediction and no ranking
        assert shrunk[group] == central[group], group
    capsys.readouterr()
    assert main(["run", "shrunk", "--out", str(tmp_path / "bad"), *FAST, "--shrink", "2"]) == 2
    assert capsys.readouterr().err.strip() == ("tff-esn run: error: ShrunkConfig.shrink (--shrink): expected a number "
                                               "in (0, 1], got 2.0.")


def test_each_closed_form_run_function_lives_in_its_algorithms_module():
    """``run_<name>`` beside the algorithm's math, in the module named for it (heterogeneous
    reservoirs: ensemble and alignment share one)."""
    closed_form = {name: algo for name, algo in algorithms.available_algorithms().items()
                   if algo.config.__module__ == "tff_esn.closed_form.configs"}
    assert len(closed_form) == 9
    for name, algo in closed_form.items():
        function = algo.run_function
        assert function.__name__ == "run_" + name.replace("-", "_"), name
        assert function.__module__ == "tff_esn.closed_form." + (
            "heterogeneous" if name in ("ensemble", "alignment") else name.replace("-", "_")), name


def test_a_run_is_resolved_once_and_checked_once(toy, fake_sources, tmp_path, monkeypatch):  # noqa: F811
    from tff_esn.registry import run_checks

    calls = {"check_run": 0, "check_privacy": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(run_checks, "check_run", counted("check_run", run_checks.check_run))
    monkeypatch.setattr(algorithms, "check_privacy", counted("check_privacy", algorithms.check_privacy))
    assert main(["run", "toy", "--out", str(tmp_path), "--scale", "2.5"]) == 0
    assert calls == {"check_run": 1, "check_privacy": 1}
    lib, path = launch(RunRequest("toy", tmp_path / "lib", layers=(("flag", {"scale": 2.5}),)))
    assert calls == {"check_run": 2, "check_privacy": 2}
    cli = json.loads((tmp_path / "metrics.json").read_text())
    assert path == tmp_path / "lib" / "metrics.json" and cli["config"] == json.loads(json.dumps(lib["config"]))
    assert cli["test"] == lib["test"] and cli["config"]["pipeline"] == {"value": "incfed-wesad", "origin": "default"}
    data = random_dataset(n_clients=4, seed=1)
    run = resolve_run("toy", data, scale=3.0)
    record = algorithms.run_algorithm(run, data, default_split(data))
    assert calls == {"check_run": 3, "check_privacy": 3}
    assert record["config"]["scale"] == {"value": 3.0, "origin": "flag"} and "settings" not in record
    with pytest.raises(TypeError, match="toy: config must be a ToyConfig, got IncFedConfig"):
        resolve_run("toy", data, config=IncFedConfig())


def test_an_entry_refuses_label_kinds_it_does_not_take_in_one_line(toy):
    algorithms.register_algorithm("toy-binary", ToyConfig, _toy_run, labels=("binary",), tff=False)
    data = random_dataset(n_clients=4, n_classes=3, seed=1)
    with pytest.raises(DataError, match=r"random: y: 3 classes, but 'toy-binary' takes binary labels only; use an "
                                        r"algorithm that takes multiclass labels \(.*incfed.*toy\)"):
        algorithms.run_algorithm(algorithms.resolve_run("toy-binary", data, config=ToyConfig()),
                                 data, default_split(data))
    binary = random_dataset(n_clients=4, n_classes=2, seed=1)
    assert algorithms.run_algorithm(algorithms.resolve_run("toy-binary", binary, config=ToyConfig()),
                                    binary, default_split(binary))["test"]["mode"] == "plain"


def test_a_run_function_without_a_model_is_an_error_naming_the_algorithm(monkeypatch):
    monkeypatch.setattr(algorithms, "_REGISTRY", dict(algorithms.available_algorithms()))

    def no_model(dataset, split, config):
        return {k: v for k, v in _toy_run(dataset, split, config).items() if k != "model"}

    algorithms.register_algorithm("toy-modelless", ToyConfig, no_model, tff=False)
    data = random_dataset(n_clients=4, seed=1)
    with pytest.raises(ValueError, match=r"^algorithm 'toy-modelless' returned no model: its run function must "
                                         r"return the trained tff_esn.esn.model.Model under result\['model'\]"):
        algorithms.run_algorithm(algorithms.resolve_run("toy-modelless", data, config=ToyConfig()), data,
                                 default_split(data))


@pytest.mark.parametrize("argv, message", [
    (["fedavg", "--l2", "1e-3"], "fedavg: --l2 does not apply (a flag of "),
    (["fedavg", "--no-readout-bias"], "fedavg: --no-readout-bias does not apply"),
    (["incfed", "--dp-ip-clip", "2"], "incfed: --dp-ip-clip does not apply (a flag of fedip)"),
    (["incfed", "--dp-adaptive-clip"], "incfed: --dp-adaptive-clip does not apply (a flag of fedavg)"),
    (["fedcurv", "--dp-adaptive-clip"], "fedcurv with --dp-adaptive-clip: the curvature terms (u, v) need the fixed"),
    (["fedavg", "--dp-model", "local"], "fedavg: --dp-model does not apply"),
    (["ensemble", "--dp-epsilon", "1"], "ensemble: secure aggregation / DP are implemented for incfed, "
                                        "partial-incfed, pfedrr, fedip, fedavg, fedcurv; drop --dp-epsilon."),
    (["thesis-central", "--workers", "localhost:8000"], "thesis-central: --workers does not apply"),
    (["incfed", "--data", "npz:data.npz", "--pipeline", "incfed-wesad"], "--pipeline: npz: data has no preprocessing"),
    (["fedavg", "--data", "ts:dir/Name", "--pipeline", "thesis"], "--pipeline: ts: data has no preprocessing"),
])
def test_a_flag_that_does_not_apply_is_refused_in_one_line(argv, message, tmp_path, capsys):
    assert main(["run", argv[0], "--out", str(tmp_path), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tff-esn run: error: {message}") and err.count("\n") == 1, err
    assert not (tmp_path / "metrics.json").exists()


def _help(*argv: str) -> str:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as out, pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(out.getvalue().split())


def test_an_algorithms_help_shows_its_flags_only_with_their_defaults():
    fedavg = _help("run", "fedavg")
    assert "--pipeline PIPELINE preprocessing pipeline of the seeds' sources (default: thesis)" in fedavg
    assert "(default all; auto on npz:/csv:/ts: data)" in fedavg and "(default 0.5; 0.0 on npz:/csv:/ts: data)" in fedavg
    assert "--units UNITS number of reservoir units N_R (≥ 1) (default 200)" in fedavg
    assert "--dp-adaptive-clip" in fedavg and "--workers" in fedavg
    assert not {"--l2", "--dp-model", "--dp-ip-clip", "--secure-bits", "--no-readout-bias"} & set(fedavg.split())
    incfed = _help("run", "incfed")
    assert "--backend {auto,tff,numpy}" in incfed and "(default auto)" in incfed
    assert "--dp-model {central,local,distributed}" in incfed
    assert "--pipeline PIPELINE preprocessing pipeline of the seeds' sources (default: incfed-wesad" in incfed
    assert not {"--dp-ip-clip", "--dp-adaptive-clip", "--rounds", "--client-lr"} & set(incfed.split())
    assert "--dp-ip-clip" in _help("run", "fedip")
    central = _help("run", "thesis-central")
    assert not {"--workers", "--secure-aggregation", "--dp-epsilon", "--rounds"} & set(central.split())
    assert "--secure-aggregation" not in _help("run", "centralized")


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=os.environ)


def test_tune_and_discriminator_help_import_no_tensorflow():
    code = ("import sys, contextlib, io\nfrom tff_esn.cli import main\n"
            "for argv in (['tune', '--help'], ['discriminator', '--help'], ['discriminator', 'train', '--help'],\n"
            "             ['discriminator', 'phase', '--help']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
            "        main(argv)\n"
            "    assert 'usage: tff-esn' in out.getvalue(), argv\n"
            "print(sorted(m for m in ('tensorflow', 'keras', 'keras_tuner', 'tensorflow_federated', 'numpy')\n"
            "             if m in sys.modules))\n")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


def test_discriminator_flags_come_from_the_configs_they_set():
    train = _help("discriminator", "train")
    assert "--units UNITS number of reservoir units N_R (≥ 1) (default 200)" in train
    assert "--noise-std NOISE_STD std of the Gaussian noise on the fake ESN's inputs (thesis: 1.0) (default 1.0)" \
        in train and "--disc-batch-size" in train and "--l2" not in train.split()
    phase = _help("discriminator", "phase")
    assert "--server-lr SERVER_LR" in phase and "(default 78)" in phase and "--threshold THRESHOLD" in phase
    assert "--algorithm {fedavg,fedcurv}" in phase

    import argparse

    from discriminator import cli
    from discriminator.configs import DeltaConfig
    from tff_esn.federated.configs import ThesisModelConfig

    parser = argparse.ArgumentParser()
    cli._add_arguments(parser)
    args = parser.parse_args(["train", "--out", "d", "--units", "20", "--client-lr", "0.01", "--steps", "50",
                              "--epochs", "3", "--disc-batch-size", "32", "--hidden", "8,4"])
    model = config_from_flags(ThesisModelConfig, cli._values(args, cli.MODEL))
    assert (model.reservoir.units, model.reservoir.spectral_radius, model.learning_rate, model.epochs) == \
        (20, 0.99, 0.01, 1)
    assert DeltaConfig(model=model, **cli._values(args, cli.DELTAS)).steps == 50
    assert cli._values(args, cli.NETWORK) == {"hidden": (8, 4), "dropout": (0.1, 0.1), "epochs": 3, "batch_size": 32}


@pytest.fixture
def npz_file(tmp_path):
    return write_npz(tmp_path / "data.npz", random_dataset(n_clients=5, seed=9), ["train"] * 3 + ["val", "test"])


def test_own_data_defaults_apply_where_nothing_was_given_and_metrics_record_each_origin(npz_file, tmp_path):
    hp = tmp_path / "hp.json"
    hp.write_text(json.dumps({"washout": 1, "units": 6}))
    out = tmp_path / "run"
    assert main(["run", "centralized", "--data", f"npz:{npz_file}", "--out", str(out), "--units", "8",
                 "--l2", "1e-2", "--hparams", str(hp)]) == 0
    record = _metrics(out)
    settings_ = record["config"]
    assert settings_["units"] == {"value": 8, "origin": "flag"}  # the flag wins over the file
    assert settings_["washout"] == {"value": 1, "origin": "file"}
    assert settings_["state_mode"] == {"value": "auto", "origin": "own-data default"}
    assert settings_["bias_scaling"] == {"value": 1.0, "origin": "own-data default"}
    assert settings_["leaky"] == {"value": 1.0, "origin": "default"}
    assert settings_["reservoir_search"] == {"value": ["leaky", "spectral_radius", "input_scaling"],
                                             "origin": "own-data default"}
    assert settings_["pipeline"] == {"value": None, "origin": "default"} and settings_["split"]["value"] == "npz"
    assert "settings" not in record  # the config is recorded once, each setting with its origin

    again = tmp_path / "again"  # a flag equal to the class default is still the user's choice
    assert main(["run", "centralized", "--data", f"npz:{npz_file}", "--out", str(again), "--units", "8",
                 "--state-mode", "all"]) == 0
    assert _metrics(again)["config"]["state_mode"] == {"value": "all", "origin": "flag"}


def test_the_seeds_sources_keep_the_class_defaults(fake_sources, tmp_path):  # noqa: F811
    assert main(["run", "incfed", "--out", str(tmp_path), *FAST, "--backend", "numpy"]) == 0
    settings_ = _metrics(tmp_path)["config"]
    assert settings_["state_mode"] == {"value": "all", "origin": "default"}
    assert settings_["bias_scaling"] == {"value": 0.0, "origin": "default"}
    assert settings_["pipeline"] == {"value": "incfed-wesad", "origin": "default"}
    hp = tmp_path / "best.json"  # a search's file names the pipeline and split it ran on
    hp.write_text(json.dumps({"pipeline": "incfed-hhar", "split": "incfed-hhar", "l2": 0.5}))
    assert main(["run", "incfed", "--out", str(tmp_path / "b"), *FAST, "--backend", "numpy", "--hparams", str(hp),
                 "--split", "mine"]) == 0
    settings_ = _metrics(tmp_path / "b")["config"]
    assert settings_["pipeline"] == {"value": "incfed-hhar", "origin": "file"}
    assert settings_["split"] == {"value": "mine", "origin": "flag"} and fake_sources[-1][1] == "mine"
    assert settings_["l2"] == {"value": 1e-2, "origin": "flag"}


def test_resolve_run_is_the_clis_run_for_library_users():
    data = random_dataset(n_clients=4, seed=2)  # arrays from Python: own data
    assert resolve_run("incfed", data, units=30).config == IncFedConfig(
        reservoir=ReservoirConfig(units=30, bias_scaling=1.0), state_mode="auto", l2="auto",
        objective="balanced_accuracy", raw_inputs="auto",
        reservoir_search=("leaky", "spectral_radius", "input_scaling"))  # units given: not searched
    assert resolve_run("incfed", "synthetic-hhar", units=30).config == IncFedConfig(reservoir=ReservoirConfig(units=30))
    own = resolve_run("fedavg", "npz:/data/mine.npz", out="o", units=30).config
    assert (own.noise_std, own.model.state_mode, own.model.reservoir.bias_scaling, own.model.reservoir.units) == \
        (0.0, "auto", 1.0, 30)
    assert resolve_run("fedavg", "synthetic-wesad", out="o").config == FedAvgConfig(out="o")
    for source, pipeline in (("synthetic-hhar", None), ("synthetic-wesad", "incfed-wesad")):  # per-sequence labels
        paper = resolve_run("fedavg", source, pipeline=pipeline, out="o").config
        assert (paper.noise_std, paper.model.state_mode, paper.model.epochs) == (0.0, "auto", 10)
    assert default_pipeline("synthetic-hhar", "thesis") == "incfed-hhar"
    assert default_pipeline("synthetic-wesad", "thesis") == "thesis"
    assert resolve_run("fedavg", "npz:x.npz", out="o", noise_std=0.3).config.noise_std == 0.3
    record = resolve_run("fedip", "ts:GunPoint", ("file", {"ip_sigma": 0.1}), ip_sigma=0.2).record
    assert record["ip_sigma"] == {"value": 0.2, "origin": "flag"}
    assert record["state_mode"]["origin"] == "own-data default"


def test_every_entry_declares_flags_with_help_a_cost_function_and_valid_own_data_settings():
    for name, algo in algorithms.available_algorithms().items():
        for setting in algo.settings().values():
            assert setting.help, f"{name}: --{setting.name} has no help (metadata['help'] or the docstring)"
        cost = algo.communication_function
        assert cost is not None and cost.__doc__, name
        assert set(algo.own_data) | set(algo.series_data) <= set(algo.settings()), name
        privacy = {n for n, s in algo.settings().items() if s.owner is PrivacyConfig}
        assert privacy == set(algo.privacy.settings), name
        assert bool(algo.privacy.covers) == bool(algo.privacy), name


def test_generated_flags_parse_tuples_and_none(fake_sources, tmp_path):  # noqa: F811
    assert main(["run", "fedip", "--out", str(tmp_path), *FAST, "--rounds", "1", "--backend", "numpy",
                 "--ip-min-gain", "none"]) == 0
    assert _metrics(tmp_path)["config"]["ip_min_gain"]["value"] is None
    fields = settings(FedAvgConfig)
    assert fields["class_weight"].parse("1,3") == (1.0, 3.0)
    assert fields["noisy_clients"].parse("S2, S3") == ("S2", "S3") and fields["noisy_clients"].parse("none") is None
    assert fields["class_weight"].parse("balanced") == "balanced"
    with pytest.raises(ValueError, match="expected a tuple or one of balanced, got 'even'"):
        fields["class_weight"].parse("even")
    from discriminator.configs import DiscriminatorConfig

    with pytest.raises(ValueError, match="expected 2 comma-separated values"):
        settings(DiscriminatorConfig)["hidden"].parse("8")


def test_fedavg_and_fedcurv_costs_are_their_registrations():
    fedavg, fedcurv = fedavg_cost(201, 0, 3), fedcurv_cost(201, 0, 3)
    assert (fedavg.up_floats, fedavg.down_floats, fedavg.rounds) == (603, 603, 3)
    assert (fedcurv.up_floats, fedcurv.down_floats) == (603 * 3, 603 * 3)
    assert algorithms.get_algorithm("fedcurv").communication_function is fedcurv_cost


def test_help_comes_from_the_declaring_class_docstring():
    from tff_esn.common.settings import attribute_help

    text = attribute_help(IncFedConfig)
    assert text["l2"].startswith("ridge λ ≥ 0 (IncFed eq. 3), or \"auto\": chosen from l2_grid")  # on ReadoutConfig
    assert text["subround_size"] == ("stream the training clients through TFF in subrounds of this many "
                                     "(tff_esn.closed_form.streaming); None: all in one computation.")
    steps = settings(FedAvgConfig)["noise_std"]
    assert (steps.help, steps.owner, steps.group) == ("std of the Gaussian noise on the noisy clients' inputs "
                                                      "(thesis: 0.5).", FedAvgConfig, "")
    assert settings(FedAvgConfig)["units"].default == 200 and settings(FedAvgConfig)["units"].group == "reservoir"


def test_algorithm_lists_do_not_depend_on_which_provider_was_imported_first():
    code = ("import {first}\n"
            "from tff_esn.registry.algorithms import names_where\n"
            "print(','.join(names_where(lambda a: bool(a.privacy))))")
    orders = {subprocess.run([sys.executable, "-c", code.format(first=module)], capture_output=True, text=True,
                             check=True).stdout.strip()
              for module in ("tff_esn.federated.configs", "tff_esn.closed_form.configs")}
    assert orders == {"incfed,partial-incfed,pfedrr,fedip,fedavg,fedcurv"}


def test_the_privacy_refusal_names_the_backend_given():
    from tff_esn.privacy.config import PrivacyConfig

    with pytest.raises(ValueError, match=r"^--backend sim: secure aggregation runs inside the TFF computation; "
                                         r"use --backend tff\.$"):
        algorithms.check_privacy(algorithms.get_algorithm("fedavg"), PrivacyConfig(dp_epsilon=1.0, secure_aggregation=True), backend="sim")
    with pytest.raises(ValueError, match=r"^--backend numpy: incfed's DP runs inside the TFF computation; "
                                         r"use --backend tff\.$"):
        algorithms.check_privacy(algorithms.get_algorithm("incfed"), PrivacyConfig(dp_epsilon=1.0), backend="numpy")
    for name, backend in (("fedavg", "tff"), ("fedavg", "sim"), ("fedcurv", "sim"), ("incfed", "tff")):
        algorithms.check_privacy(algorithms.get_algorithm(name), PrivacyConfig(dp_epsilon=1.0), backend=backend)


def test_a_toy_algorithm_gets_own_data_defaults_privacy_refusal_and_cost_from_its_registration(toy, npz_file,
                                                                                               tmp_path, capsys):
    """The toy's registration alone (from this module, nothing else touched) gives its own-data
    defaults, its cost in --help and metrics.json, and the refusal of privacy flags it does not implement."""
    assert "Communication: Toy: one float up per client, nothing down." in _help("run", "toy")
    assert "(default plain; fancy on npz:/csv:/ts: data)" in _help("run", "toy")
    assert main(["run", "toy", "--data", f"npz:{npz_file}", "--out", str(tmp_path / "own")]) == 0
    record = _metrics(tmp_path / "own")
    assert record["config"]["mode"] == {"value": "fancy", "origin": "own-data default"}
    assert record["config"]["scale"] == {"value": 1.0, "origin": "default"}
    assert record["communication"]["phases"] == [{"name": "toy", "up_floats_per_round": 1, "down_floats_per_round": 0,
                                                  "rounds": 3, "bytes_per_float": 8}]
    assert (resolve_run("toy", "npz:x.npz").config.mode, resolve_run("toy", "synthetic-wesad").config.mode) == ("fancy", "plain")
    assert algorithms.get_algorithm("toy").communication_function is toy_cost
    with pytest.raises(ValueError, match=r"^toy: secure aggregation / DP are implemented for (.*incfed|.*fedcurv){2}; "
                                         r"drop the --secure-\*/--dp-\* flags\.$"):
        algorithms.check_privacy(algorithms.get_algorithm("toy"), PrivacyConfig(dp_epsilon=1.0))
    capsys.readouterr()
    assert main(["run", "toy", "--data", f"npz:{npz_file}", "--out", str(tmp_path / "dp"), "--dp-epsilon", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tff-esn run: error: toy: secure aggregation / DP are implemented for ") and \
        err.endswith("fedcurv; drop --dp-epsilon.\n")

    with pytest.raises(ValueError, match=r"'toy-secure'\): its privacy declares no 'covers'"):
        algorithms.register_algorithm("toy-secure", IncFedConfig, _toy_run, privacy=STATISTICS)
    secure = algorithms.register_algorithm("toy-secure", IncFedConfig, _toy_run, communication=toy_cost,
                                           privacy=dataclasses.replace(STATISTICS, covers="the toy's sums"))
    assert coverage.declaration(secure.privacy, secure=True, dp=True) == {
        "covers": "the toy's sums", "public": {name: coverage.PUBLIC[name] for name in ("clients",
                                                                                        "secure_clipped_count")}}
    assert "toy-secure" in algorithms.names_where(lambda a: bool(a.privacy))
