"""The 6-channel HHAR pipelines are learnable by the ESN at least as well as by
logistic regression on the same sequences, and why they were not (user-specific device
frames in the generator; a bias-free tanh reservoir is blind to signal power); synthetic
HHAR v3 is neither at chance nor at the ceiling (v2: every model and the baseline at 1.00)."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from scripts.framework import run_config
from tff_esn.registry.algorithms import resolve_run, run_algorithm
from tff_esn.esn.hyperparameters import ReservoirConfig
from tff_esn.data.sequences import ClientSequences, SequenceDataset, Split
from tff_esn.data.sources import load_source
from tff_esn.data.splits import get_split
from tff_esn.data.seed_sources.hhar import ACTIVITIES
from tff_esn.data.seed_sources.synthetic_hhar import _bouts, _user
from tff_esn.esn.weights import ReservoirWeights
from tff_esn.esn.states_tf import run_reservoir

ESN = dict(units=100, spectral_radius=0.9, input_scaling=0.75, bias_scaling=0.75, leaky=0.5, l2=1e-3)
"""FedIP Table 1 HHAR ranges (leakage ≤ 0.5, input scaling [0.5, 1)); bias scaled like the inputs."""
MARGIN = 0.08
"""How far the ESN may fall below logistic regression on the 2 test users."""


def _lr_accuracy(dataset, split) -> float:
    """Logistic regression on each sequence's per-channel mean and std (the same sequences)."""
    def features(ids):
        pooled = dataset.pooled(ids)
        return np.concatenate([pooled.x.mean(1), pooled.x.std(1)], axis=1), pooled.y

    x, y = features(split.train)
    xt, yt = features(split.test)
    scaler = StandardScaler().fit(x)
    return LogisticRegression(max_iter=2000).fit(scaler.transform(x), y).score(scaler.transform(xt), yt)


@pytest.fixture(scope="module")
def pfedrr_hhar(tmp_path_factory):
    dataset = load_source("synthetic-hhar", "pfedrr-hhar", cache_dir=tmp_path_factory.mktemp("cache"))
    return dataset, get_split("pfedrr-hhar", dataset)


def test_esn_learns_pfedrr_hhar_about_as_well_as_logistic_regression_below_the_ceiling(pfedrr_hhar, tmp_path):
    dataset, split = pfedrr_hhar
    chance = 1 / dataset.n_classes
    lr = _lr_accuracy(dataset, split)
    record = run_algorithm(resolve_run("centralized", dataset, config=run_config("centralized", **ESN)), dataset, split)
    esn = record["test"]["accuracy"]
    assert chance + 0.3 < lr < 0.97, lr  # learnable, but held-out users are not at the ceiling
    assert chance + 0.3 < esn < 0.97, esn
    assert esn >= lr - MARGIN, (esn, lr)
    assert record["warnings"] == []


def test_walking_and_stair_cadences_overlap_across_users():
    # stairs differ from walking by a slightly lower cadence and a small asymmetry, not by a
    # cadence range of their own (v2: fixed factors 0.8 / 1.0 / 1.12 of one user cadence)
    cadence = {a: np.array([_user(0, u)["styles"][a]["cadence"] for u in range(9)])
               for a in ("walk", "stairsup", "stairsdown")}
    assert cadence["stairsup"].max() > cadence["walk"].min(), cadence
    assert cadence["stairsdown"].max() > cadence["walk"].min() and cadence["stairsdown"].min() < cadence["walk"].max()
    assert all(1.2 < c.min() and c.max() < 2.2 for c in cadence.values()), cadence


def test_runs_contain_bouts_of_other_motions_and_pouch_moves():
    bouts, rotations = _bouts(_user(0, 0), minutes=1.0)
    up = bouts["label"] == ACTIVITIES.index("stairsup")
    landings = up & (bouts["yaw"] != 0)
    assert 0 < landings.sum() < up.sum()  # turns on the landings, labelled stairsup
    assert np.all(np.diff(bouts["start"]) > 0) and rotations.shape == (len(bouts["start"]), 3, 3)
    np.testing.assert_allclose(np.einsum("nij,nkj->nik", rotations, rotations), np.broadcast_to(np.eye(3), rotations.shape),
                               atol=1e-12)


def test_synthetic_users_carry_the_devices_in_nearly_the_same_orientation():
    # v1 drew a uniform random frame per user (26–149°): the activity cues became user identity
    angles = [np.degrees(np.arccos((np.trace(_user(0, u)["placement"]) - 1) / 2)) for u in range(9)]
    assert max(angles) < 60, angles


def _power_dataset(seed: int = 0) -> SequenceDataset:
    """Two classes that differ only in the amplitude of a zero-mean oscillation (1 vs 2)."""
    rng = np.random.default_rng(seed)
    t = np.arange(60)
    clients = {}
    for c in range(6):
        y = rng.integers(0, 2, 20)
        phase = rng.uniform(0, 2 * np.pi, (20, 1))
        x = (1.0 + y[:, None]) * np.sin(2 * np.pi * t / 12 + phase) + 0.1 * rng.normal(size=(20, 60))
        clients[f"c{c}"] = ClientSequences(x[..., None].astype(np.float32), y)
    return SequenceDataset(clients, 2, ("x",), ("low", "high"), "power")


def test_bias_free_tanh_reservoir_is_odd_so_mean_states_miss_signal_power(tmp_path):
    weights = ReservoirWeights.from_config(ReservoirConfig(units=30, seed=1), 1)
    u = np.random.default_rng(0).normal(size=(3, 20, 1)).astype(np.float32)
    args = (weights.kernel, weights.recurrent, weights.bias, weights.gain, 1.0, "all", 0)
    np.testing.assert_allclose(run_reservoir(-u, *args).numpy(), -run_reservoir(u, *args).numpy(), atol=1e-6)

    data = _power_dataset()
    split = Split("power", ("c0", "c1", "c2", "c3"), ("c4",), ("c5",))
    acc = {b: run_algorithm(resolve_run("centralized", data, config=run_config(
        "centralized", units=50, state_mode="mean", washout=12, bias_scaling=b, l2=1e-3,
        seed=0)), data, split)["test"]["accuracy"] for b in (0.0, 1.0)}
    assert acc[0.0] < 0.75 and acc[1.0] > 0.9, acc
