"""``tff-esn compare`` and the ``--partition``/``--clients`` flags of ``tff-esn run``, on small ``.ts`` files."""

import csv
import json

import numpy as np
import pytest

from tff_esn.cli.compare import heterogeneity as compare
from tff_esn.cli import main
from tff_esn.cli.compare.heterogeneity import Comparison, fitting_algorithms, run_comparison
from tff_esn.data.sources import load_source
from tff_esn.data.ts import load_ts

from closed_form_data import write_ts


def _rows(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_a_comparison_writes_csv_table_and_figure_and_incfed_equals_centralized_on_every_partition(tmp_path):
    source = write_ts(tmp_path)
    comparison = Comparison(source, "ignored", "npz", partitions=("iid", "dirichlet:0.1"), clients=4, seeds=(0, 1),
                            algorithms=("centralized", "incfed", "fedavg-ridge"))
    paths = run_comparison(comparison, tmp_path / "out", progress=False)
    rows = _rows(paths["csv"])
    assert [(r["algorithm"], r["partition"], r["seed"]) for r in rows] == [
        ("centralized", "natural", "0"), ("centralized", "natural", "1"),
        *[(a, p, s) for a in ("incfed", "fedavg-ridge") for p in ("iid", "dirichlet:0.1") for s in "01"]]
    assert all(r["error"] == "" and r["scored_on"] == "test" for r in rows)
    central = {r["seed"]: r["accuracy"] for r in rows if r["algorithm"] == "centralized"}
    assert all(r["accuracy"] == central[r["seed"]] for r in rows if r["algorithm"] == "incfed")
    record = json.loads((tmp_path / "out/runs/fedavg-ridge/dirichlet-0.1/seed1/metrics.json").read_text())
    assert record["partition"]["partitioner"] == "dirichlet:0.1" and record["partition"]["clients"] == 4
    assert sum(map(sum, record["partition"]["label_histogram"].values())) == 24
    assert record["config"]["seed"]["value"] == 1 and record["config"]["units"]["value"] == 100  # run's default reservoir
    fedavg = [float(r["accuracy"]) for r in rows if r["algorithm"] == "fedavg-ridge" and r["partition"] == "iid"]
    table = paths["table"].read_text().replace("**", "")  # best values in bold
    assert f"| fedavg-ridge | {np.mean(fedavg):.3f} ± {np.std(fedavg):.3f} |" in table
    assert "logistic regression (pooled data, reference)" in table and "| 4000 |" not in table
    up = float(rows[-1]["up_floats_per_client"])
    assert up == 2 * 101 * 3 / 2 == 303  # FedAvg of ridge: N_Y · N_F floats up (IncFed §II-B)
    assert paths["figure_png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and paths["figure"].suffix == ".pdf"


def test_finished_cells_are_read_not_rerun_and_other_settings_are_refused(tmp_path, monkeypatch):
    source = write_ts(tmp_path, seed=3)
    comparison = Comparison(source, "ignored", "npz", partitions=("iid",), clients=3, seeds=(0,),
                            algorithms=("centralized", "incfed"))
    first = run_comparison(comparison, tmp_path / "out", progress=False)["csv"].read_text()

    def fail(*args, **kwargs):
        raise AssertionError("re-ran a finished cell")

    monkeypatch.setattr(compare, "run_cell", fail)
    assert run_comparison(comparison, tmp_path / "out", progress=False)["csv"].read_text() == first
    with pytest.raises(FileExistsError, match="holds a comparison with other settings"):
        run_comparison(Comparison(source, "ignored", "npz", partitions=("iid",), clients=2, seeds=(0,),
                                  algorithms=("centralized", "incfed")), tmp_path / "out", progress=False)


def test_the_algorithms_that_fit_the_labels_and_lengths(tmp_path):
    four = load_ts(write_ts(tmp_path, "Four", classes=4)[3:])
    two = load_ts(write_ts(tmp_path, "Two", classes=2)[3:])
    ragged = load_ts(write_ts(tmp_path, "Rag", classes=2, ragged=True)[3:])
    assert fitting_algorithms(four)[0] == "centralized"
    assert {"incfed", "fedavg-ridge", "pfedrr", "fedip"} <= set(fitting_algorithms(four))
    assert {"fedavg", "fedcurv"} <= set(fitting_algorithms(four)) and "thesis-central" not in fitting_algorithms(four)
    assert {"fedavg", "fedcurv"} <= set(fitting_algorithms(two))
    assert {"incfed", "fedip", "fedavg"} <= set(fitting_algorithms(ragged))  # their entries take unequal lengths


@pytest.mark.parametrize("kwargs, message", [
    ({"partitions": ()}, "at least one partitioner"), ({"partitions": ("natural",)}, "has no client count"),
    ({"partitions": ("iid", "iid")}, "repeated"), ({"seeds": (1, 1)}, "distinct integers"),
    ({"clients": 0}, "clients: expected"), ({"algorithms": ("nope",)}, "unknown"),
])
def test_bad_comparisons(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Comparison("synthetic-hhar", "incfed-hhar", "incfed-hhar", **kwargs)


def test_the_compare_command_prints_the_table_and_refuses_bad_input_in_one_line(tmp_path, capsys):
    source = write_ts(tmp_path)
    argv = ["compare", "--data", source, "--algorithms", "centralized,incfed", "--partitions", "iid,pathological:1",
            "--clients", "3", "--seeds", "0", "--no-progress", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| incfed |" in out and "k=1" in out and (tmp_path / "o/ts-Toy/balanced_accuracy.png").exists()
    assert main([*argv[:-1], str(tmp_path / "o2"), "--clients", "30"]) == 2
    assert "train clients ['train']: partition iid: 30 clients need at least 30 sequences" in capsys.readouterr().err
    assert main([*argv[:-1], str(tmp_path / "o3"), "--missing", "interpolate", "--data", "synthetic-hhar"]) == 2
    assert "--missing: expected one of refuse, interpolate with a ts:DIR/NAME source, got --missing interpolate " \
        "with --data synthetic-hhar" in capsys.readouterr().err
    assert main([*argv[:9], "--seeds", "0,1", *argv[11:]]) == 2  # o holds a comparison of seed 0 only
    assert "holds a comparison with other settings" in capsys.readouterr().err
    assert main([*argv, "--clients", "0"]) == 2 and "clients: expected an integer ≥ 1" in capsys.readouterr().err
    assert main([*argv, "--seeds", ","]) == 2 and "seeds: expected distinct integers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--partitions", "dirichlet:-1"])
    assert "concentration α > 0" in capsys.readouterr().err


def test_run_deals_clients_by_partition_and_records_the_histogram(tmp_path, capsys):
    source = write_ts(tmp_path)
    base = ["run", "incfed", "--backend", "numpy", "--data", source, "--units", "20"]
    assert main([*base, "--partition", "pathological:1", "--clients", "3", "--out", str(tmp_path / "a")]) == 0
    record = json.loads((tmp_path / "a/metrics.json").read_text())
    assert record["split"] == "npz+pathological:1" and record["partition"]["clients"] == 3
    assert all(np.count_nonzero(h) == 1 for h in record["partition"]["label_histogram"].values())
    assert main([*base, "--out", str(tmp_path / "b")]) == 0
    natural = json.loads((tmp_path / "b/metrics.json").read_text())
    assert natural["partition"] == {"partitioner": "natural", "clients": 1, "seed": 0, "groups": ["train"],
                                    "label_names": ["c0", "c1", "c2"], "sizes": {"train": 24},
                                    "label_histogram": {"train": [8, 8, 8]}}
    assert natural["test"]["accuracy"] == record["test"]["accuracy"]  # IncFed: the partition changes nothing
    assert main([*base, "--clients", "3", "--out", str(tmp_path / "c")]) == 2
    assert "--clients/--partition-groups: give them with a --partition other than natural" in capsys.readouterr().err
    dealt = [*base, "--partition", "iid", "--clients", "3", "--partition-groups", "train,test"]
    assert main([*dealt, "--out", str(tmp_path / "d")]) == 0
    both = json.loads((tmp_path / "d/metrics.json").read_text())
    assert both["split"] == "npz+iid" and both["partition"]["groups"] == ["train", "test"]
    assert sorted(both["partition"]["sizes"].items()) == [("p0", 8), ("p1", 8), ("p2", 8), ("t0", 4), ("t1", 4),
                                                          ("t2", 4)]
    assert both["test"]["accuracy"] == natural["test"]["accuracy"]  # the same test sequences, pooled
    assert main([*dealt[:-1], "val", "--out", str(tmp_path / "e")]) == 2
    assert "groups: expected some of ('train', 'val', 'test') that split 'npz' has clients in, got ['val']" in \
        capsys.readouterr().err


def test_fedavg_on_k_classes_runs_the_comparisons_rounds_with_the_neutral_settings(tmp_path):
    source = write_ts(tmp_path, name="Three", n_train=12, n_test=6, steps=8)
    comparison = Comparison(source, "ignored", "npz", partitions=("iid",), clients=2, seeds=(0,),
                            algorithms=("centralized", "fedavg"), rounds=2)
    rows = _rows(run_comparison(comparison, tmp_path / "out", progress=False)["csv"])
    fedavg = next(r for r in rows if r["algorithm"] == "fedavg")
    assert fedavg["error"] == "" and fedavg["rounds"] == "2"
    record = json.loads((tmp_path / "out/runs/fedavg/iid/seed0/metrics.json").read_text())
    assert (record["config"]["rounds"]["value"], record["config"]["state_mode"]["value"],
            record["config"]["noise_std"]["value"]) == (2, "auto", 0.0)
    assert record["selection"]["state_mode"] in ("mean", "last")  # chosen before the rounds
    with pytest.raises(ValueError, match="rounds: expected"):
        Comparison(source, "ignored", "npz", rounds=0)


def test_a_comparison_on_a_real_valued_task_reads_nrmse(tmp_path):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(60, 20, 2))
    np.savez(tmp_path / "r.npz", X=x, y=x[:, :, 0].mean(axis=1) - 0.5 * x[:, :, 1].mean(axis=1),
             client=np.repeat(["k0", "k1", "k2"], 20), split=np.repeat(["train", "val", "test"], 20))
    source = f"npz:{tmp_path / 'r.npz'}"
    comparison = Comparison(source, "ignored", "npz", partitions=("iid", "quantity:1"), clients=3, seeds=(0,),
                            algorithms=("centralized", "incfed"))
    paths = run_comparison(comparison, tmp_path / "out", progress=False)
    rows = _rows(paths["csv"])
    assert all(r["nrmse"] and r["accuracy"] == "" for r in rows)
    table = paths["table"].read_text().replace("**", "")  # best values in bold
    assert "test NRMSE (lower is better), mean ± std" in table and "task regress" in table
    assert f"| incfed | {float(rows[1]['nrmse']):.3f} ± 0.000 |" in table
    assert f"| ridge on lagged inputs (pooled data, reference) | {float(rows[0]['lagged_ridge']):.3f}" in table
    assert paths["figure_png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and paths["figure"].suffix == ".pdf"
    fitting = fitting_algorithms(load_source(source, "incfed-wesad"))
    assert "fedavg" in fitting and "rls" in fitting and "thesis-central" not in fitting
