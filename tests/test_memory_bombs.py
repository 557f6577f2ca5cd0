"""Small files that unpack or pad to much memory: refused from their shape before loading, in
one line, at a measured peak RSS (subprocesses; resource.getrusage(RUSAGE_CHILDREN))."""

import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tff_esn.closed_form.configs import IncFedConfig
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import dataset_from_arrays, load_npz
from tff_esn.data.sources import source_layout
from tff_esn.data.ts import load_ts
from tff_esn.esn.states_numpy import HARVEST_BATCH, HARVEST_VALUES, ragged_batches
from tff_esn.runs.memory import MemoryLimitError, check_memory

ROOT = Path(__file__).resolve().parents[1]
MB = 2 ** 20


def zero_bomb(path: Path, steps: int, y=(0,), client=(0,), rows: int = 1) -> Path:
    """An npz whose X (rows, steps, 1) float32 zeros is written deflated in chunks (never whole in memory)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("X.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False,
                                                      "shape": (rows, steps, 1)})
            chunk = np.zeros(2 ** 22, np.float32).tobytes()
            for start in range(0, rows * steps, 2 ** 22):
                fh.write(chunk[:4 * min(2 ** 22, rows * steps - start)])
        for key, value in (("y", np.array(y)), ("client", np.array(client))):
            with archive.open(f"{key}.npy", "w") as fh:
                np.lib.format.write_array(fh, value)
    return path


def ts_bomb(folder: Path, steps: int) -> Path:
    """A UEA .ts pair: one univariate series of ``steps`` and eleven of 50 for training."""
    head = "@problemName Bomb\n@univariate true\n@equalLength false\n@classLabel true a b\n@data\n"
    rng = np.random.default_rng(0)
    rows = [",".join(f"{v:.3f}" for v in rng.standard_normal(steps if i == 0 else 50)) + f":{'ab'[i % 2]}"
            for i in range(12)]
    (folder / "Bomb_TRAIN.ts").write_text(head + "\n".join(rows) + "\n")
    (folder / "Bomb_TEST.ts").write_text(head + "\n".join(rows[1:5]) + "\n")
    return folder / "Bomb"


LAUNCHER = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=open(sys.argv[0] + '.peak', 'w')); "
            "sys.exit(done.returncode)")
"""Runs a command and writes its peak RSS (KiB) beside: a small parent, because Linux counts the
memory of the process that forked (pytest's, with TensorFlow loaded) in its child's peak."""


def _peak_run(args: list[str], tmp_path: Path, limit: int | None = None,
              code: str | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """``tff-esn ARGS`` (or Python ``code``) in a subprocess (``limit``: the machine's memory it sees) and its peak
    RSS (MiB)."""
    patch = "" if limit is None else f"import tff_esn.runs.memory as m; m.machine_memory = lambda: {limit}; "
    code = code or f"import sys; {patch}from tff_esn.cli import main; sys.exit(main(sys.argv[1:]))"
    report = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", LAUNCHER.replace("sys.argv[0]", repr(str(report))),
                           sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return done, int((tmp_path / "run.peak").read_text()) / 1024


def test_an_npz_that_unpacks_to_500_mb_of_one_class_is_refused_from_its_labels_without_loading_x(tmp_path):
    bomb = zero_bomb(tmp_path / "bomb.npz", 125_000_000)
    assert bomb.stat().st_size < 2 * MB
    done, peak = _peak_run(["run", "incfed", "--data", f"npz:{bomb}", "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "y: every label is 0: one class only" in lines[0], done.stderr
    assert peak < 400, peak  # X alone is 477 MiB


def test_an_npz_bomb_beyond_the_machine_is_refused_by_its_memory_before_its_labels_are_read(tmp_path):
    bomb = zero_bomb(tmp_path / "bomb.npz", 50_000_000)  # one class: the labels would refuse it too, later
    done, peak = _peak_run(["run", "incfed", "--data", f"npz:{bomb}", "--out", str(tmp_path / "out")], tmp_path,
                           limit=256 * MB)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "the run needs ≈" in lines[0] and "(50000000-step) sequence" in lines[0] \
        and "this machine has 256.0 MiB" in lines[0], lines
    assert peak < 150, peak  # X alone is 191 MiB


def _two_class_bomb_refused_before_x_loads(tmp_path: Path, steps: int) -> float:
    """Peak RSS (MiB) of ``tff-esn run incfed`` refusing a two-class npz bomb of 2 × ``steps`` zeros in one line
    for its split (a class only in test), X unread."""
    bomb = zero_bomb(tmp_path / "bomb.npz", steps, y=(0, 1), client=(0, 1), rows=2)
    done, peak = _peak_run(["run", "incfed", "--data", f"npz:{bomb}", "--out", str(tmp_path / "out")], tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "class(es) '0' occur in the test clients but in no training client" in lines[0], lines
    return peak


def test_a_two_class_npz_bomb_is_refused_for_its_split_before_x_loads(tmp_path):
    assert _two_class_bomb_refused_before_x_loads(tmp_path, 50_000_000) < 150  # X alone is 381 MiB


@pytest.mark.slow
def test_the_real_size_two_class_npz_bomb_is_refused_in_seconds_under_1_5_gb(tmp_path):
    start = time.perf_counter()
    peak = _two_class_bomb_refused_before_x_loads(tmp_path, 250_000_000)  # 1.9 GB of zeros in a 1.9 MB file
    assert peak < 1536 and time.perf_counter() - start < 30, peak


def test_the_npz_header_gives_the_shape_and_a_refusal_names_the_memory_needed(tmp_path):
    bomb = zero_bomb(tmp_path / "bomb.npz", 25_000_000, y=(0, 1), client=(0, 1), rows=2)
    layout = source_layout(f"npz:{bomb}")
    assert layout.longest == 25_000_000 and layout.sequences == 2 and layout.stored_bytes == 200_000_000
    expected = (r"npz:.*bomb.npz: the run needs ≈ 1\.\d GiB, .* for the harvest of the longest \(25000000-step\) "
                r"sequence .*; this machine has 512\.0 MiB; cut the sequences \(--ragged crop")
    with pytest.raises(MemoryLimitError, match=expected):
        check_memory(IncFedConfig(), layout, limit=512 * MB)
    with pytest.raises(DataError, match=r"y: must have shape \(1,\) like X, got \(2,\)"):
        load_npz(zero_bomb(tmp_path / "rows.npz", 50_000_000, y=(0, 1)))  # against X's declared rows, X unread


def test_a_long_ts_series_is_refused_in_one_line_naming_the_memory_before_it_is_parsed(tmp_path):
    stem = ts_bomb(tmp_path, 1_000_000)
    done, peak = _peak_run(["run", "incfed", "--data", f"ts:{stem}", "--out", str(tmp_path / "out")],
                           tmp_path, limit=256 * MB)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "the run needs ≈" in lines[0] and "1000000-step" in lines[0] \
        and "this machine has 256.0 MiB" in lines[0], done.stderr
    assert peak < 250, peak  # parsing the series alone takes ~80 MB over the interpreter's


@pytest.mark.slow
def test_a_long_ts_series_runs_with_memory_in_proportion_to_the_data(tmp_path):
    stem = ts_bomb(tmp_path, 120_000)
    done, peak = _peak_run(["run", "incfed", "--backend", "numpy", "--data", f"ts:{stem}", "--out",
                            str(tmp_path / "out")], tmp_path)
    assert done.returncode == 0, done.stderr
    assert peak < 450, peak  # every step's states of the sample alone would take 12 · 120 000 · 100 · 4 B = 550 MiB


def test_ts_header_fields_are_checked_against_the_cases(tmp_path):
    head = "@problemName H\n@univariate true\n@equalLength true\n@seriesLength {n}\n@classLabel true a b\n@data\n"
    rows = "1,2,3:a\n4,5,6:b\n"
    for n, match in (("20", r"@seriesLength 20, but case 0 has 3 steps"),
                     ("1000000000", r"@seriesLength 1000000000, but case 0 has 3 steps")):
        (tmp_path / "H_TRAIN.ts").write_text(head.format(n=n) + rows)
        (tmp_path / "H_TEST.ts").write_text(head.format(n=3) + rows)
        with pytest.raises(DataError, match=match):
            load_ts(tmp_path / "H")
    (tmp_path / "H_TRAIN.ts").write_text(head.format(n=3).replace("@seriesLength 3\n", "") + "1,2,3:a\n4,5:b\n")
    with pytest.raises(DataError, match=r"@equalLength true, but the cases have 2–3 steps"):
        load_ts(tmp_path / "H")


def test_ragged_batches_are_the_fixed_batches_for_ordinary_data_and_run_a_long_sequence_alone():
    rng = np.random.default_rng(0)
    for _ in range(50):  # ordinary data: batches of 256 sequences by length, so every sum keeps its order
        n, features = int(rng.integers(1, 2000)), int(rng.integers(1, 13))
        lengths = rng.integers(1, 2000, n)
        order = np.argsort(lengths, kind="stable")
        expected = [order[i:i + HARVEST_BATCH] for i in range(0, n, HARVEST_BATCH)]
        got = ragged_batches(lengths, features)
        assert len(got) == len(expected) and all(np.array_equal(a, b) for a, b in zip(got, expected))
    batches = ragged_batches(np.array([6_000_000] + [50] * 11), 1)
    assert [b.tolist() for b in batches] == [list(range(1, 12)), [0]]  # not 12 rows padded to 6·10⁶ steps
    lengths = rng.integers(1, 100_000, 3000)
    for rows in ragged_batches(lengths, 3):
        assert rows.size == 1 or rows.size * lengths[rows].max() * 3 <= HARVEST_VALUES
    assert sorted(np.concatenate(ragged_batches(lengths, 3)).tolist()) == list(range(3000))


@pytest.mark.parametrize("seed", range(6))
def test_the_harvest_gathers_each_batch_from_the_clients_as_from_their_padded_pool(seed):
    from tff_esn.closed_form.harvest import Harvester
    from tff_esn.data.sequences import ClientSequences
    from tff_esn.esn.weights import StateSpec

    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(rng.integers(1, 5)):
        n, steps = int(rng.integers(1, 9)), int(rng.integers(2, 12)) if seed % 3 else 7  # seeds 0, 3: equal lengths
        lengths = rng.integers(1, steps + 1, n) if seed % 3 else None
        parts.append(ClientSequences(rng.normal(size=(n, steps, 2)), np.zeros(n, int), lengths))
    harvester = Harvester(None, StateSpec("all"), batch_size=int(rng.integers(1, 6)))
    for (rows, x, lengths), (rows0, x0, lengths0) in zip(harvester.batches(*parts),
                                                         harvester.batches(ClientSequences.concat(parts)), strict=True):
        assert rows.tolist() == rows0.tolist() and x.tobytes() == x0.tobytes() and x.shape == x0.shape
        assert (lengths is None and lengths0 is None) or lengths.tolist() == lengths0.tolist()


def test_a_pooled_harvest_of_a_long_sequence_and_many_short_ones_holds_no_padded_copy_of_the_pool(monkeypatch):
    import tracemalloc

    import tff_esn.esn.states_numpy
    from tff_esn.closed_form.harvest import Harvester
    from tff_esn.esn.hyperparameters import ReservoirConfig
    from tff_esn.esn.weights import ReservoirWeights, StateSpec

    rng = np.random.default_rng(0)
    seqs = [rng.normal(size=(20_000, 1))] + [rng.normal(size=(20, 1)) for _ in range(499)]
    data = dataset_from_arrays(seqs, np.arange(500) % 2, ["long"] + ["short"] * 499, source="t")
    weights = ReservoirWeights.from_config(ReservoirConfig(units=8, seed=0), 1)
    monkeypatch.setattr(tff_esn.esn.states_numpy, "HARVEST_VALUES", 40_000)  # batches of at most 40 000 steps
    tracemalloc.start()
    Harvester(data, StateSpec("mean")).cache(weights, ["long", "short"])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10 * MB  # the pool padded to 20 000 steps: 500 · 20 000 · 4 B = 38 MiB


def test_a_long_sequence_among_short_ones_is_harvested_as_if_alone(monkeypatch):
    import tff_esn.esn.states_numpy
    from tff_esn.closed_form.harvest import Harvester
    from tff_esn.esn.hyperparameters import ReservoirConfig
    from tff_esn.esn.weights import ReservoirWeights, StateSpec

    rng = np.random.default_rng(1)
    monkeypatch.setattr(tff_esn.esn.states_numpy, "HARVEST_VALUES", 2000)
    seqs = [rng.normal(size=(300, 2)).astype(np.float32)] + \
        [rng.normal(size=(int(t), 2)).astype(np.float32) for t in rng.integers(20, 60, 9)]
    data = dataset_from_arrays(seqs, np.arange(10) % 2, np.zeros(10, int), source="t")
    weights = ReservoirWeights.from_config(ReservoirConfig(units=8, seed=0), 2)
    batched = Harvester(data, StateSpec("all")).stats(weights, "0")
    alone = Harvester(data, StateSpec("all"), batch_size=1).stats(weights, "0")
    assert [len(r) for r, _, _ in Harvester(data, StateSpec("all")).batches(data.clients["0"])] == [9, 1]
    np.testing.assert_allclose(batched.A, alone.A, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(batched.B, alone.B, rtol=1e-5, atol=1e-5)


def test_the_baseline_features_are_computed_in_blocks_with_the_same_bits(monkeypatch):
    import tff_esn.esn.states_numpy
    from tff_esn.runs.baselines import sequence_features

    def whole(x):
        x = np.asarray(x, np.float64)
        return np.concatenate([x.mean(axis=1), x.std(axis=1), x.min(axis=1), x.max(axis=1), x[:, -1]], axis=1)

    rng = np.random.default_rng(2)
    monkeypatch.setattr(tff_esn.esn.states_numpy, "HARVEST_VALUES", 500)
    for _ in range(30):
        x = (rng.normal(size=(int(rng.integers(1, 40)), int(rng.integers(1, 300)), int(rng.integers(1, 5))))
             * 10.0 ** rng.integers(-3, 4)).astype(np.float32)
        assert np.array_equal(sequence_features(x, False), whole(x))
    assert sequence_features(np.zeros((0, 5, 2), np.float32), False).shape == (0, 10)


def test_the_estimate_of_a_long_series_among_short_ones_counts_it_alone_in_its_batch():
    from tff_esn.data.layout import DataLayout
    from tff_esn.runs.memory import data_bytes, harvest_cells

    layout = DataLayout("ts:bomb", (np.array([6_000_000] + [50] * 11), np.full(4, 50)), 1, 8 * 6_000_750)
    assert harvest_cells(layout) == 6_000_000  # main: 16 rows × 6·10⁶ steps
    parts = dict(data_bytes(layout)[0])
    padded = 4 * (12 * 6_000_000 + 4 * 50)
    assert parts["the padded sequences"] == padded
    assert max(parts.values()) == 2 * padded + 16 * HARVEST_VALUES  # pooled + carved copies, baseline features block
    assert harvest_cells(DataLayout("npz:x", (np.full(300, 40),), 3)) == HARVEST_BATCH * 40


@pytest.mark.slow
def test_a_long_series_among_short_ones_is_harvested_without_padding_them_to_its_length(tmp_path):
    code = """import numpy as np
from tff_esn.closed_form.harvest import Harvester
from tff_esn.data.sequences import dataset_from_arrays
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.esn.weights import ReservoirWeights, StateSpec
rng = np.random.default_rng(0)
seqs = [rng.normal(size=(2_000_000, 1)).astype(np.float32)] + [rng.normal(size=(50, 1)).astype(np.float32)] * 11
data = dataset_from_arrays(seqs, np.arange(12) % 2, np.zeros(12, int), source="t")
Harvester(data, StateSpec("mean")).stats(ReservoirWeights.from_config(ReservoirConfig(units=10), 1), "0")"""
    done, peak = _peak_run([], tmp_path, code=code)
    assert done.returncode == 0, done.stderr
    assert peak < 360, peak  # a batch of all 12 padded to 2·10⁶ steps: 3 × 92 MiB more (inputs, time-major, mask)


@pytest.mark.slow
def test_the_45_mb_ts_bomb_is_refused_in_seconds_where_its_estimate_exceeds_the_machine(tmp_path):
    stem = ts_bomb(tmp_path, 6_000_000)  # ≈ 39 MB: one 6·10⁶-step series and eleven of 50 steps
    start = time.perf_counter()
    done, peak = _peak_run(["run", "incfed", "--data", f"ts:{stem}", "--out", str(tmp_path / "out")], tmp_path,
                           limit=2 ** 30)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "the run needs ≈ 1.1 GiB" in lines[0] and "(6000000-step) sequence" in lines[0] \
        and "this machine has 1.0 GiB" in lines[0], lines
    assert time.perf_counter() - start < 30 and peak < 1536, peak
