"""What a DP run publishes beside its ε carries no more: the closed form's sensitivity comes from a public bound
(neighbouring data sets give byte-identical privacy records), no published per-round value varies with the secret
Poisson sample, and settings from a hyper-parameter file are declared as chosen outside the ε."""

import csv
import dataclasses
import json

import numpy as np
import pytest

from tff_esn.cli import main
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.privacy.record_bound import cropped
from tff_esn.privacy.sampling import poisson_clients
from tff_esn.registry.algorithms import resolve_run, run_algorithm

from closed_form_data import THESIS_SPLIT, fake_data_modules, random_thesis_dataset
from test_closed_form_cli import FAST, fake_sources  # noqa: F401 (fixture)
from test_privacy_learning import BASE, _private

DP_ALL = ["--state-mode", "all", "--dp-epsilon", "2", "--dp-seed", "3"]


def _ragged(extra_long: bool) -> SequenceDataset:
    """Five clients of 5–14-step sequences; ``extra_long``: client c0 holds one more sequence, of 40 steps."""
    rng = np.random.default_rng(0)
    clients = {}
    for i in range(5):
        lengths = rng.integers(5, 15, size=6)
        if extra_long and i == 0:
            lengths = np.append(lengths, 40)
        x = np.zeros((len(lengths), lengths.max(), 3), np.float32)
        y = rng.integers(0, 2, len(lengths))
        for k, n in enumerate(lengths):
            x[k, :n] = rng.normal(size=(n, 3)) + y[k]
        clients[f"c{i}"] = ClientSequences(x, y, lengths)
    return SequenceDataset(clients, 2, ("a", "b", "c"), ("no", "yes"), "ragged")


def _serve(monkeypatch, dataset):
    fake_data_modules(monkeypatch, lambda *a, **k: dataset,
                      lambda name, d, **k: Split(name, ("c0", "c1", "c2"), ("c3",), ("c4",)))


@pytest.mark.parametrize("secure", [[], ["--secure-aggregation", "--dp-model", "distributed"]],
                         ids=["dp", "dp-secure"])
def test_neighbouring_data_sets_give_byte_identical_privacy_records(monkeypatch, tmp_path, secure):
    records = []
    for extra_long in (False, True):
        _serve(monkeypatch, _ragged(extra_long))
        out = tmp_path / str(extra_long)
        assert main(["run", "incfed", "--out", str(out), *FAST, *DP_ALL, "--dp-max-steps", "12", *secure]) == 0
        records.append(json.loads((out / "metrics.json").read_text()))
    for section in ("privacy", "secure_aggregation"):
        first, second = (json.dumps(r[section], sort_keys=True) for r in records)
        assert first == second, section
    privacy = records[0]["privacy"]
    assert privacy["privacy_unit"] == "one sequence (11 states)" and privacy["sensitivity"]["n"] == 11
    assert privacy["record_bound"].startswith("--dp-max-steps 12: training sequences longer are cut")
    assert not any("cut" in w or "crop" in w for r in records for w in r["warnings"])  # no data-dependent count
    if secure:
        noise = max(privacy["noise_stddev_on_sum"].values()) / np.sqrt(3)  # a client's share σ/√K, K = 3
        sections = records[0]["secure_aggregation"]
        assert sections["range"][1] == pytest.approx(2 ** 20 * 11 + 8 * noise)
        assert sections["range_source"].startswith("--dp-max-client-sequences 1048576 × 11 states per sequence")
        assert records[0]["config"]["dp_max_client_sequences"] == {"value": 2 ** 20, "origin": "default"}


def test_a_dp_secure_sum_never_takes_its_range_from_the_clients_sizes():
    from tff_esn.privacy.closed_form import secure_ridge_sum
    from tff_esn.privacy.config import PrivacyConfig

    with pytest.raises(ValueError, match="give --secure-range R"):
        secure_ridge_sum(PrivacyConfig(secure_aggregation=True, dp_epsilon=1.0, dp_model="local"), [10, 20])
    given = secure_ridge_sum(PrivacyConfig(secure_aggregation=True, dp_epsilon=1.0, secure_range=5.0), [10, 20])
    plain = secure_ridge_sum(PrivacyConfig(secure_aggregation=True), [10, 20])
    assert (given.secure.bound, plain.secure.bound) == (5.0, pytest.approx(20.0, rel=2e-6))
    with pytest.raises(ValueError, match="--dp-max-client-sequences\\) sets the secure sum's range under DP"):
        PrivacyConfig(secure_aggregation=True, dp_max_client_sequences=10)


def test_unequal_lengths_without_a_public_bound_are_refused_in_one_line(monkeypatch, tmp_path, capsys):
    _serve(monkeypatch, _ragged(True))
    assert main(["run", "incfed", "--out", str(tmp_path), *FAST, *DP_ALL]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "give --dp-max-steps N" in err
    assert main(["run", "incfed", "--out", str(tmp_path), *FAST, "--dp-max-steps", "12"]) == 2  # needs DP
    assert "--dp-max-steps) bounds a DP record" in capsys.readouterr().err


def test_a_cropped_client_keeps_the_last_steps_of_each_long_sequence():
    x = np.arange(2 * 6 * 1, dtype=np.float32).reshape(2, 6, 1)
    y = np.arange(12).reshape(2, 6)
    client = cropped(ClientSequences(x, y, np.array([6, 3])), 4)
    assert client.x.shape == (2, 4, 1) and list(client.steps) == [4, 3]
    np.testing.assert_array_equal(client.x[0, :, 0], x[0, 2:, 0])
    np.testing.assert_array_equal(client.x[1, :3, 0], x[1, :3, 0])
    np.testing.assert_array_equal(client.y[0], y[0, 2:])


def test_no_published_per_round_value_varies_with_the_secret_sample(tmp_path):
    data = random_thesis_dataset()
    config = _private(dataclasses.replace(BASE, backend="sim", rounds=6, out=str(tmp_path)),
                      dp_noise_multiplier=1.0, dp_clip=0.5, dp_seed=7)
    counts = [len(poisson_clients(THESIS_SPLIT.train, 0.5, 7, r)) for r in range(6)]
    assert len(set(counts)) > 1  # the secret count varies over the rounds
    record = run_algorithm(resolve_run("fedavg", data, config=config), data, THESIS_SPLIT)
    rows = record["extra"]["rounds"]
    with open(tmp_path / "rounds.csv") as fh:
        columns = csv.DictReader(fh).fieldnames
    covered = [k for k in columns if k.startswith(("val_", "test_"))]  # the DP model on held-out clients
    assert set(columns) - set(covered) == {"round", "up_floats_per_client", "down_floats_per_client"}
    assert all(set(row) == set(columns) for row in rows)
    for key in ("up_floats_per_client", "down_floats_per_client"):
        assert len({row[key] for row in rows}) == 1
    assert "seconds" not in record and "seconds" in record["privacy"]["withheld"]
    assert "extra.rounds[].seconds" in record["privacy"]["withheld"]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert "seconds" not in events.Tags()["tensors"]
    assert len({e.wall_time for tag in events.Tags()["tensors"] for e in events.Tensors(tag)}) == 1


def test_settings_from_a_file_are_declared_as_chosen_outside_the_epsilon(fake_sources, tmp_path):  # noqa: F811
    (tmp_path / "best.json").write_text(json.dumps({"units": 8, "l2": 0.01}))
    args = ["run", "incfed", "--washout", "1", "--dp-epsilon", "2", "--hparams", str(tmp_path / "best.json")]
    assert main([*args, "--out", str(tmp_path / "file")]) == 0
    record = json.loads((tmp_path / "file" / "metrics.json").read_text())
    assert record["privacy"]["selection_outside_epsilon"] is True
    assert record["privacy"]["settings_from_file"] == ["l2", "units"]
    assert any("came from a hyper-parameter file (--hparams) with no search record" in w for w in record["warnings"])
    assert record["privacy"]["selection_data"] == "unknown (no search.json beside the file)"
    assert main(["run", "incfed", "--out", str(tmp_path / "flags"), *FAST, "--dp-epsilon", "2"]) == 0
    plain = json.loads((tmp_path / "flags" / "metrics.json").read_text())["privacy"]
    assert plain["selection_outside_epsilon"] is False and plain["settings_from_file"] == []


def _own_npz(path, seed):
    from closed_form_data import random_dataset, write_npz

    data = random_dataset(n_clients=6, steps=10, features=3, n_classes=2, seed=seed, sizes=[8] * 6)
    return f"npz:{write_npz(path, data, ['train'] * 4 + ['val', 'test'])}"


def test_a_tuned_file_says_whether_its_search_ran_on_the_same_clients(tmp_path):
    from tuning.search import tune

    same, other = _own_npz(tmp_path / "own.npz", 1), _own_npz(tmp_path / "other.npz", 2)
    tune("incfed-wesad", data=same, trials=1, out=tmp_path / "search", progress=False)
    (tmp_path / "copy.npz").write_bytes((tmp_path / "own.npz").read_bytes())
    hparams = ["--hparams", str(tmp_path / "search" / "best_hparams.json")]
    said = {}
    for name, data in (("same", same), ("copy", f"npz:{tmp_path / 'copy.npz'}"), ("other", other)):
        out = tmp_path / name
        assert main(["run", "incfed", "--data", data, "--out", str(out), "--dp-epsilon", "2", *hparams]) == 0
        said[name] = json.loads((out / "metrics.json").read_text())
    for name in ("same", "copy"):  # a copy under another name holds the same clients
        privacy = said[name]["privacy"]
        assert privacy["selection_outside_epsilon"] is True
        assert privacy["selection_data"] == f"same clients: a search on {same} (seed 0)"
        assert any(f"came from a search on {same} (seed 0), the same clients' data" in w for w in said[name]["warnings"])
    privacy = said["other"]["privacy"]
    assert privacy["selection_outside_epsilon"] is False and privacy["selection_data"].startswith("other data: ")
    assert not any("outside the DP mechanism" in w for w in said["other"]["warnings"])


def test_fedavg_with_settings_from_a_search_on_its_clients_is_declared_outside_the_epsilon(tmp_path):
    data = _own_npz(tmp_path / "own.npz", 1)
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "best_hparams.json").write_text(json.dumps({"client_lr": 0.05}))
    (tmp_path / "search" / "search.json").write_text(json.dumps({"space": "thesis", "data": data, "seed": 0}))
    assert main(["run", "fedavg", "--data", data, "--out", str(tmp_path / "run"), "--backend", "sim", "--units", "8",
                 "--rounds", "2", "--dp-epsilon", "4", "--hparams", str(tmp_path / "search" / "best_hparams.json")]) == 0
    record = json.loads((tmp_path / "run" / "metrics.json").read_text())
    privacy = record["privacy"]
    assert privacy["selection_outside_epsilon"] is True and privacy["settings_from_file"] == ["client_lr"]
    assert privacy["selection_data"] == f"same clients: a search on {data} (seed 0)"
    assert any("client_lr came from a search" in w and "not covered by the ε" in w for w in record["warnings"])
