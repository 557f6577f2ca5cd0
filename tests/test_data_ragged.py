"""Sequences of unequal length: each harvested at its own length, exactly.

References: ``tfa.layers.ESN`` and our Reservoir run on each sequence alone; the ragged
batch must give the same states and ridge statistics (≤ 1e-5). Also the numpy-2 ragged
npz (object arrays pickled with ``numpy._core`` names) and the crop option.
"""

import io
import json
import pickle
import pickletools
import zipfile

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tff_esn.cli import main
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.errors import DataError
from tff_esn.data.safe_pickle import UnsafePickleError
from tff_esn.data.sequences import ClientSequences, SequenceDataset, load_npz
from tff_esn.closed_form.harvest import Harvester
from tff_esn.esn.weights import ReservoirWeights, StateSpec
from tff_esn.closed_form.incfed import fit_incfed, federate_tff
from tff_esn.esn.layer import Reservoir
from tff_esn.esn.ridge import RidgeStats
from tff_esn.esn.states_tf import batch_statistics, run_reservoir_compiled

tfa = pytest.importorskip("tensorflow_addons")


def _weights(units=12, features=3, leaky=0.4, seed=0):
    return ReservoirWeights.from_config(
        ReservoirConfig(units=units, leaky=leaky, bias_scaling=0.3, seed=seed), features)


def _padded(lengths, features=3, seed=0):
    rng = np.random.default_rng(seed)
    x = np.zeros((len(lengths), max(lengths), features), np.float32)
    for i, n in enumerate(lengths):
        x[i, :n] = rng.normal(size=(n, features))
    return x


def _run(x, w, mode, washout=0, lengths=None):
    return run_reservoir_compiled(tf.constant(x), *[tf.constant(a) for a in w.layer_weights()], w.leaky, mode,
                                  washout, None if lengths is None else tf.constant(lengths, tf.int32)).numpy()


# ------------------------------------------------------------------ states
def test_ragged_batch_equals_tfa_esn_on_each_sequence():
    w = _weights(units=16, leaky=0.6)
    lengths = np.array([4, 11, 1, 7, 11])
    x = _padded(lengths)
    esn = tfa.layers.ESN(16, leaky=w.leaky, use_bias=True, return_sequences=True)
    esn.build((None, None, 3))
    for var, value in ((esn.cell.kernel, w.kernel), (esn.cell.recurrent_kernel, w.recurrent), (esn.cell.bias, w.bias)):
        var.assign(value)
    states, last, mean = (_run(x, w, m, 0, lengths) for m in ("all", "last", "mean"))
    for i, n in enumerate(lengths):
        ref = esn(x[i:i + 1, :n]).numpy()[0]
        np.testing.assert_allclose(states[i, :n], ref, atol=1e-5, rtol=0)
        assert np.all(states[i, n:] == 0)
        np.testing.assert_allclose(last[i], ref[-1], atol=1e-5, rtol=0)
        np.testing.assert_allclose(mean[i], ref.mean(axis=0), atol=1e-5, rtol=0)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lengths=st.lists(st.integers(1, 9), min_size=1, max_size=6), leaky=st.sampled_from([1.0, 0.3]),
       washout=st.integers(0, 3), seed=st.integers(0, 50))
def test_ragged_states_equal_each_sequence_alone(lengths, leaky, washout, seed):
    lengths = np.array(lengths)
    w = _weights(leaky=leaky, seed=seed)
    x = _padded(lengths, seed=seed)
    for mode in ("last", "mean", "all"):
        wo = 0 if mode == "last" else min(washout, int(lengths.min()) - 1)
        got = _run(x, w, mode, wo, lengths)
        for i, n in enumerate(lengths):
            alone = _run(x[i:i + 1, :n], w, mode, wo)[0]
            np.testing.assert_allclose(got[i, :n - wo] if mode == "all" else got[i], alone, atol=1e-5, rtol=0)


def _tf_stats(x, targets, w, mode, washout, bias, lengths):
    """The TensorFlow backend's statistics of a batch (the IncFed client inside TFF)."""
    a, b, n = batch_statistics(tf.constant(x), tf.constant(targets), *[tf.constant(a) for a in w.layer_weights()],
                               w.leaky, mode, washout, bias, lengths=tf.constant(lengths, tf.int32))
    return RidgeStats(a.numpy(), b.numpy(), int(n), 1, bias)


@pytest.mark.parametrize("mode, washout, bias", [("all", 0, True), ("all", 2, False), ("last", 0, True),
                                                  ("mean", 2, True)])
def test_ragged_ridge_statistics_equal_the_sum_over_sequences(mode, washout, bias):
    w = _weights()
    lengths = np.array([3, 12, 5, 12, 8, 4])
    x = _padded(lengths, seed=1)
    targets = np.eye(2, dtype=np.float32)[[0, 1, 1, 0, 1, 0]]
    got = _tf_stats(x, targets, w, mode, washout, bias, lengths)
    alone = RidgeStats.sum([_tf_stats(x[i:i + 1, :n], targets[i:i + 1], w, mode, washout, bias, np.array([n]))
                            for i, n in enumerate(lengths)])
    assert got.n == alone.n == (len(lengths) if mode != "all" else int(np.sum(lengths - washout)))
    np.testing.assert_allclose(got.A, alone.A, atol=1e-5 * np.abs(alone.A).max(), rtol=0)
    np.testing.assert_allclose(got.B, alone.B, atol=1e-5 * np.abs(alone.B).max(), rtol=0)


def test_washout_is_checked_against_the_shortest_sequence():
    w = _weights()
    x = _padded([3, 9])
    with pytest.raises(ValueError, match=r"washout: must be shorter than the shortest sequence \(3 steps\), got 3"):
        Reservoir(units=12, state_mode="mean", washout=3)(x[:1, :3])
    data = _dataset({"a": [3, 9], "b": [5, 6]})
    with pytest.raises(ValueError, match=r"shorter than the shortest sequence \(3 steps\), got 4"):
        Harvester(data, StateSpec("all", 4)).stats(w, "a")


# ------------------------------------------------------------------ harvester and algorithms
def _dataset(lengths_by_client, features=3, seed=0):
    rng = np.random.default_rng(seed)
    clients = {}
    for k, (cid, lengths) in enumerate(lengths_by_client.items()):
        y = rng.integers(0, 2, len(lengths))
        x = _padded(lengths, features, seed=seed + k) + y[:, None, None] * 0.5
        clients[cid] = ClientSequences(x, y, np.array(lengths))
    return SequenceDataset(clients, 2, tuple(f"f{i}" for i in range(features)), ("0", "1"), "ragged")


@pytest.mark.parametrize("mode", ["all", "mean", "last"])
def test_harvester_on_ragged_clients_equals_each_sequence_alone(mode):
    data = _dataset({"a": [7, 2, 9, 2, 5, 9, 3], "b": [4, 4, 4]})
    w = _weights()
    spec = StateSpec(mode, 1 if mode != "last" else 0)
    harvester = Harvester(data, spec, batch_size=3)
    client = data.clients["a"]
    assert client.ragged and client.x.shape == (7, 9, 3) and not data.clients["b"].ragged and data.ragged
    alone = [ClientSequences(client.x[i:i + 1, :n], client.y[i:i + 1]) for i, n in enumerate(client.lengths)]
    single = Harvester(data, spec)
    expected = RidgeStats.sum([single.stats_of(w, c) for c in alone])
    got = harvester.stats(w, "a")
    assert got.n == expected.n
    np.testing.assert_allclose(got.B, expected.B, atol=1e-5 * np.abs(expected.B).max(), rtol=0)
    np.testing.assert_allclose(got.A, expected.A, atol=1e-5 * np.abs(expected.A).max(), rtol=0)
    features = harvester.features(w, "a")  # rows stay in the client's order
    score_mode = "mean" if mode == "all" else mode
    for i, n in enumerate(client.lengths):
        np.testing.assert_allclose(features.states[i], _run(client.x[i:i + 1, :n], w, score_mode, spec.washout)[0],
                                   atol=1e-5, rtol=0)
    np.testing.assert_array_equal(features.labels, client.y)


def test_incfed_tff_on_ragged_clients_equals_numpy_and_pooled():
    data = _dataset({"a": [7, 2, 9, 3], "b": [4, 4, 4], "c": [12, 6]})
    w = _weights()
    spec = StateSpec("all", 1)
    harvester = Harvester(data, spec)
    clients = [harvester.stats(w, c) for c in data.client_ids]
    pooled = harvester.stats_of(w, data.pooled(data.client_ids))
    summed = RidgeStats.sum(clients)
    assert pooled.n == summed.n == sum(int(np.sum(c.lengths - 1)) for c in data.clients.values() if c.ragged) + 9
    np.testing.assert_allclose(pooled.B, summed.B, atol=1e-5 * np.abs(summed.B).max(), rtol=0)
    numpy_w = fit_incfed(clients, 0.1)
    tff_w = federate_tff(w, list(data.clients.values()), 2, spec, 0.1).readout
    np.testing.assert_allclose(tff_w, numpy_w, atol=1e-5 * np.abs(numpy_w).max(), rtol=0)


# ------------------------------------------------------------------ npz files
def _npz(path, **members):
    """An .npz whose members are given as arrays or as raw .npy bytes."""
    with zipfile.ZipFile(path, "w") as zf:
        for key, value in members.items():
            if isinstance(value, bytes):
                zf.writestr(f"{key}.npy", value)
            else:
                buf = io.BytesIO()
                np.save(buf, value, allow_pickle=True)
                zf.writestr(f"{key}.npy", buf.getvalue())
    return path


def _object_array(seqs):
    arr = np.empty(len(seqs), object)
    for i, s in enumerate(seqs):
        arr[i] = s
    return arr


def numpy2_npy(arr: np.ndarray) -> bytes:
    """The .npy bytes numpy ≥ 2 writes for an object array: protocol-3 pickle naming ``numpy._core``.

    numpy 2's ``_core/multiarray.py`` sets ``_reconstruct.__module__ = 'numpy._core.multiarray'``
    (ndarray pickles refer to it), where numpy 1 writes ``numpy.core.multiarray``; the rest of
    the stream (``numpy ndarray``, ``numpy dtype``, BINBYTES payloads) is the same.
    """
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    raw = buf.getvalue()
    assert raw.count(b"cnumpy.core.multiarray\n_reconstruct\n") == 1
    return raw.replace(b"cnumpy.core.multiarray\n", b"cnumpy._core.multiarray\n")


def test_numpy2_ragged_npz_loads(tmp_path):
    seqs = [np.arange(6.0).reshape(3, 2), np.arange(10.0).reshape(5, 2) / 7]
    raw = numpy2_npy(_object_array(seqs))
    header_end = raw.index(b"\n") + 1
    globals_named = {arg for op, arg, _ in pickletools.genops(raw[header_end:]) if op.name == "GLOBAL"}
    assert globals_named == {"numpy._core.multiarray _reconstruct", "numpy ndarray", "numpy dtype"}
    with pytest.raises(ModuleNotFoundError, match="numpy._core"):  # what crashed before on numpy 1
        pickle.loads(raw[header_end:])
    path = _npz(tmp_path / "np2.npz", X=raw, y=np.array([0, 1]), client=np.array(["u", "v"]))
    data = load_npz(path)
    assert data.ragged and data.clients["v"].lengths is None and data.clients["v"].x.shape == (1, 5, 2)
    np.testing.assert_allclose(data.clients["v"].x[0], seqs[1], rtol=1e-6)


def test_numpy2_names_outside_the_allow_list_are_still_refused(tmp_path):
    raw = numpy2_npy(_object_array([np.zeros((2, 1)), np.zeros((2, 1))])).replace(
        b"cnumpy._core.multiarray\n_reconstruct\n", b"cnumpy._core.multiarray\nfromfile\n")
    path = _npz(tmp_path / "np2bad.npz", X=raw, y=np.array([0, 1]), client=np.array([0, 1]))
    with pytest.raises(UnsafePickleError, match=r"np2bad.npz: X: refuses to load the global "
                                                r"numpy._core.multiarray.fromfile"):
        load_npz(path)


def test_crop_keeps_the_last_steps_and_pad_keeps_everything(tmp_path):
    seqs = [np.full((n, 1), float(n)) for n in (2, 5, 3)]
    path = _npz(tmp_path / "r.npz", X=_object_array(seqs), y=np.array([0, 1, 0]), client=np.array([0, 0, 1]))
    padded = load_npz(path)
    assert padded.clients["0"].lengths.tolist() == [2, 5] and padded.shortest == 2
    np.testing.assert_array_equal(padded.clients["0"].x[0, :, 0], [2, 2, 0, 0, 0])
    with pytest.warns(UserWarning, match="2–5 steps keep their last 2"):
        cropped = load_npz(path, ragged="crop")
    assert not cropped.ragged and cropped.clients["0"].x.shape == (2, 2, 1)
    with pytest.warns(UserWarning):
        assert load_npz(path, length=1).clients["1"].x.shape == (1, 1, 1)
    with pytest.raises(DataError, match=r"r.npz: length: must be in \[1, 2\]"):
        load_npz(path, length=3)


def _write_ragged_npz(path, n_per_class=6, seed=0):
    """Two classes told apart by the input *late* in long sequences (cropping to the shortest loses it)."""
    rng = np.random.default_rng(seed)
    seqs, ys, clients, splits = [], [], [], []
    for k, group in enumerate(["train"] * 3 + ["val", "test"]):
        for i in range(2 * n_per_class):
            y = i % 2
            n = int(rng.integers(3, 16))
            s = rng.normal(size=(n, 2)) * 0.3
            s[:max(1, n - 3), 0] += 1.0 if y else -1.0  # the class is in all but the last 3 steps
            seqs.append(s)
            ys.append(y)
            clients.append(f"c{k}")
            splits.append(group)
    return _npz(path, X=_object_array(seqs), y=np.array(ys), client=np.array(clients), split=np.array(splits))


def test_cli_runs_ragged_npz_whole_or_cropped(tmp_path, capsys):
    path = _write_ragged_npz(tmp_path / "r.npz")
    flags = ["--units", "20", "--state-mode", "mean", "--l2", "1e-3"]
    acc = {}
    for ragged in ("pad", "crop"):
        out = tmp_path / ragged
        assert main(["run", "centralized", "--data", f"npz:{path}", "--ragged", ragged, "--out", str(out),
                     *flags]) == 0
        acc[ragged] = json.loads((out / "metrics.json").read_text())["test"]["accuracy"]
    assert acc["pad"] >= 0.9 > acc["crop"]
    assert main(["run", "incfed", "--data", f"npz:{path}", "--out", str(tmp_path / "inc"), *flags]) == 0
    assert json.loads((tmp_path / "inc" / "metrics.json").read_text())["test"]["accuracy"] == acc["pad"]
    capsys.readouterr()
    assert main(["run", "centralized", "--data", f"npz:{path}", "--washout", "3", "--out", str(tmp_path / "w"),
                 *flags]) == 2  # refused before the run, in one line
    assert "--washout 3 drops every step of the shortest sequence (3 steps)" in capsys.readouterr().err
    assert main(["run", "fedip", "--data", f"npz:{path}", "--out", str(tmp_path / "f"), *flags, "--rounds", "1"]) == 0
    assert json.loads((tmp_path / "f" / "metrics.json").read_text())["test"]["n"] > 0
    capsys.readouterr()
    assert main(["run", "centralized", "--ragged", "crop", "--out", str(tmp_path / "s")]) == 2
    assert "--ragged: applies to npz:FILE sources only" in capsys.readouterr().err
