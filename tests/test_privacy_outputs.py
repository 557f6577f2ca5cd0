"""What a DP run writes: secret noise unless --dp-seed, no client-derived value outside the declaration,
the sampled clients unpublished where amplification is claimed."""

import dataclasses
import json
import re

import numpy as np
import pytest

from tff_esn.cli import main
from tff_esn.federated.training import run_federated
from tff_esn.privacy import coverage
from tff_esn.privacy.noise_seed import KNOWN_SEED, NO_NOISE
from tff_esn.privacy.sampling import POISSON, poisson_clients
from tff_esn.registry.algorithms import resolve_run, run_algorithm
from tff_esn.common.run_warnings import RunWarning

from closed_form_data import THESIS_SPLIT, random_thesis_dataset
from test_closed_form_cli import FAST, fake_sources  # noqa: F401 (fixture)
from test_privacy_learning import BASE, _fedcurv, _private

CLOSED_FORM_DP = {
    "incfed": ["--dp-epsilon", "2"],
    "fedip": ["--dp-epsilon", "4", "--rounds", "1"],
    "pfedrr": ["--dp-epsilon", "8", "--dp-model", "local"],
    "partial-incfed": ["--dp-epsilon", "8", "--dp-model", "local"],
}


def _run_cli(tmp_path, name, *flags) -> dict:
    assert main(["run", name, "--out", str(tmp_path), "--force", *FAST, *flags]) == 0
    return json.loads((tmp_path / "metrics.json").read_text())


def _kernel(result) -> np.ndarray:
    weights = result["extra"]["weights"]
    return np.concatenate([np.ravel(weights["kernel"]), np.ravel(weights["bias"])])


@pytest.fixture(scope="module")
def data():
    return random_thesis_dataset()


@pytest.mark.parametrize("name", sorted(CLOSED_FORM_DP))
def test_closed_form_dp_runs_declare_every_client_derived_value(name, fake_sources, tmp_path):  # noqa: F811
    record = _run_cli(tmp_path, name, *CLOSED_FORM_DP[name])
    assert coverage.undeclared(record) == []
    privacy = record["privacy"]
    assert privacy["private"] and "noise_seed" not in privacy and "not_private_reasons" not in privacy
    assert "train" not in record and "baselines" not in record and "label_histogram" not in record["partition"]
    assert {"train", "baselines", "partition.label_histogram"} <= set(privacy["withheld"])
    assert set(privacy["public"]) >= {"val", "test"}


def test_a_library_dp_run_withholds_the_partitions_client_sizes_and_labels(data):
    """``run_algorithm`` publishes the ``partition`` it is given (as ``compare``'s cells give it)."""
    partition = {"partitioner": "iid", "clients": 4, "sizes": {"S0": 3}, "label_histogram": {"S0": [1, 2]}}
    run = resolve_run("incfed", data, dp_epsilon=2.0, units=20)
    record = run_algorithm(run, data, THESIS_SPLIT, partition=partition)
    assert record["privacy"]["private"] and record["partition"] == {"partitioner": "iid", "clients": 4}
    assert {"partition.sizes", "partition.label_histogram"} <= set(record["privacy"]["withheld"])
    plain = run_algorithm(resolve_run("incfed", data, units=20), data, THESIS_SPLIT, partition=partition)
    assert plain["partition"] == partition


def test_incfed_dp_noise_is_secret_and_a_known_seed_marks_the_run_not_private(fake_sources, tmp_path,  # noqa: F811
                                                                               capsys):
    """Same command twice: different noised readouts, no seed written; --dp-seed: reproducible, not private
    (the summary line says so)."""
    first = _run_cli(tmp_path / "a", "incfed", "--dp-epsilon", "2")
    second = _run_cli(tmp_path / "b", "incfed", "--dp-epsilon", "2")
    assert first["test"] != second["test"] or first["val"] != second["val"]
    assert "noise_seed" not in first["privacy"] and first["config"]["dp_seed"]["value"] is None
    assert first["privacy"]["noise_seed_source"] == "operating system entropy, never written"
    known = [_run_cli(tmp_path / d, "incfed", "--dp-epsilon", "2", "--dp-seed", "9") for d in ("c", "d")]
    assert known[0]["test"] == known[1]["test"] and known[0]["val"] == known[1]["val"]
    privacy = known[0]["privacy"]
    assert privacy["private"] is False and privacy["not_private_reasons"] == [KNOWN_SEED]
    assert privacy["noise_seed"] == 9 and any("--dp-seed" in w for w in known[0]["warnings"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert "NOT PRIVATE (noise seed known (--dp-seed))" in lines[-1] and "NOT PRIVATE" not in lines[0]


def test_a_noise_multiplier_of_zero_warns_that_the_run_is_not_private(fake_sources, tmp_path):  # noqa: F811
    record = _run_cli(tmp_path, "incfed", "--dp-noise-multiplier", "0")
    assert record["privacy"]["private"] is False and record["privacy"]["not_private_reasons"] == [NO_NOISE]
    assert any("not private" in w for w in record["warnings"])


@pytest.mark.parametrize("flags", [
    ["--dp-epsilon", "1e12"], ["--dp-epsilon", "1e-9"], ["--dp-noise-multiplier", "1e9"],
    ["--dp-noise-multiplier", "1", "--dp-clip", "1e300"], ["--dp-epsilon", "1", "--dp-delta", "0"]])
def test_settings_beyond_the_accountant_are_refused_in_one_line(fake_sources, tmp_path, capsys, flags):  # noqa: F811
    assert main(["run", "incfed", "--out", str(tmp_path), *FAST, *flags]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and re.search(r"in [\[(]\S+, \S+[\])]", err) and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "metrics.json").exists()


@pytest.mark.parametrize("config", ["fedavg", "fedcurv"])
def test_dp_learning_runs_sample_in_secret_and_publish_no_selection(data, config, tmp_path):
    base = BASE if config == "fedavg" else _fedcurv()
    base = dataclasses.replace(base, backend="sim", model=dataclasses.replace(base.model, class_weight="balanced"))
    dp = _private(base, dp_noise_multiplier=0.8, dp_clip=0.5)
    with pytest.warns(RunWarning, match="uniform class weights"):
        first = run_federated(data, THESIS_SPLIT, dp)
    second = run_federated(data, THESIS_SPLIT, dp)
    model = first.pop("model")  # saved to model/, not metrics.json (run_algorithm)
    record = coverage.publish({**first, "config": {}, "algorithm": config})
    assert coverage.undeclared(record) == []
    assert coverage.undeclared_model(model.save(tmp_path / "model")) == []
    assert not np.array_equal(_kernel(first), _kernel(second))
    sampling = record["privacy"]["sampling"]
    assert sampling == {"scheme": POISSON, "rate": 0.5, "selection_secret": True, "selection_published": False,
                        "amplification_by_sampling": True}
    for row in record["extra"]["rounds"]:
        assert not {"sampled", "clients", "accepted_clients", "clean_clients", "train_loss"} & set(row)
    assert "noise_seed" not in record["privacy"] and "accepted_clients" not in record["extra"]
    assert record["extra"]["class_weight"] == [1.0, 1.0]


def test_runs_without_dp_stay_bit_identical_and_publish_their_public_sampling(data):
    plain = dataclasses.replace(BASE, backend="sim")
    first, second = run_federated(data, THESIS_SPLIT, plain), run_federated(data, THESIS_SPLIT, plain)
    np.testing.assert_array_equal(_kernel(first), _kernel(second))
    assert [r["sampled"] for r in first["extra"]["rounds"]] == [r["sampled"] for r in second["extra"]["rounds"]]


def test_poisson_sampling_draws_each_client_independently_at_the_rate():
    ids = [f"c{i}" for i in range(40)]
    draws = np.array([[cid in set(poisson_clients(ids, 0.3, 123, r)) for cid in ids] for r in range(2000)])
    assert draws.mean() == pytest.approx(0.3, abs=0.01)
    assert abs(np.corrcoef(draws[:, 0], draws[:, 1])[0, 1]) < 0.06
    assert poisson_clients(ids, 0.3, 123, 5) == poisson_clients(ids, 0.3, 123, 5)
    assert poisson_clients(ids, 0.3, 123, 5) != poisson_clients(ids, 0.3, 124, 5)


def test_a_poisson_round_without_clients_releases_the_noise_alone(data, monkeypatch):
    """P(no client) = (1 − q)^N: the simulation runs such a round (the DP mean is noise / m) and the
    model moves by it."""
    from tff_esn.federated import training

    drawn = training.poisson_clients
    monkeypatch.setattr(training, "poisson_clients", lambda ids, q, seed, r: [] if r == 0 else drawn(ids, q, seed, r))
    config = _private(dataclasses.replace(BASE, backend="sim", rounds=1), dp_noise_multiplier=0.8, dp_clip=0.5,
                      dp_seed=4)
    noised = run_federated(data, THESIS_SPLIT, config)
    silent = run_federated(data, THESIS_SPLIT, _private(dataclasses.replace(BASE, backend="sim", rounds=1),
                                                        dp_noise_multiplier=0.0, dp_clip=0.5, dp_seed=4))
    assert np.all(np.isfinite(_kernel(noised)))
    assert not np.array_equal(_kernel(noised), _kernel(silent))  # z = 0 and no client: the initial model
