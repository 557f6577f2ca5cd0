"""load_source (caching, errors), get_split (every name), load_npz."""

import numpy as np
import pytest

from tff_esn.data.seed_sources import pipelines
from tff_esn.data.safe_pickle import UnsafePickleError
from tff_esn.data.sequences import ClientSequences, SequenceDataset, load_npz
from tff_esn.common.tasks import Task
from tff_esn.data.errors import DataError
from tff_esn.data.sources import load_source, source_stand_in, source_task
from tff_esn.data.splits import SPLIT_NAMES, get_split
from tff_esn.data.seed_sources.synthetic_wesad import generate_wesad

SMALL = dict(subjects=("S2", "S3"), minutes=2.0, seed=5)


@pytest.mark.parametrize("pipeline, shape, classes", [("incfed-wesad", (350, 8), 4), ("pfedrr-wesad", (700, 8), 4),
                                                      ("fedip-wesad", (700, 8), 4), ("thesis", (30, 4), 2)])
def test_wesad_pipelines_from_files_equal_the_in_memory_synthetic_source(tmp_path, pipeline, shape, classes):
    options = {"sequence_length": 30} if pipeline == "thesis" else {}
    generate_wesad(tmp_path / "wesad", subjects=SMALL["subjects"], minutes=SMALL["minutes"], seed=SMALL["seed"])
    files = load_source(f"wesad:{tmp_path / 'wesad'}", pipeline, cache_dir=tmp_path / "cache", **options)
    memory = load_source("synthetic-wesad", pipeline, cache_dir=tmp_path / "cache", **SMALL, **options)
    assert files.client_ids == memory.client_ids == ("S2", "S3") and files.n_classes == classes
    for cid in files.client_ids:
        assert files.clients[cid].x.shape[1:] == shape
        np.testing.assert_array_equal(files.clients[cid].x, memory.clients[cid].x)
        np.testing.assert_array_equal(files.clients[cid].y, memory.clients[cid].y)
    if pipeline != "thesis":
        y = np.concatenate([c.y for c in files.clients.values()])
        assert set(np.unique(y)) == {0, 1, 2, 3}


def test_second_load_comes_from_the_cache(tmp_path, monkeypatch):
    first = load_source("synthetic-wesad", "incfed-wesad", cache_dir=tmp_path, **SMALL)
    assert len(list((tmp_path / "datasets").glob("incfed-wesad-*.npz"))) == 1

    def fail(*args, **kwargs):
        raise AssertionError("rebuilt instead of read from the cache")

    monkeypatch.setattr(pipelines.IncFedWesad, "build", fail)
    again = load_source("synthetic-wesad", "incfed-wesad", cache_dir=tmp_path, **SMALL)
    np.testing.assert_array_equal(first.clients["S3"].x, again.clients["S3"].x)
    with pytest.raises(AssertionError, match="rebuilt"):  # another option → another entry
        load_source("synthetic-wesad", "incfed-wesad", cache_dir=tmp_path, **SMALL, chunk=100)


def test_a_seed_source_takes_the_task_as_own_data_does(tmp_path):
    with pytest.raises(DataError, match="--task regress: its y holds integer class labels"):
        load_source("synthetic-wesad", "incfed-wesad", cache_dir=tmp_path, **SMALL, task=Task("regress"))
    data = load_source("synthetic-wesad", "incfed-wesad", cache_dir=tmp_path, **SMALL)
    forecast = load_source("synthetic-wesad", "incfed-wesad", cache_dir=tmp_path, **SMALL, task=Task("forecast", 2))
    assert data.task.kind == "classify" and forecast.task == Task("forecast", 2, data.feature_names[0])
    x = data.clients["S2"].x
    np.testing.assert_array_equal(forecast.clients["S2"].x, x[:, :-2])
    np.testing.assert_array_equal(forecast.clients["S2"].y, x[:, 2:, 0])


def test_cache_dir_defaults_to_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TFF_ESN_CACHE", str(tmp_path / "env"))
    load_source("synthetic-wesad", "pfedrr-wesad", subjects=("S4",), minutes=1.0)
    assert list((tmp_path / "env" / "datasets").glob("pfedrr-wesad-*.npz"))


@pytest.mark.parametrize("source, pipeline, options, message", [
    ("synthetic-wesad", "incfed-hhar", {}, "reads HHAR"),
    ("synthetic-hhar", "thesis", {"minutes": 0.05}, "reads WESAD"),
    ("synthetic-wesad", "nope", {}, "pipeline: expected one of"),
    ("wesad", "thesis", {}, "source: expected"),
    ("mnist:/x", "thesis", {}, "source: expected"),
    ("synthetic-wesad", "thesis", {"subjects": ["S12"]}, "subjects: expected"),
    ("synthetic-wesad", "incfed-wesad", {"chunks": 3}, r"unknown option\(s\) \['chunks'\]"),
    ("synthetic-wesad", "incfed-wesad", {"chunk": 0}, "chunk: expected an integer"),
    ("synthetic-wesad", "thesis", {"ma_mode": "median"}, "ma_mode: expected one of"),
])
def test_bad_sources_pipelines_and_options(tmp_path, source, pipeline, options, message):
    with pytest.raises(ValueError, match=message):
        load_source(source, pipeline, cache_dir=tmp_path, **options)


def test_missing_real_data_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_source(f"wesad:{tmp_path / 'none'}", "thesis", cache_dir=tmp_path)


def test_the_synthetic_default_is_small_and_complete(tmp_path):
    data = load_source("synthetic-wesad", "incfed-wesad", cache_dir=tmp_path)
    assert len(data.clients) == 15 and data.source == "synthetic-wesad"
    split = get_split("incfed-wesad", data)
    assert (len(split.train), len(split.val), len(split.test)) == (9, 3, 3)


# ------------------------------------------------------------------ splits
def _dataset(ids):
    clients = {cid: ClientSequences(np.zeros((2, 3, 1), np.float32), np.array([0, 1])) for cid in ids}
    return SequenceDataset(clients, 2, ("f",), ("0", "1"), "test")


WESAD = _dataset([f"S{n}" for n in (*range(2, 12), *range(13, 18))][::-1])
HHAR = _dataset(list("ihgfedcba"))


@pytest.mark.parametrize("name, data, sizes", [
    ("thesis-primal", WESAD, (10, 4, 1)), ("thesis-discriminative", WESAD, (10, 2, 1)),
    ("incfed-wesad", WESAD, (9, 3, 3)), ("pfedrr-wesad", WESAD, (9, 3, 3)), ("fedip-wesad", WESAD, (9, 3, 3)),
    ("incfed-hhar", HHAR, (5, 2, 2)), ("pfedrr-hhar", HHAR, (5, 2, 2)), ("fedip-hhar", HHAR, (5, 2, 2)),
])
def test_published_split_sizes(name, data, sizes):
    split = get_split(name, data)
    assert (len(split.train), len(split.val), len(split.test)) == sizes
    everyone = split.train + split.val + split.test + sum(split.extra.values(), ())
    assert sorted(everyone) == sorted(data.client_ids)
    if name == "thesis-discriminative":
        assert split.extra == {"discriminator": ("S13", "S14")} and split.test == ("S17",)
    if name == "incfed-wesad":
        assert split.val == ("S11", "S13", "S14") and split.test == ("S15", "S16", "S17")
    if name.endswith("hhar"):
        assert split.train == tuple("abcde") and split.test == ("h", "i")


@pytest.mark.parametrize("fraction, k", [(0.25, 3), (0.5, 5), (0.75, 7), (1.0, 9)])
def test_train_fractions_keep_validation_and_test_fixed(fraction, k):
    full = get_split("incfed-wesad", WESAD)
    part = get_split("incfed-wesad", WESAD, train_fraction=fraction, seed=2)
    assert len(part.train) == k and set(part.train) <= set(full.train)
    assert (part.val, part.test) == (full.val, full.test)
    assert part == get_split("incfed-wesad", WESAD, train_fraction=fraction, seed=2)
    if k < 9:
        others = {get_split("incfed-wesad", WESAD, train_fraction=fraction, seed=s).train for s in range(6)}
        assert len(others) > 1


def test_split_errors():
    with pytest.raises(ValueError, match="split: expected one of"):
        get_split("random", WESAD)
    with pytest.raises(ValueError, match="train_fraction"):
        get_split("incfed-wesad", WESAD, train_fraction=0)
    with pytest.raises(ValueError, match="needs more than 6 clients"):
        get_split("incfed-wesad", _dataset(["S2", "S3", "S4"]))
    assert set(SPLIT_NAMES) >= {"thesis-primal", "npz"}


# ------------------------------------------------------------------ npz
def _write_npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def test_an_npz_stand_in_holds_its_clients_groups_and_labels_in_one_zero_step(tmp_path):
    x = np.random.default_rng(1).normal(size=(6, 7, 2))
    path = _write_npz(tmp_path / "a.npz", X=x, y=np.array([0, 1, 2, 0, 1, 2]), client=np.array([1, 1, 2, 2, 3, 3]),
                      split=np.array(["train", "train", "val", "val", "test", "test"]))
    stand_in, data = source_stand_in(f"npz:{path}"), load_source(f"npz:{path}", "ignored")
    assert (stand_in.client_ids, stand_in.groups, stand_in.n_classes) == (data.client_ids, data.groups, 3)
    for cid in data.client_ids:
        np.testing.assert_array_equal(stand_in.clients[cid].y, data.clients[cid].y)
        np.testing.assert_array_equal(stand_in.clients[cid].x, np.zeros((2, 1, 2)))
    real = _write_npz(tmp_path / "r.npz", X=x, y=np.linspace(0, 1, 6), client=np.array([1, 1, 2, 2, 3, 3]))
    assert source_stand_in(f"npz:{real}") is None
    assert source_stand_in("synthetic-wesad") is None and source_stand_in(f"ts:{tmp_path}/none") is None


def test_npz_regular_and_ragged_sequences(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 7, 2))
    path = _write_npz(tmp_path / "a.npz", X=x, y=np.array([0, 1, 2, 0, 1, 2]), client=np.array([1, 1, 2, 2, 3, 3]),
                      split=np.array(["train", "train", "val", "val", "test", "test"]))
    data = load_source(f"npz:{path}", "ignored")
    assert data.client_ids == ("1", "2", "3") and data.n_classes == 3 and data.groups["2"] == "val"
    np.testing.assert_allclose(data.clients["2"].x, x[2:4], rtol=1e-6)
    assert get_split("npz", data) == get_split("npz", data, seed=1)
    assert (get_split("npz", data).train, get_split("npz", data).test) == (("1",), ("3",))
    ragged = np.empty(3, object)
    for i in range(3):
        ragged[i] = rng.normal(size=(5 + i, 2))
    path = _write_npz(tmp_path / "b.npz", X=ragged, y=np.array([0, 1, 0]), client=np.array(["u", "v", "w"]))
    data = load_npz(path)
    assert data.ragged and data.shortest == 5
    np.testing.assert_allclose(data.clients["w"].x[0], ragged[2], rtol=1e-6)
    with pytest.warns(UserWarning, match="keep their last 5 steps"):
        data = load_npz(path, ragged="crop")
    np.testing.assert_allclose(data.clients["w"].x[0], ragged[2][-5:], rtol=1e-6)
    assert len(get_split("npz", data).test) == 1 and not data.ragged


@pytest.mark.parametrize("arrays, message", [
    (dict(X=np.zeros((2, 3, 1)), y=np.array([0, 1])), r"missing array\(s\) \['client'\]"),
    (dict(X=np.zeros((2, 3)), y=np.array([0, 1]), client=np.array([0, 1])), "X: must be"),
    (dict(X=np.zeros((2, 3, 1)), y=np.array([0, 1, 1]), client=np.array([0, 1])), r"y: must have shape \(2,\)"),
    (dict(X=np.zeros((2, 3, 1)), y=np.array(["a", "b"]), client=np.array([0, 1])), "integer labels"),
    (dict(X=np.zeros((2, 3, 1)), y=np.array([0.5, 0.5]), client=np.array([0, 1])), "targets that vary"),
    (dict(X=np.zeros((2, 3, 1)), y=np.array([0.5, np.nan]), client=np.array([0, 1])), "real targets contain NaN"),
    (dict(X=np.full((2, 3, 1), np.nan), y=np.array([0, 1]), client=np.array([0, 1])), r"X\[0\]: contains NaN"),
    (dict(X=np.zeros((2, 3, 1)), y=np.array([0, 1]), client=np.array([0, 0]), split=np.array(["train", "test"])),
     "in several groups"),
])
def test_npz_errors(tmp_path, arrays, message):
    with pytest.raises(ValueError, match=message):
        load_npz(_write_npz(tmp_path / "bad.npz", **arrays))


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_npz_object_array_with_code_is_rejected(tmp_path):
    marker = tmp_path / "pwned"
    x = np.empty(2, object)
    x[0] = x[1] = _Payload(str(marker))
    path = _write_npz(tmp_path / "evil.npz", X=x, y=np.array([0, 1]), client=np.array([0, 1]))
    with pytest.raises(UnsafePickleError):
        load_npz(path)
    assert not marker.exists()


@pytest.mark.parametrize("source, series, task", [("narma10", True, "forecast"), ("narma20", True, "forecast"),
                                                  ("mackey-glass", True, "forecast"), ("narma1", False, None),
                                                  ("narma010", False, None), ("narma10:x", False, None),
                                                  ("synthetic-wesad", False, None), ("npz:f.npz", False, None)])
def test_a_series_name_is_read_once_and_means_forecast(source, series, task):
    from tff_esn.data.seed_sources.generators import generator
    from tff_esn.data.source_names import named_task, series_source
    from tff_esn.registry.algorithms import get_algorithm
    from tff_esn.registry.defaults import FORECAST_STATES, source_defaults

    assert (series_source(source), named_task(source)) == (series, task)
    if series:
        assert callable(generator(source)) and source_task(source) == "forecast"
        assert source_defaults(get_algorithm("incfed"), source).items() >= FORECAST_STATES.items()
    else:
        with pytest.raises((KeyError, TypeError)):
            generator(source)
