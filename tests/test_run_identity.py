"""A resumed run continues only the run in its folder: its identity (data, split, settings, privacy) is checked
against the checkpoint's, every other difference refused in one line naming each setting, and the declared
changes recorded."""

import dataclasses
import json
import shutil

import numpy as np
import pytest

from tff_esn.cli import main
from tff_esn.closed_form.streaming import Checkpoint
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.esn.ridge import RidgeStats
from tff_esn.federated.training import run_federated
from tff_esn.runs.identity import RESUMABLE, data_digest, run_identity

from closed_form_data import THESIS_SPLIT, random_dataset, random_thesis_dataset, write_npz
from test_privacy_learning import BASE

SIM = dataclasses.replace(BASE, backend="sim", rounds=1)


@pytest.fixture(scope="module")
def data():
    return random_thesis_dataset()


@pytest.fixture(scope="module")
def started(data, tmp_path_factory):
    """A one-round run whose folder the tests resume (each from its own copy)."""
    out = tmp_path_factory.mktemp("started")
    run_federated(data, THESIS_SPLIT, dataclasses.replace(SIM, out=str(out)))
    return out


def _copy(started, tmp_path):
    return str(shutil.copytree(started, tmp_path / "run"))


def _shuffled(data: SequenceDataset) -> SequenceDataset:
    """``data`` with the same shapes, another content (the first client's inputs negated)."""
    first = data.client_ids[0]
    clients = {cid: ClientSequences(-c.x, c.y) if cid == first else c for cid, c in data.clients.items()}
    return dataclasses.replace(data, clients=clients)


def test_a_resume_under_another_seed_client_lr_data_or_split_is_refused_naming_each(data, started, tmp_path):
    out = _copy(started, tmp_path)
    resumed = dataclasses.replace(SIM, out=out, resume=True, rounds=2, model=SIM.model.replace(
        learning_rate=0.3, reservoir=dataclasses.replace(SIM.model.reservoir, seed=1)))
    with pytest.raises(ValueError, match=r"holds a run started with other settings: --client-lr 0\.05 → 0\.3, "
                                         r"--seed 4 → 1; resume it with the settings that started it"):
        run_federated(data, THESIS_SPLIT, resumed)
    same = dataclasses.replace(SIM, out=out, resume=True, rounds=2)
    with pytest.raises(ValueError, match=r"other settings: the data \(its content, split or partition"):
        run_federated(_shuffled(data), THESIS_SPLIT, same)
    swapped = Split("tiny", THESIS_SPLIT.train, THESIS_SPLIT.test, THESIS_SPLIT.val)
    with pytest.raises(ValueError, match=r"other settings: the data \(its content, split or partition"):
        run_federated(data, swapped, same)
    assert [r["round"] for r in run_federated(data, THESIS_SPLIT, same)["extra"]["rounds"]] == [1, 2]


def test_the_declared_changes_resume_and_are_recorded_others_refused(data, tmp_path):
    out = str(tmp_path / "run")
    config = dataclasses.replace(SIM, out=out, keep_best=True, patience=3)
    run_federated(data, THESIS_SPLIT, config)
    with pytest.raises(ValueError, match=r"--patience 3 → 1 \(may change to: a larger number"):
        run_federated(data, THESIS_SPLIT, dataclasses.replace(config, resume=True, rounds=2, patience=1))
    result = run_federated(data, THESIS_SPLIT, dataclasses.replace(config, resume=True, rounds=2, patience=5,
                                                                   progress=True))
    assert result["extra"]["resumes"] == [{"round": 1, "changed": {"patience": [3, 5], "rounds": [1, 2]}}]
    assert {"rounds", "patience", "progress", "out"} <= set(RESUMABLE)


def test_the_identity_is_the_data_as_the_run_sees_it_and_the_settings_that_shape_it(data):
    identity = run_identity(SIM, data, THESIS_SPLIT)
    assert identity["data"] == data_digest(random_thesis_dataset(), THESIS_SPLIT)  # content, not the object
    assert identity["data"] != data_digest(_shuffled(data), THESIS_SPLIT)
    assert identity["algorithm"] == "fedavg" and identity["seed"] == 4 and identity["client_lr"] == 0.05
    assert not set(RESUMABLE) & set(identity)
    assert run_identity(dataclasses.replace(SIM, rounds=9, progress=True), data, THESIS_SPLIT) == identity


def _npz(tmp_path):
    return write_npz(tmp_path / "own.npz", random_dataset(n_clients=8, n_classes=2, seed=1),
                     ["train"] * 6 + ["val", "test"])


@pytest.mark.parametrize("first,then,line", [
    ([], ["--dp-epsilon", "1"], "--dp-epsilon None → 1.0"),
    (["--dp-epsilon", "1"], [], "--dp-epsilon 1.0 → None"),
])
def test_a_dp_resume_of_a_plain_folder_and_back_is_one_line(tmp_path, capsys, first, then, line):
    base = ["run", "fedavg", "--data", f"npz:{_npz(tmp_path)}", "--out", str(tmp_path / "run"), "--units", "8",
            "--clients-per-round", "3", "--no-progress"]
    assert main([*base, "--rounds", "1", *first]) == 0
    capsys.readouterr()
    assert main([*base, "--rounds", "2", "--resume", *then]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and line in err, err
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["extra"]["rounds_run"] == 1


def test_a_streamed_checkpoint_of_another_run_names_what_differs(tmp_path):
    stats = [RidgeStats(np.zeros((2, 3)), np.eye(3), 4, 1, True)]
    Checkpoint(tmp_path / "c.npz", {"algorithm": "incfed", "washout": 0, "n_clients": 10}).save(1, stats, {})
    with pytest.raises(ValueError, match=r"belongs to another run: --n-clients 10 → 12, --washout 0 → 2; remove it"):
        Checkpoint(tmp_path / "c.npz", {"algorithm": "incfed", "washout": 2, "n_clients": 12}).load()

