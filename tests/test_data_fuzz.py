"""Malformed input fuzz: every case loads or raises one clear DataError.

Hypothesis mutates valid npz files, WESAD subject pickles and HHAR CSVs (missing keys,
wrong dtypes/ranks/rates, NaN/inf, empty clients, labels out of range, pickles naming
other modules or carrying code, numpy-2 pickles, truncated and corrupted bytes, bad
headers, mixed types). Each case must either load into a valid data set or raise
:class:`~tff_esn.data.errors.DataError` whose message is one line naming the file and a
field; anything else is a crash. The loaders are called in-process (milliseconds per
case); a few cases go through ``tff-esn`` (in-process ``main``; as processes in the slow
suite) to check exit code 2, one line on stderr and no traceback. ``test_fuzz_tally`` prints the
tally (cases, clear errors, loads, crashes); ``TFF_ESN_FUZZ_EXAMPLES`` sets the cases per
loader (default 100).
"""

import collections
import io
import os
import pickle
import re
import subprocess
import sys
import traceback
import zipfile

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tff_esn.cli import main
from tff_esn.data.seed_sources import hhar, wesad
from tff_esn.data.errors import DataError
from tff_esn.data.sequences import load_npz

TALLY: collections.Counter = collections.Counter()
FUZZ = settings(max_examples=int(os.environ.get("TFF_ESN_FUZZ_EXAMPLES", "100")), deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _outcome(kind: str, load, path, field_pattern: str):
    """Runs ``load()``; tallies and returns ``"load"``/``"error"``; a crash or a vague message fails."""
    TALLY[(kind, "cases")] += 1
    try:
        result = load()
    except DataError as err:
        message = str(err)
        TALLY[(kind, "error")] += 1
        assert "\n" not in message, message
        assert str(path) in message, f"the message does not name the file: {message}"
        assert re.search(field_pattern, message), f"the message names no field: {message}"
        return "error", message
    except Exception:  # noqa: BLE001 — any other exception is the failure this test looks for
        TALLY[(kind, "crash")] += 1
        raise AssertionError(f"{kind}: crash instead of a DataError:\n{traceback.format_exc()}") from None
    TALLY[(kind, "load")] += 1
    return "load", result


def _truncate_or_corrupt(data, raw: bytes) -> bytes:
    how = data.draw(st.one_of(st.just("none"), st.sampled_from(["truncate", "flip"])), label="bytes")
    if not raw:
        return raw
    if how == "truncate":
        return raw[:data.draw(st.integers(0, len(raw) - 1), label="cut")]
    if how == "flip":
        raw = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 4), label="flips")):
            raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
        return bytes(raw)
    return raw


# ------------------------------------------------------------------ npz
def _npy(value) -> bytes:
    buf = io.BytesIO()
    np.save(buf, value, allow_pickle=True)
    return buf.getvalue()


def _object_array(items):
    arr = np.empty(len(items), object)
    for i, item in enumerate(items):
        arr[i] = item
    return arr


_RECONSTRUCT = b"cnumpy.core.multiarray\n_reconstruct\n"
FOREIGN_GLOBALS = [("os", "system"), ("builtins", "eval"), ("subprocess", "Popen"), ("numpy", "load"),
                   ("collections", "OrderedDict"), ("numpy._core.multiarray", "fromfile"), ("nosuchmodule", "x")]


def _npz_members(data) -> dict:
    """A valid npz's members (arrays), then one mutation of a member."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16), label="seed"))
    n = data.draw(st.integers(2, 6), label="n")
    features = data.draw(st.integers(1, 3), label="F")
    ragged = data.draw(st.booleans(), label="ragged")
    lengths = rng.integers(1, 7, n) if ragged else np.full(n, int(rng.integers(1, 7)))
    seqs = [rng.normal(size=(int(t), features)) for t in lengths]
    x = _object_array(seqs) if ragged else np.stack(seqs)
    y = rng.permutation(np.arange(n) % data.draw(st.integers(2, 3), label="C"))
    client = rng.choice(np.array(["a", "b", "c"]), n)
    members = {"X": x, "y": y, "client": client}
    if data.draw(st.booleans(), label="with split"):
        members["split"] = np.array(["train"] * n)
    mutation = data.draw(st.one_of(st.just("none"), st.sampled_from([
        "one class", "drop", "extra key", "y float", "y str", "y bool", "y 2-D", "y negative", "y huge", "y short",
        "X 2-D", "X 4-D", "X str", "X complex", "X object 2-D", "X object of dicts", "X element 1-D",
        "X element ragged lists", "X features differ", "X nan", "X inf", "X huge", "X empty", "X zero steps",
        "X zero features", "client 2-D", "client objects", "split bad", "split mixed", "split no train",
        "foreign global", "numpy-2 pickle",
    ])), label="mutation")
    pos = (int(rng.integers(n)), int(rng.integers(lengths.min())), int(rng.integers(features)))
    if mutation == "one class":
        members["y"] = np.zeros(n, np.int64)
    elif mutation == "drop":
        del members[data.draw(st.sampled_from(["X", "y", "client"]))]
    elif mutation == "extra key":
        members["notes"] = np.arange(3)
    elif mutation == "y float":
        members["y"] = y + 0.5
    elif mutation == "y str":
        members["y"] = y.astype(str)
    elif mutation == "y bool":
        members["y"] = y.astype(bool)
    elif mutation == "y 2-D":
        members["y"] = y[:, None]
    elif mutation == "y negative":
        members["y"] = y - 1 - y
    elif mutation == "y huge":
        members["y"] = y + 10 ** 9
    elif mutation == "y short":
        members["y"] = y[:-1]
    elif mutation == "X 2-D":
        members["X"] = np.zeros((n, 3))
    elif mutation == "X 4-D":
        members["X"] = np.zeros((n, 2, 2, 1))
    elif mutation == "X str":
        members["X"] = np.full((n, 2, features), "a")
    elif mutation == "X complex":
        members["X"] = np.ones((n, 2, features)) * 1j
    elif mutation == "X object 2-D":
        members["X"] = _object_array(seqs).reshape(n, 1)
    elif mutation == "X object of dicts":
        members["X"] = _object_array([{"a": 1}] * n)
    elif mutation == "X element 1-D":
        members["X"] = _object_array([np.zeros(3)] + seqs[1:])
    elif mutation == "X element ragged lists":
        members["X"] = _object_array([[[1.0], [2.0, 3.0]]] + seqs[1:])
    elif mutation == "X features differ":
        members["X"] = _object_array([np.zeros((2, features + 1))] + seqs[1:])
    elif mutation in ("X nan", "X inf", "X huge"):
        value = {"X nan": np.nan, "X inf": -np.inf, "X huge": 1e300}[mutation]
        if ragged:
            seqs[pos[0]][pos[1], pos[2]] = value
            members["X"] = _object_array(seqs)
        else:
            members["X"] = x.copy()
            members["X"][pos] = value
    elif mutation == "X empty":
        members["X"] = np.zeros((0, 2, features))
    elif mutation == "X zero steps":
        members["X"] = _object_array([np.zeros((0, features))] + seqs[1:])
    elif mutation == "X zero features":
        members["X"] = np.zeros((n, 2, 0))
    elif mutation == "client 2-D":
        members["client"] = client[:, None]
    elif mutation == "client objects":
        members["client"] = _object_array([{"id": 1}] * n)
    elif mutation == "split bad":
        members["split"] = np.array(["training"] * n)
    elif mutation == "split mixed":
        members["client"] = np.array(["a"] * n)
        members["split"] = np.array(["train"] * (n - 1) + ["test"])
    elif mutation == "split no train":
        members["split"] = np.array(["test"] * n)
    elif mutation == "foreign global":
        module, name = data.draw(st.sampled_from(FOREIGN_GLOBALS))
        members["X"] = _npy(_object_array(seqs)).replace(_RECONSTRUCT, f"c{module}\n{name}\n".encode())
    elif mutation == "numpy-2 pickle":
        members["X"] = _npy(_object_array(seqs)).replace(b"cnumpy.core.multiarray\n", b"cnumpy._core.multiarray\n")
    return members


NPZ_FIELDS = r": (X|y|client|split|length)\b|missing array|not an \.npz|does not exist"


@FUZZ
@given(data=st.data())
def test_npz_fuzz(data, tmp_path_factory):
    members = _npz_members(data)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", data.draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))) as zf:
        for key, value in members.items():
            zf.writestr(f"{key}.npy", value if isinstance(value, bytes) else _npy(value))
    path = tmp_path_factory.mktemp("npz") / "data.npz"
    path.write_bytes(_truncate_or_corrupt(data, buf.getvalue()))
    kind, result = _outcome("npz", lambda: load_npz(path), path, NPZ_FIELDS)
    if kind == "load":
        for c in result.clients.values():
            assert np.all(np.isfinite(c.x)) and c.real == result.task.real  # float y: a regression
            assert np.all(np.isfinite(c.y)) if c.real else 0 <= c.y.min() and c.y.max() < result.n_classes
            assert c.steps.min() >= 1 and c.x.shape[2] == len(result.feature_names) >= 1


@pytest.mark.parametrize("field, offsets, value", [
    ("flags", (6, 8), 0x1),  # encrypted member: zipfile raises RuntimeError
    ("flags", (6, 8), 0x40),  # strong encryption: NotImplementedError
    ("method", (8, 10), 99),  # an unsupported compression method: NotImplementedError
])
def test_zip_features_we_cannot_read_are_data_errors(tmp_path, field, offsets, value):
    """Regressions found by the fuzz (2000 cases): zip flags/methods zipfile refuses."""
    raw = bytearray(io.BytesIO(_npy(np.zeros((2, 3, 1)))).getvalue())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("X.npy", bytes(raw))
        zf.writestr("y.npy", _npy(np.array([0, 1])))
        zf.writestr("client.npy", _npy(np.array([0, 1])))
    data = bytearray(buf.getvalue())
    local, central = data.index(b"PK\x03\x04"), data.index(b"PK\x01\x02")
    for start, offset in ((local, offsets[0]), (central, offsets[1])):
        data[start + offset:start + offset + 2] = value.to_bytes(2, "little")
    path = tmp_path / "odd.npz"
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match=r"odd.npz: X: not a readable .npy member"):
        load_npz(path)


# ------------------------------------------------------------------ WESAD
class _Code:
    """Pickles as a call of ``func(*args)``: what a malicious subject file would carry."""

    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _wesad_subject(seconds: int, rng) -> dict:
    n = seconds * wesad.CHEST_RATE
    chest = {k: rng.normal(size=(n, w)) for k, w in wesad.CHEST_CHANNELS.items()}
    wrist = {k: rng.normal(size=(seconds * wesad.WRIST_RATES[k], w)) for k, w in wesad.WRIST_CHANNELS.items()}
    return {"signal": {"chest": chest, "wrist": wrist}, "label": rng.integers(0, 5, n), "subject": "S2"}


def _wesad_bytes(data) -> bytes:
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16), label="seed"))
    subject = _wesad_subject(data.draw(st.integers(1, 2), label="seconds"), rng)
    streams = [("chest", k) for k in wesad.CHEST_CHANNELS] + [("wrist", k) for k in wesad.WRIST_CHANNELS]
    device, key = data.draw(st.sampled_from(streams), label="stream")
    stream = subject["signal"][device][key]
    mutation = data.draw(st.one_of(st.just("none"), st.sampled_from([
        "missing key", "wrong rate", "short stream", "1-D stream", "list stream", "string stream",
        "object stream", "complex stream", "nan", "label codes", "label float", "label nan", "label 2-D",
        "label odd length", "not a dict", "int keys", "code payload",
    ])), label="mutation")
    if mutation == "missing key":
        where = data.draw(st.sampled_from(["top", "signal", "device"]))
        if where == "top":
            del subject[data.draw(st.sampled_from(["signal", "label", "subject"]))]
        elif where == "signal":
            del subject["signal"][device]
        else:
            del subject["signal"][device][key]
    elif mutation == "wrong rate":
        rate = wesad.CHEST_RATE if device == "chest" else wesad.WRIST_RATES[key]
        subject["signal"][device][key] = np.zeros((len(stream) // rate * data.draw(st.sampled_from([32, 64, 128, 350])),
                                                   stream.shape[1]))
    elif mutation == "short stream":
        subject["signal"][device][key] = stream[:-1]
    elif mutation == "1-D stream":
        subject["signal"][device][key] = stream[:, 0]
    elif mutation == "list stream":
        subject["signal"][device][key] = stream.tolist()
    elif mutation == "string stream":
        subject["signal"][device][key] = stream.astype(str)
    elif mutation == "object stream":
        subject["signal"][device][key] = stream.astype(object)
    elif mutation == "complex stream":
        subject["signal"][device][key] = stream * 1j
    elif mutation == "nan":
        stream[0, 0] = np.nan
    elif mutation == "label codes":
        subject["label"][0] = data.draw(st.sampled_from([-1, 8, 99]))
    elif mutation == "label float":
        subject["label"] = subject["label"] + 0.5
    elif mutation == "label nan":
        subject["label"] = subject["label"].astype(float)
        subject["label"][3] = np.nan
    elif mutation == "label 2-D":
        subject["label"] = subject["label"][:, None]
    elif mutation == "label odd length":
        subject["label"] = subject["label"][:-7]
    elif mutation == "not a dict":
        subject = data.draw(st.sampled_from([[1, 2], None, 3, "S2"]))
    elif mutation == "int keys":
        subject[1] = 2
        del subject["subject"]
    elif mutation == "code payload":
        func, args = data.draw(st.sampled_from([(os.system, ("true",)), (eval, ("1",)), (print, ("x",)),
                                                (subprocess.Popen, (["true"],))]))
        subject["signal"]["wrist"]["BVP"] = _Code(func, args)
    raw = pickle.dumps(subject, protocol=data.draw(st.sampled_from([2, 3, 4]), label="protocol"))
    return _truncate_or_corrupt(data, raw)


WESAD_FIELDS = r"\['|pickle|refuses to load the global|cannot be read|expected a dict"


@FUZZ
@given(data=st.data())
def test_wesad_fuzz(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("wesad") / "S2.pkl"
    path.write_bytes(_wesad_bytes(data))
    kind, result = _outcome("wesad", lambda: wesad.load_subject(path), path, WESAD_FIELDS)
    if kind == "load":
        assert result["label"].shape[0] % wesad.CHEST_RATE == 0


# ------------------------------------------------------------------ HHAR
def _hhar_text(data) -> bytes:
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16), label="seed"))
    n = data.draw(st.integers(1, 8), label="rows")
    frame = pd.DataFrame({
        "Index": np.arange(n), "Arrival_Time": 1_400_000_000_000 + np.arange(n) * 5,
        "Creation_Time": 1_400_000_000_000_000 + np.arange(n) * 5_000_000,
        "x": rng.normal(size=n), "y": rng.normal(size=n), "z": rng.normal(size=n), "User": "a", "Model": "s3",
        "Device": "s3_1", "gt": rng.choice(np.array([*hhar.ACTIVITIES, "null"]), n)})
    mutation = data.draw(st.one_of(st.just("none"), st.sampled_from([
        "drop column", "rename column", "shuffle columns", "extra column", "header only", "empty file",
        "junk bytes", "text in number", "float in integer", "empty cell", "huge integer", "unknown label",
        "unterminated quote", "extra field", "nan and inf",
    ])), label="mutation")
    column = data.draw(st.sampled_from(["Index", "Arrival_Time", "Creation_Time", "x", "y", "z"]), label="column")
    row = data.draw(st.integers(0, n - 1), label="row")
    cells = frame.astype(object)
    if mutation == "drop column":
        cells = cells.drop(columns=data.draw(st.sampled_from(list(hhar.COLUMNS))))
    elif mutation == "rename column":
        cells = cells.rename(columns={data.draw(st.sampled_from(list(hhar.COLUMNS))): "Unnamed"})
    elif mutation == "shuffle columns":
        cells = cells[list(rng.permutation(list(hhar.COLUMNS)))]
    elif mutation == "extra column":
        cells["extra"] = "?"
    elif mutation == "header only":
        cells = cells.iloc[:0]
    elif mutation == "text in number":
        cells.loc[row, column] = data.draw(st.sampled_from(["abc", "1,5", "--", "1e", "0x10"]))
    elif mutation == "float in integer":
        cells.loc[row, data.draw(st.sampled_from(["Index", "Arrival_Time", "Creation_Time"]))] = 1.5
    elif mutation == "empty cell":
        cells.loc[row, column] = ""
    elif mutation == "huge integer":
        cells.loc[row, "Creation_Time"] = "9" * 30
    elif mutation == "unknown label":
        cells.loc[row, "gt"] = data.draw(st.sampled_from(["jump", "NULL", "Walk", ""]))
    elif mutation == "nan and inf":
        cells.loc[row, data.draw(st.sampled_from(["x", "y", "z"]))] = data.draw(st.sampled_from(["nan", "inf"]))
    text = cells.to_csv(index=False).encode()
    if mutation == "empty file":
        text = b""
    elif mutation == "junk bytes":
        text = bytes(rng.integers(0, 256, 64, dtype=np.uint8))
    elif mutation == "unterminated quote":
        text += b'"1,2\n'
    elif mutation == "extra field":
        text += b"1,2,3,4,5,6,7,8,9,10,11\n"
    return _truncate_or_corrupt(data, text)


HHAR_FIELDS = r"header|column|: (Index|Arrival_Time|Creation_Time|x|y|z|gt|rows):"


@FUZZ
@given(data=st.data())
def test_hhar_fuzz(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("hhar") / "Phones_accelerometer.csv"
    path.write_bytes(_hhar_text(data))
    kind, result = _outcome("hhar", lambda: hhar.read_sensor_csv(path), path, HHAR_FIELDS)
    if kind == "load":
        assert list(result.columns) == list(hhar.COLUMNS)
        assert set(result["gt"].unique()) <= {*hhar.ACTIVITIES, hhar.NULL_LABEL}


# ------------------------------------------------------------------ through the command line
def _bad_files(tmp_path) -> dict:
    """One malformed file per loader, plus a numpy-2 ragged npz that must load."""
    rng = np.random.default_rng(0)
    seqs = [rng.normal(size=(int(t), 2)) for t in rng.integers(3, 9, 30)]
    members = {"X": _npy(_object_array(seqs)), "y": _npy(np.arange(30) % 2),
               "client": _npy(np.repeat(np.array(["a", "b", "c", "d", "e"]), 6))}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for key, raw in members.items():
            zf.writestr(f"{key}.npy", raw.replace(b"cnumpy.core.multiarray\n", b"cnumpy._core.multiarray\n"))
    files = {"numpy2": tmp_path / "numpy2.npz", "truncated": tmp_path / "truncated.npz",
             "code": tmp_path / "code.npz"}
    files["numpy2"].write_bytes(buf.getvalue())
    files["truncated"].write_bytes(buf.getvalue()[:-40])
    with zipfile.ZipFile(files["code"], "w") as zf:
        for key, raw in members.items():
            zf.writestr(f"{key}.npy", raw.replace(_RECONSTRUCT, b"cos\nsystem\n"))
    subject = _wesad_subject(1, rng)
    (tmp_path / "wesad" / "S2").mkdir(parents=True)
    (tmp_path / "wesad" / "S2" / "S2.pkl").write_bytes(pickle.dumps(subject, protocol=2)[:-100])
    (tmp_path / "hhar").mkdir()
    for name in hhar.FILES.values():
        (tmp_path / "hhar" / name).write_text("Index,Arrival_Time,Creation_Time,x,y,z,User,Model,Device,gt\n"
                                              "0,1,2,abc,0.1,0.2,a,s3,s3_1,sit\n")
    return files


def _one_error_line(err: str, *names: str) -> None:
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and lines[0].startswith("tff-esn ") and all(n in lines[0] for n in names), err
    assert "Traceback" not in err, err


def test_cli_maps_malformed_files_to_exit_2(tmp_path, capsys):
    files = _bad_files(tmp_path)
    out = ["--out", str(tmp_path / "run"), "--force", "--units", "10", "--state-mode", "mean"]
    assert main(["run", "centralized", "--data", f"npz:{files['numpy2']}", *out]) == 0
    capsys.readouterr()
    for name, field in (("truncated", "not an .npz"), ("code", "refuses to load the global os.system")):
        assert main(["run", "centralized", "--data", f"npz:{files[name]}", *out]) == 2
        _one_error_line(capsys.readouterr().err, str(files[name]), field)
    assert main(["data", "prepare", f"wesad:{tmp_path / 'wesad'}", "incfed-wesad", "--cache-dir",
                 str(tmp_path / "cache")]) == 2
    _one_error_line(capsys.readouterr().err, "S2.pkl", "not a complete data pickle")
    assert main(["data", "prepare", f"hhar:{tmp_path / 'hhar'}", "incfed-hhar", "--cache-dir",
                 str(tmp_path / "cache")]) == 2
    _one_error_line(capsys.readouterr().err, "Phones_accelerometer.csv", "x: row 1 holds 'abc'")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tff_esn", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_process_exit_2_without_traceback(tmp_path):
    """As processes (≈ 7 s of imports each): exit 2, one error line, no traceback; numpy-2 npz runs."""
    files = _bad_files(tmp_path)
    done = _cli("run", "centralized", "--data", f"npz:{files['code']}", "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    _one_error_line(done.stderr, str(files["code"]), "os.system")
    done = _cli("run", "incfed", "--data", f"npz:{files['numpy2']}", "--out", str(tmp_path / "run"),
                "--state-mode", "last")
    assert done.returncode == 0, done.stderr
    cases = [("run", "centralized", "--data", f"npz:{files['truncated']}", "--out", str(tmp_path / "r")),
             ("data", "prepare", f"wesad:{tmp_path / 'wesad'}", "thesis", "--cache-dir", str(tmp_path / "c")),
             ("data", "prepare", f"hhar:{tmp_path / 'hhar'}", "pfedrr-hhar", "--cache-dir", str(tmp_path / "c"))]
    for args in cases:
        done = _cli(*args)
        assert done.returncode == 2, done.stderr
        _one_error_line(done.stderr)


def test_fuzz_tally():
    """Prints the tally of the fuzz tests above (run in the same session); no crash is allowed."""
    kinds = sorted({k for k, _ in TALLY})
    if not kinds:
        pytest.skip("run together with the fuzz tests")
    for kind in kinds:
        print(f"fuzz tally {kind}: {TALLY[(kind, 'cases')]} cases, {TALLY[(kind, 'error')]} clear errors, "
              f"{TALLY[(kind, 'load')]} loads, {TALLY[(kind, 'crash')]} crashes")
        assert TALLY[(kind, "crash")] == 0
        assert TALLY[(kind, "error")] + TALLY[(kind, "load")] == TALLY[(kind, "cases")]
        assert TALLY[(kind, "error")] > 0 and TALLY[(kind, "load")] > 0
