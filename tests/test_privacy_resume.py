"""A resumed DP run's ε is the composition of the rounds it ran, as checkpointed (z, C, q per round): more rounds
recompute it with the noise the run started with; another ε or sampling rate is refused."""

import dataclasses
import json
import shutil

import dp_accounting
import numpy as np
import pytest

from tff_esn.federated.training import run_federated
from tff_esn.privacy import accounting
from tff_esn.runs.run_folder import CHECKPOINT

from closed_form_data import THESIS_SPLIT, random_thesis_dataset
from test_privacy_learning import BASE, _private

DP = _private(dataclasses.replace(BASE, backend="sim", rounds=2), dp_epsilon=3.0, dp_seed=1)


@pytest.fixture(scope="module")
def data():
    return random_thesis_dataset()


@pytest.fixture(scope="module")
def started(data, tmp_path_factory):
    """A two-round DP run (ε 3 calibrated for 2 rounds at q = 2/4) and its record."""
    out = tmp_path_factory.mktemp("dp")
    return out, run_federated(data, THESIS_SPLIT, dataclasses.replace(DP, out=str(out)))


def _rdp(z: float, q: float, rounds: int, delta: float) -> float:
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), rounds))
    return accountant.get_epsilon(delta)


def test_more_rounds_compose_the_checkpointed_noise_and_say_it_was_calibrated_for_fewer(data, started, tmp_path):
    out, first = started
    z = first["privacy"]["noise_multiplier"]
    assert z == pytest.approx(accounting.noise_multiplier_for(3.0, 1e-5, 2, 0.5))
    assert first["privacy"]["epsilon"] == pytest.approx(_rdp(z, 0.5, 2, 1e-5), rel=1e-9)
    folder = shutil.copytree(out, tmp_path / "run")
    with pytest.warns(UserWarning, match=r"calibrated for ε = 3 over 2 rounds; the run has 4 rounds"):
        resumed = run_federated(data, THESIS_SPLIT, dataclasses.replace(DP, out=str(folder), rounds=4, resume=True))
    with np.load(folder / CHECKPOINT) as saved:
        events = json.loads(str(saved["run"]))["events"]
    assert events == [{"noise_multiplier": z, "clip": 0.1, "sampling_rate": 0.5}] * 4
    privacy = resumed["privacy"]
    assert privacy["noise_multiplier"] == z and privacy["rounds"] == 4 and privacy["sampling_rate"] == 0.5
    assert privacy["epsilon"] == pytest.approx(_rdp(z, 0.5, 4, 1e-5), rel=1e-9) and privacy["epsilon"] > 3.3
    assert privacy["composed_events"] == [{"rounds": 4, "noise_multiplier": z, "clip": 0.1, "sampling_rate": 0.5}]
    assert privacy["noise_calibrated_for"] == {"noise_multiplier": z, "epsilon": 3.0, "rounds": 2, "sampling_rate": 0.5}
    assert resumed["extra"]["resumes"] == [{"round": 2, "changed": {"rounds": [2, 4]}}]


@pytest.mark.parametrize("change,line", [
    ({"privacy": dataclasses.replace(DP.privacy, dp_epsilon=1.0)}, r"--dp-epsilon 3\.0 → 1\.0"),
    ({"clients_per_round": 3}, r"--clients-per-round 2 → 3"),
    ({"privacy": dataclasses.replace(DP.privacy, dp_clip=0.5)}, r"--dp-clip None → 0\.5"),
])
def test_another_epsilon_sampling_rate_or_clip_is_refused(data, started, tmp_path, change, line):
    folder = shutil.copytree(started[0], tmp_path / "run")
    with pytest.raises(ValueError, match=line):
        run_federated(data, THESIS_SPLIT, dataclasses.replace(DP, out=str(folder), rounds=3, resume=True, **change))
