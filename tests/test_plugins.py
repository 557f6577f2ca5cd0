"""An algorithm another package adds through the ``tff_esn.algorithms`` entry points: the toy package
``tests/plugins/toy_algorithm`` installed into a temporary folder (no file of tff_esn touched) appears in
``run --help``, runs with its own-data defaults and cost, has its privacy flags refused, and is an algorithm that
``compare`` and the docs' tables read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from closed_form_data import random_dataset, write_npz

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = Path(__file__).resolve().parent / "plugins" / "toy_algorithm"

CHECKS = """
import json, sys
from tff_esn.cli import main
from tff_esn.cli.compare.reservoirs import ReservoirComparison
from tff_esn.registry.algorithms import available_algorithms, names_where
sys.path.insert(0, "docs")
import hooks

npz, out = sys.argv[1:3]
codes = [main(["run", "class-prior", "--data", f"npz:{npz}", "--out", out]),
         main(["run", "class-prior", "--data", f"npz:{npz}", "--out", out + "-dp", "--dp-epsilon", "1"])]
ReservoirComparison((("d", f"npz:{npz}"),), ("random",), ("class-prior",))
print(json.dumps({"codes": codes, "names": names_where(lambda a: True), "table": hooks.algorithms_table(),
                  "facts": hooks.algorithm_facts("class-prior")}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    """The environment of a Python that finds the toy package, installed with pip into a temporary folder."""
    tmp = tmp_path_factory.mktemp("plugin")
    shutil.copytree(PLUGIN, tmp / "source")  # pip builds in the copy: no build files in the repository
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "--target", str(tmp / "site"), str(tmp / "source")], check=True,
                   capture_output=True)
    path = os.pathsep.join(p for p in (str(ROOT), str(tmp / "site"), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _python(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_installed_algorithm_is_in_run_help_without_tensorflow(installed):
    listed = _python(installed, "-m", "tff_esn", "run", "--help")
    assert listed.returncode == 0, listed.stderr
    assert "class-prior" in listed.stdout and "the pooled class frequencies of the training clients" in listed.stdout
    own = _python(installed, "-m", "tff_esn", "run", "class-prior", "--help")
    assert "Communication: Class prior: each client sends its K label counts once, nothing down." in \
        " ".join(own.stdout.split())
    assert "(default 1.0; 0.5 on npz:/ts: data)" in " ".join(own.stdout.split())
    light = _python(installed, "-c", "import sys; from tff_esn.registry.algorithms import get_algorithm; "
                                     "get_algorithm('class-prior'); print('tensorflow' in sys.modules)")
    assert light.stdout.strip() == "False", light.stderr


def test_the_installed_algorithm_runs_with_its_own_data_defaults_cost_and_privacy_refusal(installed, tmp_path):
    dataset = random_dataset(n_clients=5, seed=9)
    npz = write_npz(tmp_path / "data.npz", dataset, ["train"] * 3 + ["val", "test"])
    done = _python(installed, "-c", CHECKS, str(npz), str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["codes"] == [0, 2]
    assert "class-prior: secure aggregation / DP are implemented for" in done.stderr
    assert found["names"][-1] == "class-prior" and "incfed" in found["names"]
    assert "class-prior" in found["table"] and "label counts" in found["facts"]

    record = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert record["config"]["smoothing"] == {"value": 0.5, "origin": "own-data default"}
    assert record["communication"]["phases"] == [{"name": "label counts", "up_floats_per_round": 3,
                                                  "down_floats_per_round": 0, "rounds": 1, "bytes_per_float": 8}]
    train = np.concatenate([dataset.clients[c].y for c in dataset.client_ids[:3]])
    counts = np.bincount(train, minlength=3) + 0.5
    np.testing.assert_allclose(record["prior"], counts / counts.sum())
    test = dataset.clients[dataset.client_ids[-1]].y
    assert record["test"]["accuracy"] == pytest.approx(np.mean(test == np.argmax(counts)))


def test_an_entry_point_whose_module_does_not_import_is_a_one_line_error_naming_it(monkeypatch):
    from tff_esn.registry import algorithms

    monkeypatch.setattr(algorithms, "plugin_modules", lambda: (("broken", "toy_algorithm_not_installed.registration"),))
    with pytest.raises(ImportError, match=r"^tff_esn.algorithms entry point 'broken': "
                                          r"toy_algorithm_not_installed.registration does not import \(No module"):
        algorithms.available_algorithms()
