"""Inputs checked at the boundary: seeds, client ids, leakage and one-class groups, a full disk."""

import collections
import json
import errno
import os

import numpy as np
import pytest

from tff_esn.cli import main
from tff_esn.closed_form.configs import ReadoutConfig
from tff_esn.data.checks import check_split
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import Split, dataset_from_arrays
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.federated.checkpoints import RoundCheckpoint
from tff_esn.privacy.config import PrivacyConfig
from tff_esn.common.run_warnings import recording


def _data(client, n=8, seed=0):
    x = np.random.default_rng(seed).normal(size=(n, 6, 2))
    return x, np.arange(n) % 2, client


@pytest.mark.parametrize("seed", [2 ** 32, 2 ** 40, -1])
def test_a_seed_beyond_what_every_library_takes_is_refused_before_any_work(seed):
    with pytest.raises(ValueError, match=r"ReservoirConfig.seed \(--seed\): expected an integer in \[0, 4294967295\]"):
        ReadoutConfig(reservoir=ReservoirConfig(seed=seed))
    with pytest.raises(ValueError, match=r"PrivacyConfig.dp_seed \(--dp-seed\): expected None or an integer in "):
        PrivacyConfig(dp_seed=seed)
    assert ReservoirConfig(seed=2 ** 32 - 1).seed == 2 ** 32 - 1


def test_the_cli_refuses_the_seed_in_one_line(tmp_path, capsys):
    assert main(["run", "incfed", "--data", "synthetic-wesad", "--seed", "4294967296", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["tff-esn run: error: --seed: expected an integer in [0, 4294967295], got 4294967296."]


@pytest.mark.parametrize("args, line", [
    (["data", "synth-hhar", "--seed", "-1"], "--seed: expected an integer in [0, 4294967295], got -1."),
    (["data", "synth-wesad", "--minutes", "nan"], "--minutes: expected a finite number > 0, got nan."),
    (["compare", "--seeds", "0,4294967296"], "--seeds: expected integers in [0, 4294967295], got (0, 4294967296)."),
    (["compare", "--clients", "0"], "--clients: expected an integer ≥ 1, got 0."),
    (["tune", "incfed-wesad", "--seed", "4294967296"], "--seed: expected an integer in [0, 4294967295], got "
                                                        "4294967296."),
    (["reproduce", "incfed", "--seed", "-5"], "--seed: expected an integer in [0, 4294967295], got -5."),
    (["reproduce", "incfed", "--seed", "4294967295"], "seed: expected an integer in [0, 4294967294] (repetition r of "
                                                      "2 uses seed + r, at most 4294967295), got 4294967295."),
    (["worker", "--port", "70000"], "--port: expected a TCP port in [1, 65535], got 70000."),
    (["run", "fedavg", "--worker-timeout", "inf"], "--worker-timeout: expected a finite number of seconds > 0, got "
                                                   "inf."),
])
def test_flags_passed_to_libraries_with_their_own_limits_are_refused_in_one_line_before_any_work(args, line, tmp_path,
                                                                                                capsys):
    out = [] if args[0] == "worker" else ["--out", str(tmp_path / "out")]
    assert main([*args, *out]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"tff-esn {args[0]}: error: {line}"]
    assert not (tmp_path / "out").exists()


def test_empty_and_mixed_client_ids_are_refused():
    with pytest.raises(DataError, match=r"client: sequence 2 has an empty client id '' \(1 such\)"):
        dataset_from_arrays(*_data(["a", "a", "", "b", "b", "b", "c", "c"]), source="t")
    with pytest.raises(DataError, match=r"client: sequence 0 has an empty client id ' '"):
        dataset_from_arrays(*_data([" "] * 4 + ["b"] * 4), source="t")
    mixed = np.array([1, "1", 2, 2, 3, 3, 4, 4], object)
    with pytest.raises(DataError, match=r"client: ids mix integers \(e.g. 1\) and strings \(e.g. '1'\)"):
        dataset_from_arrays(*_data(mixed), source="t")
    with pytest.raises(DataError, match="ids mix integers"):
        dataset_from_arrays(*_data([1, "1", 2, 2, 3, 3, 4, 4]), source="t")
    assert dataset_from_arrays(*_data([1, 1, 2, 2, 3, 3, 4, 4]), source="t").client_ids == ("1", "2", "3", "4")


def _split_data(x, y, client):
    data = dataset_from_arrays(x, y, client, source="t")
    return data, Split("s", ("a", "b"), test=("t",))


def test_test_sequences_copied_from_training_and_a_one_class_test_group_are_recorded_warnings():
    x = np.random.default_rng(1).normal(size=(10, 6, 2))
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0, 1])
    client = ["a"] * 4 + ["b"] * 4 + ["t"] * 2
    clean, split = _split_data(x, y, client)
    with recording() as said:
        check_split(clean, split, federated=True)
    assert said == []
    leaked = x.copy()
    leaked[8] = x[3]  # a training sequence of client a, copied into the test group
    data, split = _split_data(leaked, y, client)
    with recording() as said:
        check_split(data, split, federated=True)
    assert said == ["t: 1 test sequence(s) are exact copies of training sequences (leakage: the test scores overstate "
                    "what the model does on new data); drop them from the test clients."]
    one_class = y.copy()
    one_class[8:] = 1
    data, split = _split_data(x, one_class, client)
    with recording() as said:
        check_split(data, split, federated=True)
    assert said == ["t: the test clients hold one class only ('1'): AUC and the other classes' recall are undefined "
                    "and accuracy is that class's recall; give the test group sequences of every class."]


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_during_a_checkpoint_leaves_the_previous_one_and_no_temporary_file(tmp_path, monkeypatch):
    state = collections.OrderedDict(w=np.arange(3, dtype=np.float32))
    checkpoint = RoundCheckpoint(tmp_path)
    checkpoint.save(state, 1, [{"round": 1}])

    def partial_savez(file, *args, **kwargs):
        fh = open(file, "wb") if isinstance(file, (str, os.PathLike)) else file
        fh.write(b"PK partial")
        _no_space()

    monkeypatch.setattr(np, "savez", partial_savez)
    with pytest.raises(OSError, match="No space left"):
        checkpoint.save(state, 2, [{"round": 1}, {"round": 2}])
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["state.npz"]
    monkeypatch.undo()
    assert checkpoint.latest(state)[1:] == (1, [{"round": 1}])


def test_a_full_disk_is_one_line_and_the_run_folder_keeps_no_temporary_file(tmp_path, capsys, monkeypatch):
    import tff_esn.common.io

    x, y, _ = _data(None, n=12)
    groups = np.array(["train"] * 8 + ["test"] * 4)
    np.savez(tmp_path / "d.npz", X=x, y=y, client=np.repeat(np.arange(6), 2), split=groups)
    monkeypatch.setattr(tff_esn.common.io.os, "fsync", _no_space)
    out = tmp_path / "out"
    code = main(["run", "incfed", "--backend", "numpy", "--data", f"npz:{tmp_path / 'd.npz'}", "--units", "10",
                 "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith(f"tff-esn run: error: {out / 'metrics.json'}: no space left on the device ")
    assert not out.exists()  # no temporary file was left, so the run's new folder is removed too


def _holder(out):
    """A process holding ``out``'s run lock until killed."""
    import subprocess
    import sys

    code = (f"import sys, time; from tff_esn.runs.run_folder import run_lock\nwith run_lock({str(out)!r}):\n"
            "    print('held', flush=True); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_every_command_that_writes_a_folder_is_refused_while_another_process_holds_it(tmp_path, capsys):
    out = tmp_path / "out"
    holder = _holder(out)
    try:
        for args in (["compare", "--profile", "quick"], ["tune", "incfed-wesad", "--trials", "1"],
                     ["reproduce", "incfed", "--profile", "tiny"], ["data", "synth-hhar"],
                     ["run", "incfed", "--data", "synthetic-hhar"]):
            assert main([*args, "--out", str(out)]) == 2, args
            assert capsys.readouterr().err.strip().splitlines() == [
                f"tff-esn {args[0]}: error: --out {out}: another run (pid {holder.pid}) is writing into it; wait for "
                "it to end or choose another folder."], args
        from scripts.reproduce_all import main as reproduce_all

        assert reproduce_all(["incfed", "--profile", "tiny", "--out", str(out)]) == 2
        assert capsys.readouterr().err.strip().splitlines() == [
            f"reproduce: error: --out {out}: another run (pid {holder.pid}) is writing into it; wait for it to end or "
            "choose another folder."]
        assert sorted(p.name for p in out.iterdir()) == [".lock"]
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_the_run_lock_names_its_holder_and_is_released_when_the_holder_is_killed(tmp_path):
    import signal

    from tff_esn.runs.run_folder import RunFolderError, run_lock

    out = tmp_path / "run"
    holder = _holder(out)
    try:
        with pytest.raises(RunFolderError, match=rf"--out {out}: another run \(pid {holder.pid}\) is writing into "
                                                 r"it; wait for it to end or choose another folder\."):
            with run_lock(out):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    with run_lock(out), run_lock(out):  # free again, and re-entrant within a process
        assert (out / ".lock").read_text().strip() == str(os.getpid())


# ------------------------------------------------------------------ nothing fails after the work is done
def test_the_library_runs_fedavg_and_fedcurv_without_a_run_folder_and_records_the_clients_that_ran(tmp_path,
                                                                                                  monkeypatch):
    from closed_form_data import default_split, random_dataset
    from tff_esn.registry.algorithms import resolve_run, run_algorithm

    monkeypatch.chdir(tmp_path)
    data = random_dataset(n_clients=6, steps=8, features=2, n_classes=2, seed=1)
    split = default_split(data)
    for name, extra in (("fedavg", {}), ("fedcurv", {"penalty": 1e-4})):
        record = run_algorithm(resolve_run(name, data, rounds=2, units=10, backend="sim", client_lr=0.1,
                                           clients_per_round=1000, **extra), data, split)
        assert 0 <= record["test"]["accuracy"] <= 1 and len(record["extra"]["rounds"]) == 2
        assert "rounds_csv" not in record["extra"]
        assert record["extra"]["clients_per_round"] == len(split.train) == 4
        assert record["config"]["clients_per_round"]["value"] == 1000
        assert any(w.startswith("clients_per_round 1000: there are 4 training clients; each round trains all 4")
                   for w in record["warnings"])
    assert list(tmp_path.iterdir()) == []


def test_a_horizon_beyond_the_series_leaves_persistence_out_instead_of_failing_after_training():
    from tff_esn.common.tasks import Task
    from tff_esn.data.seed_sources.generators import series_dataset
    from tff_esn.data.splits import get_split
    from tff_esn.registry.algorithms import resolve_run, run_algorithm

    data = series_dataset("narma10", Task("forecast", 500), clients=3, steps=300)
    record = run_algorithm(resolve_run("incfed", data, units=20, washout=10, backend="numpy"), data,
                           get_split("npz", data))
    persistence = record["baselines"]["persistence"]
    assert persistence["test"] is None and "not longer than the horizon" in persistence["unavailable"]
    assert record["baselines"]["lagged_ridge"]["steps_from"] == 10 and record["test"]["n"] == 290
    assert record["baselines"]["training_mean"]["test"]["n"] == 290
    short = series_dataset("narma10", Task("forecast", 5), clients=3, steps=300)
    kept = run_algorithm(resolve_run("incfed", short, units=20, washout=10, backend="numpy"), short,
                         get_split("npz", short))
    scored = 300 - kept["baselines"]["lagged_ridge"]["steps_from"]  # every baseline on the steps the widest keeps
    assert kept["baselines"]["persistence"]["test"]["n"] == scored and "unavailable" not in kept["baselines"]["persistence"]


@pytest.mark.parametrize("privacy", [{"dp_epsilon": 1.0}, {"secure_aggregation": True}])
def test_incfed_runs_tff_dp_and_secure_sums_on_a_generated_series(privacy):
    from tff_esn.common.tasks import Task
    from tff_esn.data.seed_sources.generators import series_dataset
    from tff_esn.data.splits import get_split
    from tff_esn.registry.algorithms import resolve_run, run_algorithm

    data = series_dataset("narma10", Task("forecast", 1), clients=3, steps=100)
    record = run_algorithm(resolve_run("incfed", data, units=12, washout=10, backend="tff", l2=1e-3, **privacy),
                           data, get_split("npz", data))
    assert np.isfinite(record["test"]["nrmse"]) and record["test"]["n"] == 90
    if "dp_epsilon" in privacy:
        assert record["privacy"]["epsilon"] == pytest.approx(1.0)
    else:
        assert record["secure_aggregation"]["enabled"] is True


_MANY = {"fedavg": {"rounds": 2, "backend": "sim", "keep_best": True},
         "fedcurv": {"rounds": 2, "backend": "sim", "keep_best": True, "penalty": 1e-4},
         "thesis-central": {"epochs": 3, "patience": 2}}


@pytest.mark.parametrize("name", list(_MANY))
def test_52_classes_of_two_training_sequences_train_with_balanced_weights_on_a_carved_validation(name):
    from closed_form_data import many_classes_dataset
    from tff_esn.data.sequences import Split
    from tff_esn.registry.algorithms import resolve_run, run_algorithm

    data = many_classes_dataset(2)  # a plain hashed hold-out takes both sequences of classes 16, 46 and 51
    split = Split("own", ("c0", "c1", "c2", "c3"), test=("test",))
    record = run_algorithm(resolve_run(name, data, units=10, client_lr=0.1, class_weight="balanced",
                                       state_mode="mean", **_MANY[name]), data, split)
    assert record["validation"]["rule"] == "local hold-out" and record["test"]["n"] == 52
    weights = record["extra"]["class_weight"]
    assert len(weights) == 52 and min(weights) > 0
    assert not [w for w in record["warnings"] if "no training labels" in w]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_MANY))
def test_52_classes_of_two_training_sequences_run_to_a_result_with_default_flags(name, tmp_path, capsys):
    from closed_form_data import many_classes_dataset, write_npz

    path = write_npz(tmp_path / "many.npz", many_classes_dataset(2), ["train"] * 4 + ["test"])
    assert main(["run", name, "--data", f"npz:{path}", "--out", str(tmp_path / "run")]) == 0
    record = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert record["test"]["n"] == 52 and record["validation"]["rule"] == "local hold-out"
    assert min(record["extra"]["class_weight"]) > 0
