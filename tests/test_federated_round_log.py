"""rounds.csv as tff.program's CSV release manager writes it, appended whole rows; TensorBoard scalars;
the round checkpoint's npz round trip."""

import asyncio
import collections
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tff_esn.federated.checkpoints import RoundCheckpoint
from tff_esn.federated.round_log import RoundLog
from tff_esn.runs.run_folder import rounds_done

NAMES = ("accepted_clients", "train_loss", "val_auc", "test_f1_macro", "seconds")
values = st.one_of(st.integers(0, 10_000), st.floats(allow_infinity=False, width=64),
                   st.floats(allow_infinity=False, width=32).map(np.float32))
rows = st.lists(st.fixed_dictionaries({}, optional={n: values for n in NAMES}).filter(bool), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(rows=rows)
def test_rounds_csv_holds_what_tffs_csv_release_manager_writes(rows):
    """Same header order (round, then the names sorted; a new name extends it) and the same cells."""
    from tff_esn import runtime

    tff = runtime.load_tff()
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = Path(tmp) / "ours", Path(tmp) / "theirs"
        ours.mkdir()
        log = RoundLog(ours, 0)
        manager = tff.program.CSVFileReleaseManager(str(theirs / "rounds.csv"), key_fieldname="round",
                                                    save_mode=tff.program.CSVSaveMode.WRITE)
        for i, row in enumerate(rows, start=1):
            log.append(row, i)
            asyncio.run(manager.release(dict(sorted(row.items())), key=i))
        log.close()
        assert (ours / "rounds.csv").read_text().splitlines() == (theirs / "rounds.csv").read_text().splitlines()


def test_a_resumed_log_keeps_the_checkpointed_rounds_and_tensorboard_gets_every_value(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log = RoundLog(tmp_path, 0)
    for i in range(1, 4):
        log.append({"val_auc": 0.5 + i / 10, "clients": i, "train_loss": math.nan}, i)
    log.close()
    log = RoundLog(tmp_path, 2)  # the checkpoint holds round 2: round 3's row is dropped
    assert (tmp_path / "rounds.csv").read_text().splitlines() == [
        "round,clients,train_loss,val_auc", "1,1,nan,0.6", "2,2,nan,0.7"]
    log.append({"val_auc": 0.9, "clients": 3, "train_loss": 1.5, "test_auc": 0.25}, 3)  # a new column
    log.close()
    assert (tmp_path / "rounds.csv").read_text().splitlines() == [
        "round,clients,train_loss,val_auc,test_auc", "1,1,nan,0.6,", "2,2,nan,0.7,", "3,3,1.5,0.9,0.25"]
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    series = {tag: [(e.step, float(np.frombuffer(e.tensor_proto.tensor_content, np.float32)[0])
                     if e.tensor_proto.tensor_content else e.tensor_proto.float_val[0])
                    for e in events.Tensors(tag)] for tag in events.Tags()["tensors"]}
    assert series["val_auc"] == [(1, pytest.approx(0.6)), (2, pytest.approx(0.7)), (3, pytest.approx(0.8)),
                                 (3, pytest.approx(0.9))]  # round 3 written twice, as TFF's release manager does
    assert series["test_auc"] == [(3, 0.25)] and series["clients"][-1] == (3, 3.0)


def test_the_checkpoint_round_trips_a_nest_bit_for_bit_and_never_leaves_a_partial_file(tmp_path):
    state = collections.OrderedDict(trainable=(np.random.default_rng(0).normal(size=(5, 1)).astype(np.float32),
                                               np.float32([0.5])),
                                    server=collections.OrderedDict(learning_rate=np.float32(0.1), step=np.int64(3)))
    checkpoint = RoundCheckpoint(tmp_path)
    assert checkpoint.latest(state) is None and rounds_done(tmp_path) is None
    checkpoint.save(state, 4)
    rows = [{"round": 1, "train_loss": float("nan"), "sampled": ["a", "b"]}, {"round": 2, "seconds": 0.1}]
    checkpoint.save(state, 5, rows)
    loaded, round_num, saved_rows = checkpoint.latest(state)
    assert round_num == 5 == rounds_done(tmp_path)
    assert saved_rows == [{"round": 1, "train_loss": None, "sampled": ["a", "b"]}, {"round": 2, "seconds": 0.1}]
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["state.npz"]
    assert list(loaded) == ["trainable", "server"] and list(loaded["server"]) == ["learning_rate", "step"]
    assert all(a.tobytes() == b.tobytes() and a.dtype == b.dtype
               for a, b in zip(loaded["trainable"], state["trainable"]))
    assert loaded["server"]["step"].dtype == np.int64 and loaded["server"]["learning_rate"] == np.float32(0.1)
