"""Start-up: the whole process of ``tff-esn run incfed`` on JapaneseVowels (5 iid clients) beside esnfed's
``federated_classifier`` on the same clients — wall time and peak resident memory of each fresh process.

Each row is a fresh process (one BLAS thread, bytecode cached: one warm-up run each), interleaved, best of
``--repeat=N`` (default 3): ``tff-esn`` with
its own-data defaults (λ, state mode and reservoir chosen on folds; the baselines fitted), ``tff-esn`` with the
choices fixed (``--l2 1e-6 --state-mode mean``, no search), and esnfed 1.7 (if installed): a 100-unit reservoir,
``federated_classifier(pool="mean")`` on the same 5 clients of the training file, test accuracy on the test file
(its ``.ts`` parsed by :func:`_read_ts`, numpy only). The data: ``$UEA_DATA/JapaneseVowels`` (default
``/work/uea/ex/aeon/datasets/data``, the aeon wheel's copy); without it the bench says so and stops.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("UEA_DATA", "/work/uea/ex/aeon/datasets/data")) / "JapaneseVowels"

ESNFED = '''
import sys, numpy as np
from esnfed.classification import federated_classifier, predict_labels
from esnfed.esn import EchoStateNetwork
from esnfed.topologies import random_reservoir

def read(path):
    rows, labels = [], []
    data = False
    for line in open(path):
        line = line.strip()
        if data and line:
            *dims, label = line.split(":")
            rows.append(np.array([[float(v) for v in d.split(",")] for d in dims]).T)
            labels.append(label)
        data = data or line.lower() == "@data"
    return rows, labels

x, y = read(sys.argv[1] + "_TRAIN.ts")
xt, yt = read(sys.argv[1] + "_TEST.ts")
names = sorted(set(y))
y, yt = np.array([names.index(v) for v in y]), np.array([names.index(v) for v in yt])
order = np.random.default_rng(0).permutation(len(x))
clients = [([x[i] for i in part], y[part]) for part in np.array_split(order, 5)]
esn = EchoStateNetwork(n_inputs=x[0].shape[1], n_outputs=len(names), reservoir=random_reservoir(100, rng=0),
                       washout=0, seed=0)
w = federated_classifier(esn, clients, len(names), pool="mean")
print("accuracy", np.mean(predict_labels(esn, xt, w, pool="mean") == yt))
'''


def _process(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident MB of one fresh process running ``argv``."""
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},  # a user's cached bytecode
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    began = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - began
    if status != 0:
        raise RuntimeError(f"{' '.join(argv[:6])} …: exit status {status}: {proc.stderr.read().decode()[-500:]}")
    proc.stderr.close()
    return seconds, usage.ru_maxrss / 1024


def main(flags: list[str]) -> None:
    if not DATA.is_dir():
        print(f"no JapaneseVowels at {DATA} (set $UEA_DATA to the folder holding it); nothing measured")
        return
    repeat = next((int(f.split("=", 1)[1]) for f in flags if f.startswith("--repeat=")), 3)
    source = f"ts:{DATA / 'JapaneseVowels'}"
    with tempfile.TemporaryDirectory() as out:
        base = [sys.executable, "-m", "tff_esn", "run", "incfed", "--data", source, "--partition", "iid",
                "--clients", "5", "--force", "--out"]
        rows = {"tff-esn run incfed (defaults)": base + [f"{out}/a"],
                "tff-esn run incfed (fixed)": base + [f"{out}/b", "--l2", "1e-6", "--state-mode", "mean",
                                                      "--raw-inputs", "false", "--reservoir-search", ""]}
        if importlib.util.find_spec("esnfed") is not None:
            rows["esnfed federated_classifier"] = [sys.executable, "-c", ESNFED, str(DATA / "JapaneseVowels")]
        best = {name: (float("inf"), float("inf")) for name in rows}
        for argv in rows.values():  # warm-up: the bytecode written, the data in the page cache
            _process(argv)
        for _ in range(repeat):  # interleaved: the machine's load falls on every row alike
            for name, argv in rows.items():
                seconds, peak = _process(argv)
                best[name] = (min(best[name][0], seconds), min(best[name][1], peak))
    print(f"JapaneseVowels, 5 iid clients; whole fresh processes, one BLAS thread, best of {repeat}")
    reference = best.get("esnfed federated_classifier")
    print(f"{'process':34s} {'seconds':>8s} {'peak MB':>8s} {'÷ esnfed s':>10s} {'÷ esnfed MB':>11s}")
    for name, (seconds, peak) in best.items():
        ratios = (f"{seconds / reference[0]:10.2f} {peak / reference[1]:11.2f}" if reference
                  else f"{'—':>10s} {'—':>11s}")
        print(f"{name:34s} {seconds:8.2f} {peak:8.0f} {ratios}")
