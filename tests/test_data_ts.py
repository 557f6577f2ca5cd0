"""The UEA/UCR ``.ts`` data source: files written here, the real BasicMotions in a slow test."""

import csv
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tff_esn.data.errors import DataError, MissingDataError
from tff_esn.data.sources import load_source
from tff_esn.data.splits import get_split
from tff_esn.data.ts import load_ts, scan_ts

HEADER = "#comment\n@problemName Toy\n@timeStamps false\n@univariate {uni}\n@dimensions {dims}\n" \
         "@classLabel true {labels}\n@data\n"
AEON_WHEEL = "aeon==1.6.0"
AEON_DATA = Path("/work/uea/ex/aeon/datasets/data")


def _write(folder: Path, name: str, train: list[str], test: list[str], *, dims: int = 1,
           labels: str = "up down", header: str | None = None) -> Path:
    head = header if header is not None else HEADER.format(uni=str(dims == 1).lower(), dims=dims, labels=labels)
    (folder / f"{name}_TRAIN.ts").write_text(head + "\n".join(train) + "\n")
    (folder / f"{name}_TEST.ts").write_text(head + "\n".join(test) + "\n")
    return folder / name


def _case(rng: np.random.Generator, steps: int, dims: int, label: str) -> tuple[np.ndarray, str]:
    x = np.round(rng.normal(size=(steps, dims)), 4)
    return x, ":".join(",".join(f"{v:g}" for v in x[:, d]) for d in range(dims)) + f":{label}"


@pytest.mark.parametrize("dims", [1, 3])
def test_values_labels_and_groups_round_trip_over_unequal_lengths(tmp_path, dims):
    rng = np.random.default_rng(dims)
    labels = ["down", "up", "up", "down", "up"]
    cases = [_case(rng, int(rng.integers(3, 9)), dims, lab) for lab in labels]
    stem = _write(tmp_path, "Toy", [c[1] for c in cases[:3]], [c[1] for c in cases[3:]], dims=dims)
    data = load_source(f"ts:{stem}", "ignored")
    assert data.source == f"ts:{stem}" and data.label_names == ("up", "down") and data.n_classes == 2
    assert data.groups == {"train": "train", "test": "test"} and data.client_ids == ("train", "test")
    for cid, part in (("train", cases[:3]), ("test", cases[3:])):
        c = data.clients[cid]
        np.testing.assert_array_equal(c.y, [("up", "down").index(lab) for lab in labels][:3 if cid == "train" else 5][
            0 if cid == "train" else 3:])
        np.testing.assert_array_equal(c.steps, [x.shape[0] for x, _ in part])
        for i, (x, _) in enumerate(part):
            np.testing.assert_allclose(c.x[i, :x.shape[0]], x, rtol=1e-6)
            assert not c.x[i, x.shape[0]:].any()  # padding is zero
    split = get_split("npz", data)
    assert split.train == ("train",) and split.test == ("test",)


def test_labels_without_a_header_list_are_sorted_and_crop_cuts_to_the_shortest(tmp_path):
    header = "@problemName Toy\n@classLabel true\n@data\n"
    stem = _write(tmp_path, "T", ["1,2,3:b", "4,5:a"], ["6,7,8,9:a"], header=header)
    with pytest.warns(UserWarning, match="2–4 steps keep their last 2"):
        data = load_ts(stem, ragged="crop")
    assert data.label_names == ("a", "b")
    np.testing.assert_array_equal(data.clients["train"].y, [1, 0])
    np.testing.assert_array_equal(data.clients["train"].x[:, :, 0], [[2, 3], [4, 5]])
    np.testing.assert_array_equal(data.clients["test"].x[:, :, 0], [[8, 9]])


def test_missing_values_are_refused_unless_interpolation_is_asked_for(tmp_path):
    stem = _write(tmp_path, "M", ["1,?,3,NaN:up", "1,2:down"], ["?,5,6:up"])
    with pytest.raises(DataError, match=r"M_TRAIN.ts: case 0 .*missing values.*--missing interpolate"):
        load_ts(stem)
    data = load_source(f"ts:{stem}", "ignored", missing="interpolate")
    np.testing.assert_allclose(data.clients["train"].x[0, :, 0], [1, 2, 3, 3])
    np.testing.assert_allclose(data.clients["test"].x[0, :, 0], [5, 5, 6])
    stem = _write(tmp_path, "E", ["?,?:up", "1,2:down"], ["1,2:up"])
    with pytest.raises(DataError, match="no value at all"):
        load_ts(stem, missing="interpolate")
    with pytest.raises(ValueError, match="missing: expected one of"):
        load_ts(stem, missing="zero")


@pytest.mark.parametrize("train, header, message", [
    (["1,2:up", "3,4:down"], "@problemName X\n@timeStamps true\n@classLabel true up down\n@data\n", "time-stamped"),
    ([], "@problemName X\n@classLabel true up down\n", "no @data line"),
    (["1,2:up", "3,4:down"], "@problemName X\n@classLabel false\n@data\n", "declares no class labels"),
    (["1,2:up", "3,4:down"], "@problemName X\n@targetlabel true\n@data\n", "target is not a number"),
    (["1,2:up", "3,4:left"], None, r"\['left'\] are not in @classLabel"),
    (["1,2:3,4:up", "3,4:down"], None, "different numbers of dimensions"),
    (["1,2:3,4:up", "3,4:5,6:down"], None, "declares 1 dimension, the cases have 2"),
    (["1,2:3:up", "3,4:down"], None, r":8: dimensions of one case have different lengths \[1, 2\]"),
    (["1,x:up", "3,4:down"], None, ":8: dimension 0: not comma-separated numbers"),
    (["1,2,3"], None, "a class label last"),
    (["1,inf:up", "3,4:down"], None, r"X\[0\]: contains NaN or inf"),
    ([], None, "@data holds no cases"),
    (["1,2:up", "3,4:up"], "@problemName X\n@classLabel true up\n@data\n", "a single class"),
    (["1,2:up"], "garbage\n@data\n", "expected a @header line"),
])
def test_malformed_files_are_one_line_data_errors(tmp_path, train, header, message):
    stem = _write(tmp_path, "Bad", train, ["1,2:up"], header=header)
    with pytest.raises(DataError, match=message) as err:
        load_ts(stem)
    assert "\n" not in str(err.value)


def test_train_and_test_files_must_agree_and_exist(tmp_path):
    stem = _write(tmp_path, "A", ["1,2:up", "3,4:down"], ["1,2:3,4:up"],
                  header="@problemName A\n@classLabel true up down\n@data\n")
    with pytest.raises(DataError, match="A_TEST.ts: 2 dimensions, but A_TRAIN.ts has 1"):
        load_ts(stem)
    stem = _write(tmp_path, "B", ["1,2:up", "3,4:down"], ["1,2:left"],
                  header="@problemName B\n@classLabel true\n@data\n")
    with pytest.raises(DataError, match=r"B_TEST.ts: class label\(s\) \['left'\] do not occur in B_TRAIN.ts"):
        load_ts(stem)
    (tmp_path / "B_TEST.ts").unlink()
    with pytest.raises(MissingDataError, match="B_TEST.ts: .ts file does not exist"):
        load_ts(stem)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['chunk'\]"):
        load_source(f"ts:{stem}", "x", chunk=3)


def _real_basic_motions(tmp_path_factory) -> Path:
    """The real BasicMotions: the unpacked aeon wheel when present, else the wheel fetched into a cache."""
    if (AEON_DATA / "BasicMotions").is_dir():
        return AEON_DATA / "BasicMotions" / "BasicMotions"
    cache = Path.home() / ".cache" / "tff_esn" / "aeon-wheel"
    wheels = sorted(cache.glob("aeon-1.6.0-*.whl"))
    if not wheels:
        fetched = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache),
                                  AEON_WHEEL], capture_output=True, text=True)
        wheels = sorted(cache.glob("aeon-1.6.0-*.whl"))
        if fetched.returncode or not wheels:
            pytest.skip(f"the aeon 1.6.0 wheel cannot be fetched (offline?): {fetched.stderr.strip()[-200:]}")
    out = tmp_path_factory.mktemp("aeon")
    with zipfile.ZipFile(wheels[0]) as wheel:
        for member in ("TRAIN", "TEST"):
            wheel.extract(f"aeon/datasets/data/BasicMotions/BasicMotions_{member}.ts", out)
    return out / "aeon" / "datasets" / "data" / "BasicMotions" / "BasicMotions"


@pytest.mark.slow
def test_the_real_basic_motions(tmp_path_factory):
    data = load_ts(_real_basic_motions(tmp_path_factory))
    assert data.label_names == ("Standing", "Running", "Walking", "Badminton")
    assert data.clients["train"].x.shape == (40, 100, 6) and data.clients["test"].x.shape == (40, 100, 6)
    np.testing.assert_array_equal(np.bincount(data.clients["train"].y), [10, 10, 10, 10])
    assert scan_ts(Path(f"{data.source[3:]}_TRAIN.ts")).labels[0] == "Standing"


@pytest.mark.slow
def test_compare_on_the_real_basic_motions(tmp_path_factory, tmp_path):
    from tff_esn.cli.compare import folder_name
    from tff_esn.cli.compare.heterogeneity import Comparison, run_comparison

    source = f"ts:{_real_basic_motions(tmp_path_factory)}"
    comparison = Comparison(source, "ignored", "npz", partitions=("iid", "dirichlet:0.1"), clients=10, seeds=(0, 1),
                            algorithms=("centralized", "incfed", "fedavg-ridge"))
    paths = run_comparison(comparison, tmp_path / folder_name(source), progress=False)
    with open(paths["csv"]) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 + 2 * 2 * 2 and paths["csv"].parent.name == "ts-BasicMotions"
    accuracy = {(r["algorithm"], r["partition"], r["seed"]): float(r["accuracy"]) for r in rows}
    for seed in "01":  # IncFed equals the centralized readout whatever the partition
        assert accuracy[("incfed", "iid", seed)] == accuracy[("incfed", "dirichlet:0.1", seed)] == \
            accuracy[("centralized", "natural", seed)] >= 0.9
