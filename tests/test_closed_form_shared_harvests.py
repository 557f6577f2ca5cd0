"""Runs inside ``shared_harvests`` share one harvester per dataset and state spec, and give the
numbers of runs that harvest alone (up to float rounding)."""

import numpy as np
import pytest

from tff_esn.registry import algorithms
from tff_esn.closed_form.harvest import Harvester
from tff_esn.closed_form.run import Run, shared_harvests
from tff_esn.data.sequences import Split

from closed_form_data import random_dataset


def _config(name, **settings):
    return algorithms.config_from_flags(algorithms.get_algorithm(name).config,
                                        {"units": 12, "seed": 3, "l2": 1e-2, **settings})


SPLITS = {"few": Split("few", ("c0", "c1"), ("c4",), ("c5",)),
          "all": Split("all", ("c0", "c1", "c2", "c3"), ("c4",), ("c5",))}


def test_runs_share_a_harvester_only_inside_the_scope_and_per_dataset_and_spec():
    data, other = random_dataset(n_clients=6, seed=1), random_dataset(n_clients=6, seed=1)
    config = _config("incfed")
    with shared_harvests():
        a, b = Run(data, SPLITS["few"], config, "a"), Run(data, SPLITS["all"], config, "b")
        mean = Run(data, SPLITS["all"], _config("incfed", state_mode="mean"), "mean")
        elsewhere = Run(other, SPLITS["all"], config, "other")  # equal content, another object
        assert a.harvester is b.harvester
        assert mean.harvester is not a.harvester and elsewhere.harvester is not a.harvester
        with shared_harvests():
            assert Run(data, SPLITS["few"], config, "inner").harvester is not a.harvester
        assert Run(data, SPLITS["few"], config, "again").harvester is a.harvester
    assert Run(data, SPLITS["few"], config, "after").harvester is not a.harvester


@pytest.mark.parametrize("name,extra", [("incfed", {}), ("fedip", {"rounds": 1, "ip_eta": 1e-2})])
def test_shared_harvests_harvest_each_client_once_per_reservoir_and_keep_the_numbers(name, extra, monkeypatch):
    data = random_dataset(n_clients=6, seed=2)
    alone = {key: algorithms.run_algorithm(algorithms.resolve_run(name, data, config=_config(name, **extra)),
                                           data, split) for key, split in SPLITS.items()}
    passes = []
    original = Harvester._pooled_pass

    def counted(self, weights, clients, with_stats):
        passes.append(len(clients))
        return original(self, weights, clients, with_stats)

    monkeypatch.setattr(Harvester, "_pooled_pass", counted)
    with shared_harvests():
        shared = {key: algorithms.run_algorithm(algorithms.resolve_run(name, data, config=_config(name, **extra)),
                                                data, split)
                  for key, split in SPLITS.items()}
    # the unadapted reservoir: the clients of the first split, then only those the second adds (c2, c3);
    # FedIP's λ scale needs the training clients' statistics alone, and each split adapts its own reservoir
    assert passes == ([4, 2] if name == "incfed" else [2, 4, 2, 6])  # alone: [4, 6] and [2, 4, 4, 6]
    for key in SPLITS:
        for group in ("train", "val", "test"):
            assert shared[key][group]["accuracy"] == alone[key][group]["accuracy"]
            np.testing.assert_allclose(shared[key][group]["auc"], alone[key][group]["auc"], rtol=1e-6)
        if name == "fedip":
            np.testing.assert_allclose(shared[key]["extra"]["l2_effective"], alone[key]["extra"]["l2_effective"],
                                       rtol=1e-5)
