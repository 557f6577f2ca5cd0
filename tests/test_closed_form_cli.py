"""``tff-esn run``: every closed-form algorithm end to end, metrics.json, summary, --hparams."""

import json

import numpy as np
import pytest

from tff_esn.cli import main
from tff_esn.registry.defaults import default_pipeline, default_split
from tff_esn.data.sequences import Split

from closed_form_data import fake_data_modules, random_dataset

CLOSED_FORM = ("centralized", "incfed", "fedavg-ridge", "rls", "partial-incfed", "pfedrr", "fedip", "ensemble",
               "alignment")
FAST = ["--units", "8", "--l2", "1e-2", "--washout", "1"]


@pytest.fixture
def fake_sources(monkeypatch):
    """Stand-in data modules recording the calls (the CLI's wiring, independent of the pipelines)."""
    calls = []
    data = random_dataset(n_clients=5, seed=3)

    def load_source(source, pipeline, *, cache_dir=None, **options):
        calls.append(("load", source, pipeline))
        return data

    def get_split(name, dataset, *, train_fraction=1.0, seed=0):
        calls.append(("split", name, train_fraction, seed))
        ids = dataset.client_ids
        return Split(name, ids[:3], (ids[3],), (ids[4],))

    fake_data_modules(monkeypatch, load_source, get_split)
    return calls


@pytest.mark.parametrize("name", CLOSED_FORM)
def test_run_writes_metrics_and_prints_a_summary(name, fake_sources, tmp_path, capsys):
    extra = ["--rounds", "1"] if name == "fedip" else []
    assert main(["run", name, "--out", str(tmp_path), *FAST, *extra]) == 0
    record = json.loads((tmp_path / "metrics.json").read_text())
    assert record["algorithm"] == name and record["data"] == "random"
    assert {"train", "val", "test", "communication", "seconds", "config"} <= set(record)
    assert {"accuracy", "f1_macro", "f1_micro", "auc", "random_baseline_accuracy"} <= set(record["test"])
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(f"{name} on random: test accuracy") and "metrics.json" in out[0]
    assert fake_sources[0] == ("load", "synthetic-wesad", "incfed-wesad")
    assert fake_sources[1] == ("split", "incfed-wesad", 1.0, 0)


def test_hparams_file_fills_defaults_and_flags_win(fake_sources, tmp_path):
    hp = tmp_path / "best.json"
    hp.write_text(json.dumps({"units": 6, "spectral_radius": 0.5, "l2": 0.5, "tau": 0.3}))
    assert main(["run", "pfedrr", "--out", str(tmp_path), "--hparams", str(hp), "--units", "7",
                 "--train-fraction", "0.5"]) == 0
    config = json.loads((tmp_path / "metrics.json").read_text())["config"]
    assert tuple(config[k]["value"] for k in ("units", "spectral_radius", "l2", "tau")) == (7, 0.5, 0.5, 0.3)
    assert fake_sources[1] == ("split", "incfed-wesad", 0.5, 0)
    hp.write_text(json.dumps({"unknown_flag": 1}))
    assert main(["run", "incfed", "--out", str(tmp_path), "--hparams", str(hp)]) == 2


def test_bad_cli_input_exits_2_without_writing(fake_sources, tmp_path, capsys):
    assert main(["run", "partial-incfed", "--out", str(tmp_path), *FAST, "--k", "0"]) == 2
    err = capsys.readouterr().err
    assert "error: PartialIncFedConfig.k (--k): expected None or an integer in [1, 9]" in err
    assert "Traceback" not in err and not (tmp_path / "metrics.json").exists()
    assert main(["run", "incfed", "--out", str(tmp_path), *FAST, "--backend", "numpy", "--subround-size", "2"]) == 2
    assert "--subround-size" in capsys.readouterr().err
    assert main(["run", "centralized", "--out", str(tmp_path), *FAST, "--dp-epsilon", "1"]) == 2
    assert "centralized: secure aggregation / DP are implemented for" in capsys.readouterr().err
    assert not (tmp_path / "metrics.json").exists()
    with pytest.raises(SystemExit):
        main(["run", "no-such-algorithm", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        main(["run", "incfed", "--out", str(tmp_path), "--train-fraction", "0.3"])


def test_k_beyond_the_readout_features_is_a_usage_error_before_any_work(fake_sources, tmp_path, capsys):
    """k > N_F = units + readout bias: one line from the config, exit 2, nothing written."""
    assert main(["run", "partial-incfed", "--out", str(tmp_path), *FAST, "--k", "999"]) == 2
    assert "k (--k): expected None or an integer in [1, 9]" in capsys.readouterr().err
    assert not (tmp_path / "metrics.json").exists()


def test_cli_run_equals_the_registry_run_with_a_typed_config(fake_sources, tmp_path):
    from tff_esn.registry.algorithms import resolve_run, run_algorithm
    from tff_esn.closed_form.configs import PFedRRConfig
    from tff_esn.esn.hyperparameters import ReservoirConfig

    assert main(["run", "pfedrr", "--out", str(tmp_path), *FAST, "--seed", "5", "--tau", "0.7",
                 "--reading", "literal"]) == 0
    cli = json.loads((tmp_path / "metrics.json").read_text())
    data = random_dataset(n_clients=5, seed=3)
    ids = data.client_ids
    config = PFedRRConfig(reservoir=ReservoirConfig(units=8, seed=5), l2=1e-2, washout=1, tau=0.7, reading="literal")
    lib = json.loads(json.dumps(run_algorithm(resolve_run("pfedrr", data, config=config),
                                              data, Split("s", ids[:3], (ids[3],), (ids[4],)))))
    for key in ("train", "val", "test", "communication", "extra", "privacy", "baselines"):
        assert cli[key] == lib[key], key
    assert {k: cli["config"][k]["value"] for k in lib["config"]} == {k: v["value"] for k, v in lib["config"].items()}
    assert {v["origin"] for v in lib["config"].values()} == {"config"} and cli["config"]["tau"]["origin"] == "flag"
    assert (lib["config"]["seed"]["value"], lib["config"]["tau"]["value"]) == (5, 0.7)
    assert cli["cli"]["out"] == str(tmp_path) and "tau" not in cli["cli"]


def test_default_pipeline_and_split():
    assert default_pipeline("synthetic-hhar") == "incfed-hhar" and default_pipeline("wesad:/d") == "incfed-wesad"
    assert default_split("npz:/f.npz", "incfed-wesad") == "npz"
    assert default_split("synthetic-wesad", "thesis") == "thesis-primal"
    assert default_split("hhar:/d", "pfedrr-hhar") == "pfedrr-hhar"


# ------------------------------------------------------------------ with the real data layer
@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One synthetic-data cache for the module: the default source is generated once."""
    return tmp_path_factory.mktemp("synthetic-cache")


@pytest.mark.parametrize("name", CLOSED_FORM)
def test_run_on_the_synthetic_default(name, tmp_path, cache_dir):
    extra = ["--rounds", "1"] if name == "fedip" else []
    assert main(["run", name, "--out", str(tmp_path), "--cache-dir", str(cache_dir), *FAST, *extra]) == 0
    record = json.loads((tmp_path / "metrics.json").read_text())
    assert record["data"].startswith("synthetic-wesad") and record["test"]["n"] > 0


def test_run_on_an_npz_file_and_centralized_equals_incfed(tmp_path):
    data = random_dataset(n_clients=5, seed=9)
    path = tmp_path / "data.npz"
    ids = data.client_ids
    np.savez(path, X=np.concatenate([data.clients[c].x for c in ids]),
             y=np.concatenate([data.clients[c].y for c in ids]),
             client=np.concatenate([[c] * len(data.clients[c]) for c in ids]),
             split=np.concatenate([[g] * len(data.clients[c]) for c, g in zip(ids, ["train"] * 3 + ["val", "test"])]))
    tests = {}
    for name in CLOSED_FORM:
        out = tmp_path / name
        extra = ["--rounds", "1"] if name == "fedip" else []
        assert main(["run", name, "--data", f"npz:{path}", "--out", str(out), *FAST, *extra]) == 0
        tests[name] = json.loads((out / "metrics.json").read_text())["test"]
    assert tests["centralized"] == tests["incfed"]
