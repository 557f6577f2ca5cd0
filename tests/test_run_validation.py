"""Validation before a run: labels, splits, the npz split rule, provenance, run folders, memory, file modes.

Every refusal is one line (a DataError / UsageError, exit code 2 from the CLI) raised before
TensorFlow is imported; the cases below gave a silent wrong result or a late traceback before.
"""

import json
import os
import subprocess
import sys
import tracemalloc
import warnings
from importlib import metadata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tff_esn.registry.algorithms import resolve_run, run_algorithm
from tff_esn.closed_form.configs import ExactReadoutConfig, ReadoutConfig
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.checks import check_split
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split, dataset_from_arrays, load_npz
from tff_esn.data.sources import load_source
from tff_esn.data.splits import get_split
from tff_esn.esn.draws import recurrent_weights
from tff_esn.common.io import write_json_atomic
from tff_esn.runs.memory import MemoryEstimate, MemoryLimitError, check_memory, estimate_memory
from tff_esn.privacy.config import PrivacyConfig
from tff_esn.runs.run_folder import check_run_folder, RunFolderError, run_lock
from tff_esn.common.run_warnings import RunWarning, recording


def _arrays(n_clients=6, per_client=8, classes=3, steps=12, seed=0):
    rng = np.random.default_rng(seed)
    n = n_clients * per_client
    y = np.arange(n) % classes
    x = rng.normal(size=(n, steps, 2)) + y[:, None, None]
    client = np.repeat([f"c{i}" for i in range(n_clients)], per_client)
    return x, y, client


def _dataset(**kwargs) -> SequenceDataset:
    x, y, client = _arrays(**kwargs)
    return dataset_from_arrays(x, y, client, source="arrays")


# ------------------------------------------------------------------ labels
@pytest.mark.parametrize("labels, message", [
    ([0, 1, 2, 7], r"labels must be exactly the classes 0…7, each present; got 0, 1, 2, 7 \(no sequence of 3, 4, 5, 6\)"
                   r"; recode them with classes, y = np.unique\(y, return_inverse=True\)"),
    ([1, 2, 3], r"got 1, 2, 3 \(no sequence of 0\)"),
    ([1], r"every label is 1: one class only"),
    ([-1, 0, 1], r"must be exactly the classes 0…1.*codes outside it: -1"),
])
def test_labels_that_are_not_exactly_0_to_k_minus_1_are_refused_with_the_remap(labels, message):
    x, _, client = _arrays()
    y = np.resize(np.array(labels), len(x))
    with pytest.raises(DataError, match=message):
        dataset_from_arrays(x, y, client, source="arrays")


@settings(max_examples=60, deadline=None)
@given(codes=st.lists(st.integers(-2, 9), min_size=2, max_size=30), names=st.booleans())
def test_a_dataset_loads_exactly_when_its_labels_are_0_to_k_minus_1(codes, names):
    y = np.array(codes)
    x = np.zeros((len(y), 3, 1))
    k = int(y.max()) + 1
    label_names = [f"class{i}" for i in range(k)] if names and k > 0 else None
    valid = set(codes) == set(range(k)) and k >= 2
    if valid:
        data = dataset_from_arrays(x, y, np.arange(len(y)) % 3, source="arrays", label_names=label_names)
        assert data.n_classes == k and data.label_names == tuple(label_names or map(str, range(k)))
    else:
        with pytest.raises(DataError, match=r"arrays: y: "):
            dataset_from_arrays(x, y, np.arange(len(y)) % 3, source="arrays", label_names=label_names)


def test_dataset_from_arrays_takes_a_list_of_unequal_sequences_and_label_names():
    rng = np.random.default_rng(1)
    seqs = [rng.normal(size=(t, 2)) for t in (4, 7, 5, 6)]
    data = dataset_from_arrays(seqs, [0, 1, 0, 1], ["a", "a", "b", "b"], ["train", "train", "test", "test"],
                               source="mine", label_names=("rest", "move"))
    assert data.ragged and data.shortest == 4 and data.label_names == ("rest", "move") and data.source == "mine"
    np.testing.assert_allclose(data.clients["a"].x[1], seqs[1], rtol=1e-6)
    assert data.groups == {"a": "train", "b": "test"}
    with pytest.raises(DataError, match=r"mine: y: labels must be exactly the 3 label names' classes 0…2"):
        dataset_from_arrays(seqs, [0, 1, 0, 1], ["a", "a", "b", "b"], source="mine", label_names=("x", "y", "z"))


def test_load_npz_refuses_all_labels_one(tmp_path):
    x, _, client = _arrays()
    np.savez(tmp_path / "one.npz", X=x, y=np.ones(len(x), int), client=client)
    with pytest.raises(DataError, match=r"one.npz: y: every label is 1: one class only"):
        load_npz(tmp_path / "one.npz")


# ------------------------------------------------------------------ split checks
def test_split_checks_refuse_misleading_splits_and_warn_on_one_federated_client():
    data = _dataset()
    ok = Split("s", ("c0", "c1", "c2", "c3"), ("c4",), ("c5",))
    check_split(data, ok, federated=True)
    with pytest.raises(DataError, match=r"split 's' has no test clients \(given by the caller\).*--no-test"):
        check_split(data, Split("s", ("c0", "c1")), federated=True)
    check_split(data, Split("s", ("c0", "c1")), federated=True, test_required=False)
    with pytest.raises(DataError, match=r"names client id\(s\) \['zz'\]"):
        check_split(data, Split("s", ("c0", "zz"), test=("c5",)), federated=True)
    with pytest.warns(RunWarning, match=r"one training client \('c0'\)"):
        check_split(data, Split("s", ("c0",), test=("c5",)), federated=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunWarning)
        check_split(data, Split("s", ("c0",), test=("c5",)), federated=False)

    rng = np.random.default_rng(0)
    clients = {"a": ClientSequences(rng.normal(size=(5, 4, 1)), np.array([0, 0, 1, 1, 0])),
               "b": ClientSequences(rng.normal(size=(3, 4, 1)), np.array([2, 0, 1])),
               "c": ClientSequences(rng.normal(size=(2, 4, 1)), np.array([2, 2]))}
    three = SequenceDataset(clients, 3, ("f0",), ("low", "mid", "high"), "three")
    with pytest.raises(DataError, match=r"class\(es\) 'high' occur in the test clients but in no training client"):
        check_split(three, Split("s", ("a",), test=("b",)), federated=False)
    with pytest.raises(DataError, match=r"class\(es\) 'high' occur in the val clients"):
        check_split(three, Split("s", ("a",), val=("c",), test=("b",)), federated=False)
    with pytest.raises(DataError, match=r"fewer than 2 training sequences \('high': 1\)"):
        check_split(three, Split("s", ("a", "b"), test=("c",)), federated=False)
    check_split(three, Split("s", ("a", "b", "c")), federated=False, test_required=False)


def test_run_algorithm_applies_the_same_checks_and_records_the_one_client_warning():
    data = _dataset()
    config = ReadoutConfig(reservoir=ReservoirConfig(units=8, seed=1))
    with pytest.raises(DataError, match="no test clients"):
        run_algorithm(resolve_run("fedavg-ridge", data, config=config), data, Split("s", ("c0", "c1")))
    record = run_algorithm(resolve_run("fedavg-ridge", data, config=config),
                           data, Split("s", ("c0",), val=("c1",)), test_required=False)
    assert record["test"] is None and any("one training client ('c0')" in w for w in record["warnings"])
    with pytest.raises(DataError, match=r"--washout 12 drops every step of the shortest sequence \(12 steps\)"):
        run_algorithm(resolve_run("centralized", data, config=ExactReadoutConfig(washout=12)),
                      data, Split("s", ("c0", "c1"), test=("c2",)))


# ------------------------------------------------------------------ npz split rule and provenance
@pytest.mark.parametrize("n, sizes", [(2, (1, 0, 1)), (3, (1, 1, 1)), (4, (2, 1, 1)), (5, (3, 1, 1)),
                                      (10, (6, 2, 2)), (23, (15, 4, 4))])
def test_the_npz_rule_without_a_split_column_is_a_seeded_shuffle(n, sizes):
    data = _dataset(n_clients=n, per_client=3)
    splits = [get_split("npz", data, seed=s) for s in range(12)]
    assert all((len(s.train), len(s.val), len(s.test)) == sizes for s in splits)
    assert all(set(s.train) | set(s.val) | set(s.test) == set(data.client_ids) for s in splits)
    assert splits[0] == get_split("npz", data, seed=0)
    assert splits[3].rule == f"seeded shuffle of the clients (seed 3): {sizes[2]} test, {sizes[1]} validation, " \
                             f"{sizes[0]} train"
    tests = {s.test for s in splits}
    assert len(tests) > 1  # not "the last in sorted order"
    last = tuple(sorted(data.client_ids, key=lambda c: int(c[1:]))[-sizes[2]:])
    assert sum(s.test == last for s in splits) < len(splits)


def test_clients_named_like_groups_without_a_split_column_are_a_recorded_warning():
    x, y, _ = _arrays(n_clients=4)
    client = np.repeat(["train0", "train1", "test0", "test1"], 8)
    data = dataset_from_arrays(x, y, client, source="named")
    with recording() as said:
        get_split("npz", data)
    assert said and "client ids ['test0', 'test1', 'train0', 'train1'] look like group names" in said[0]


def test_metrics_record_the_client_ids_the_split_rule_and_the_package_versions():
    data = _dataset(n_clients=5)
    split = get_split("npz", data, seed=4)
    record = run_algorithm(resolve_run("centralized", data, config=ExactReadoutConfig(reservoir=ReservoirConfig(units=8))),
                           data, split)
    assert record["clients"] == {"train": list(split.train), "val": list(split.val), "test": list(split.test)}
    assert record["split_rule"] == "seeded shuffle of the clients (seed 4): 1 test, 1 validation, 3 train"
    versions = record["versions"]
    assert versions["numpy"] == np.__version__ and versions["tff_esn"] == "0.1.0"
    assert versions["tensorflow-federated"] == metadata.version("tensorflow-federated")
    assert versions["tensorflow"] == metadata.version("tensorflow")
    file_split = Split("npz", ("a",), test=("b",))
    assert get_split("incfed-wesad", _dataset(n_clients=8)).rule.startswith("named split 'incfed-wesad' (IncFed")
    assert file_split.rule == "given by the caller" and file_split == Split("npz", ("a",), test=("b",), rule="x")


def test_npz_paths_expand_the_home_folder(tmp_path, monkeypatch):
    x, y, client = _arrays()
    np.savez(tmp_path / "mine.npz", X=x, y=y, client=client)
    monkeypatch.setenv("HOME", str(tmp_path))
    data = load_source("npz:~/mine.npz", "ignored")
    assert data.source == f"npz:{tmp_path / 'mine.npz'}" and len(data.clients) == 6


# ------------------------------------------------------------------ outputs
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_files_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        path = write_json_atomic(tmp_path / "m.json", {"a": 1})
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == mode
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_a_run_folder_that_cannot_be_created_is_refused_and_a_creatable_one_is_left_uncreated(tmp_path):
    with pytest.raises(RunFolderError, match=r"--out /sys/tff-esn-probe: cannot create"):
        check_run_folder("/sys/tff-esn-probe")
    with pytest.raises(RunFolderError, match=r"cannot create it \(File name too long\)"):
        check_run_folder(tmp_path / ("n" * 300) / "run")
    assert check_run_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RunFolderError, match=r"cannot create it \(File name too long\)"):
        with run_lock(tmp_path / ("n" * 300)):
            pass


def test_run_folder_checks(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunFolderError, match=r"is a file, not a folder"):
        check_run_folder(tmp_path / "file")
    with pytest.raises(RunFolderError, match=r"cannot create or write it .* is a file"):
        check_run_folder(tmp_path / "file" / "sub")
    done = tmp_path / "done"
    (done / "checkpoints").mkdir(parents=True)
    np.savez(done / "checkpoints" / "state.npz", round=78, leaf_0=np.zeros(3, np.float32))
    with pytest.raises(RunFolderError, match=r"holds checkpoints of an earlier run \(round 78\); pass --resume"):
        check_run_folder(done, resumable=True)
    (done / "metrics.json").write_text("{}")
    with pytest.raises(RunFolderError, match=r"holds a finished run \(metrics.json\); pass --force to overwrite it, "
                                             r"--resume to continue it, or choose"):
        check_run_folder(done, resumable=True)
    with pytest.raises(RunFolderError, match=r"--resume --rounds 4: .* already holds 78 rounds"):
        check_run_folder(done, resume=True, rounds=4, resumable=True)
    assert check_run_folder(done, resume=True, rounds=78, resumable=True) == done
    assert check_run_folder(done, force=True) == done
    with pytest.raises(RunFolderError, match="give one of them"):
        check_run_folder(done, force=True, resume=True)
    legacy = tmp_path / "legacy"
    (legacy / "checkpoints" / "program_state_77").mkdir(parents=True)
    (legacy / "checkpoints" / "program_state_78").mkdir()
    for resume in (False, True):
        with pytest.raises(RunFolderError, match=r"legacy: its checkpoints \(round 78\) are TFF SavedModel folders "
                                                 r"checkpoints/program_state_N, which this version does not read .* "
                                                 r"start it over with --force"):
            check_run_folder(legacy, resume=resume, resumable=True)
    assert check_run_folder(legacy, force=True) == legacy


# ------------------------------------------------------------------ memory
def test_the_memory_estimate_refuses_a_reservoir_beyond_the_machine_with_the_units_that_fit():
    data = _dataset()
    split = Split("s", ("c0", "c1"), test=("c2",))
    huge = ReadoutConfig(reservoir=ReservoirConfig(units=100_000_000))
    with pytest.raises(MemoryLimitError, match=r"--units 100000000: the run needs ≈ 994.8 PiB \(reservoir "
                                               r"weights, ridge statistics, the data\), this machine has .* the most "
                                               r"units that fit are \d+\."):
        check_memory(huge, data, split)
    limit = 8 * 2 ** 30
    fits = estimate_memory(huge, data, split).largest_units(limit)
    small = ReadoutConfig(reservoir=ReservoirConfig(units=fits))
    assert check_memory(small, data, split, limit=limit).bytes <= limit
    with pytest.raises(MemoryLimitError):
        check_memory(ReadoutConfig(reservoir=ReservoirConfig(units=fits + 1)), data, split, limit=limit)


def test_the_thesis_models_add_their_cached_states():
    from tff_esn.federated.configs import FedAvgConfig, ThesisCentralConfig, ThesisModelConfig

    data = _dataset()  # 8 sequences of 12 steps per client
    split = Split("s", ("c0", "c1"), test=("c2",))  # carving a local hold-out: 2 × 5 cached statistics
    model = ThesisModelConfig(reservoir=ReservoirConfig(units=10), washout=2)
    assert estimate_memory(ThesisCentralConfig(model=model), data, split).linear == 32 + 16 * 10 + 4 * 16 * 10
    mean = ThesisModelConfig(reservoir=ReservoirConfig(units=10), state_mode="mean")
    assert estimate_memory(ThesisCentralConfig(model=mean), data, split).linear == 32 + 16 * 10 + 4 * 16
    assert estimate_memory(FedAvgConfig(model=model, out="o", states="faithful"), data, split).linear == 32 + 16 * 10
    estimate = estimate_memory(ReadoutConfig(), data, split)
    assert estimate.at(100) == 112 * 100 ** 2 + 192 * 100 + 96 + sum(b for _, b in estimate.data)
    assert estimate_memory(ReadoutConfig(), data, Split("s", ("c0", "c1"), ("c2",))).quadratic == 32 + 8 * 2


def test_a_deep_esn_reading_its_last_layer_counts_the_readouts_units_in_its_statistics_and_cached_states():
    from tff_esn.federated.configs import ThesisCentralConfig, ThesisModelConfig

    data = _dataset()
    deep = ReservoirConfig(units=10, layers=4, readout_layers="last")  # 40 units, the readout sees 10
    estimate = estimate_memory(ReadoutConfig(reservoir=deep), data, Split("s", ("c0", "c1"), ("c2",)))
    assert estimate.units == 40
    assert estimate.at(40) - estimate.constant == pytest.approx(16 * 40 ** 2 + (16 + 8 * 2) * 10 ** 2 + (32 + 16 * 2) * 10)
    every = ReservoirConfig(units=10, layers=4)
    assert estimate_memory(ReadoutConfig(reservoir=every), data, Split("s", ("c0", "c1"), ("c2",))).quadratic == 48
    model = ThesisModelConfig(reservoir=deep, washout=2)
    thesis = estimate_memory(ThesisCentralConfig(model=model), data, Split("s", ("c0", "c1"), test=("c2",)))
    assert thesis.linear * 40 == pytest.approx((32 + 16 * 10 + 4 * 16 * 10) * 10)  # 10 holders, 160 cached steps


@settings(max_examples=200, deadline=None)
@given(a=st.floats(1, 64), b=st.floats(0, 1e6), c=st.floats(0, 1e6), limit=st.floats(1e3, 1e15))
def test_largest_units_is_the_last_count_within_the_limit(a, b, c, limit):
    estimate = MemoryEstimate(1, a, b, c)
    n = estimate.largest_units(limit)
    assert estimate.at(n + 1) > limit and (n == 0 or estimate.at(n) <= limit)


def test_the_weights_term_is_a_lower_bound_of_the_measured_draw():
    units = 300
    config = ReservoirConfig(units=units)
    tracemalloc.start()
    recurrent_weights(config)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    estimate = estimate_memory(ReadoutConfig(reservoir=config), _dataset(), Split("s", ("c0",), ("c1",)))
    assert 16 * units ** 2 <= peak and (estimate.quadratic - 8) * units ** 2 <= 2 * peak  # 8: the client's Sᵀ S


# ------------------------------------------------------------------ privacy
def test_distributed_dp_needs_secure_aggregation():
    with pytest.raises(ValueError, match=r"distributed: .* add --secure-aggregation"):
        PrivacyConfig(dp_epsilon=1.0, dp_model="distributed")
    assert PrivacyConfig(dp_epsilon=1.0, dp_model="distributed", secure_aggregation=True).dp_model == "distributed"


# ------------------------------------------------------------------ the command line, before TensorFlow
def test_every_refusal_is_one_line_exit_2_before_tensorflow(tmp_path):
    x, y, client = _arrays()
    good, stray = tmp_path / "good.npz", tmp_path / "stray.npz"
    np.savez(good, X=x, y=y, client=client)
    y7 = y.copy()
    y7[0] = 7
    np.savez(stray, X=x, y=y7, client=client)
    np.savez(tmp_path / "one.npz", X=x, y=np.ones_like(y), client=client)
    np.savez(tmp_path / "alone.npz", X=x, y=y, client=np.full(len(y), "a"))
    (tmp_path / "file").write_text("x")
    (tmp_path / "finished").mkdir()
    (tmp_path / "finished" / "metrics.json").write_text("{}")
    (tmp_path / "ckpt" / "checkpoints").mkdir(parents=True)
    np.savez(tmp_path / "ckpt" / "checkpoints" / "state.npz", round=78, leaf_0=np.zeros(3, np.float32))
    out = str(tmp_path / "new")
    cases = {
        "stray label": (["run", "centralized", "--data", f"npz:{stray}", "--out", out],
                        "stray.npz: y: labels must be exactly the classes 0…7"),
        "one class": (["run", "centralized", "--data", f"npz:{tmp_path / 'one.npz'}", "--out", out],
                      "every label is 1: one class only"),
        "no test": (["run", "incfed", "--data", f"npz:{tmp_path / 'alone.npz'}", "--out", out],
                    "split 'npz' has no test clients"),
        "out is a file": (["run", "incfed", "--data", f"npz:{good}", "--out", str(tmp_path / "file")],
                          "is a file, not a folder"),
        "finished run": (["run", "incfed", "--data", f"npz:{good}", "--out", str(tmp_path / "finished")],
                         "holds a finished run (metrics.json); pass --force"),
        "checkpoints": (["run", "fedavg", "--data", f"npz:{good}", "--out", str(tmp_path / "ckpt")],
                        "holds checkpoints of an earlier run (round 78); pass --resume"),
        "fewer rounds": (["run", "fedavg", "--data", f"npz:{good}", "--out", str(tmp_path / "ckpt"), "--resume",
                          "--rounds", "4"], "--resume --rounds 4: "),
        "too few clients": (["run", "incfed", "--data", f"npz:{good}", "--split", "incfed-wesad", "--out", out],
                            "split 'incfed-wesad' needs more than 6 clients"),
        "bare path": (["run", "incfed", "--data", str(good), "--out", out], f"(a file? write npz:{good})"),
        "washout": (["run", "incfed", "--data", f"npz:{good}", "--out", out, "--washout", "12"],
                    "--washout 12 drops every step of the shortest sequence (12 steps)"),
        "memory": (["run", "incfed", "--data", f"npz:{good}", "--out", out, "--units", "100000000"],
                   "--units 100000000: the run needs ≈"),
        "distributed": (["run", "incfed", "--data", f"npz:{good}", "--out", out, "--dp-epsilon", "1",
                         "--dp-model", "distributed"], "add --secure-aggregation"),
        "out not creatable": (["run", "incfed", "--data", f"npz:{good}", "--out", "/sys/tff-esn-probe/run"],
                              "--out /sys/tff-esn-probe/run: cannot create"),
        "out name too long": (["run", "incfed", "--data", f"npz:{good}", "--out", str(tmp_path / ("n" * 300))],
                              "cannot create it (File name too long)"),
    }
    code = ("import sys, json\nfrom tff_esn.cli import main\nrcs = {}\n"
            f"for name, argv in {json.dumps({k: v[0] for k, v in cases.items()})}.items():\n"
            "    rcs[name] = main(argv)\n"
            "print(json.dumps(rcs), 'tensorflow' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    rcs, tf = proc.stdout.rsplit(" ", 1)
    assert tf.strip() == "False" and json.loads(rcs) == {name: 2 for name in cases}, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("tff-esn run: error: ")]
    assert len(errors) == len(cases), proc.stderr
    for (name, (_, message)), line in zip(cases.items(), errors):
        assert message in line, (name, line)
    assert not (tmp_path / "new").exists()


def test_force_overwrites_a_finished_run_and_no_test_runs_without_test(tmp_path, capsys):
    from tff_esn.cli import main

    x, y, client = _arrays()
    np.savez(tmp_path / "d.npz", X=x, y=y, client=client)
    argv = ["run", "centralized", "--data", f"npz:{tmp_path / 'd.npz'}", "--out", str(tmp_path / "run"),
            "--units", "10", "--state-mode", "mean"]
    assert main(argv) == 0
    (tmp_path / "run" / "rounds.csv").write_text("stale")
    assert main(argv) == 2 and "holds a finished run" in capsys.readouterr().err
    assert main([*argv, "--force"]) == 0 and not (tmp_path / "run" / "rounds.csv").exists()
    record = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert record["cli"]["force"] is True and sorted(sum(record["clients"].values(), [])) == sorted(set(client))
    np.savez(tmp_path / "alone.npz", X=x, y=y, client=np.full(len(y), "a"))
    assert main(["run", "incfed", "--backend", "numpy", "--data", f"npz:{tmp_path / 'alone.npz'}", "--out",
                 str(tmp_path / "alone"), "--no-test", "--units", "10"]) == 0
    record = json.loads((tmp_path / "alone" / "metrics.json").read_text())
    assert record["test"] is None and any("one training client ('a')" in w for w in record["warnings"])


# ------------------------------------------------------------------ class weights and float labels
def test_balanced_class_weights_give_a_class_without_training_labels_weight_0_and_a_warning():
    from sklearn.utils.class_weight import compute_class_weight

    from tff_esn.federated.configs import resolve_class_weight

    labels = np.array([0, 0, 0, 1, 3, 3])
    with recording() as said:
        weights = resolve_class_weight("balanced", labels, 4, "d")
    present = compute_class_weight("balanced", classes=np.array([0, 1, 3]), y=labels)
    np.testing.assert_allclose(weights, [present[0], present[1], 0.0, present[2]])
    assert said == ["d: y: class(es) [2] have no training labels; class_weight 'balanced' gives them weight 0 (the "
                    "model is never trained to predict them)"]
    every = np.array([0, 1, 1, 2])
    np.testing.assert_allclose(resolve_class_weight("balanced", every, 3),
                               compute_class_weight("balanced", classes=np.arange(3), y=every))


def test_the_cli_refusal_of_class_like_float_labels_names_task_classify(tmp_path, capsys):
    from tff_esn.cli import main

    x, y, client = _arrays(classes=2)
    path = tmp_path / "f.npz"
    np.savez(path, X=x, y=y.astype(np.float64), client=client)
    assert main(["run", "centralized", "--data", f"npz:{path}", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"tff-esn run: error: npz:{path}: y: float values 0.0 … 1.0 read like class labels but are float; "
                   "say what they are: --task classify (y is a class label), --task regress (y is the target) or "
                   "--task forecast (forecast X's channel, y unused), or save the series as `series` without y.")
    np.savez(path, X=x, y=y + 0.5, client=client)
    assert main(["run", "centralized", "--data", f"npz:{path}", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "y holds real numbers; say what they are: --task regress" in err and "classify" not in err


def test_float_targets_that_read_like_classes_warn_and_classify_with_task_classify(tmp_path):
    from tff_esn.common.tasks import Task

    x, y, client = _arrays(classes=2)
    path = tmp_path / "f.npz"
    np.savez(path, X=x, y=y.astype(np.float64), client=client)
    with recording() as said:
        regress = load_source(f"npz:{path}", "thesis")
    assert regress.task.kind == "regress"
    assert said == [f"npz:{path}: y: float values 0.0 … 1.0 read like class labels but are float; say what they "
                    "are: --task classify (y is a class label), --task regress (y is the target) or --task forecast "
                    "(forecast X's channel, y unused), or save the series as `series` without y; read as a "
                    "regression (--task regress)"]
    classes = load_source(f"npz:{path}", "thesis", task=Task("classify"))
    assert classes.task.kind == "classify" and classes.n_classes == 2
    np.testing.assert_array_equal(np.concatenate([c.y for c in classes.clients.values()]), y)
    assert np.concatenate([c.y for c in classes.clients.values()]).dtype == np.int64
    with recording() as said:
        load_source(f"npz:{path}", "thesis", task=Task("regress"))
    assert said == []
    np.savez(path, X=x, y=y + 0.5, client=client)
    with recording() as said:
        load_source(f"npz:{path}", "thesis")
    assert len(said) == 1 and "y holds real numbers; say what they are" in said[0]  # real, not class-like
    with pytest.raises(DataError, match=r"--task classify: y holds real targets \(not the whole numbers 0…K−1\)"):
        load_source(f"npz:{path}", "thesis", task=Task("classify"))
