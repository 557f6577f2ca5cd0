"""End to end cost of a run on real UEA/UCR data: CLI, compute, numpy reference.

Workloads: JapaneseVowels (ragged, 7–29 × 12), BasicMotions (100 × 6), OSULeaf (427 × 1),
ACSF1 (1460 × 1), read from the ``.ts`` files shipped in the public sktime wheel, which is
downloaded at bench time into ``$TFF_ESN_CACHE/bench_uea`` (default ``/tmp/tff_esn_bench``)
and converted to npz files there (never committed). The UEA/UCR train/test split is kept:
train sequences are dealt to ``--clients`` train clients by a seeded shuffle, test
sequences to 2 test clients. Offline, a workload is skipped with a message.

Per workload and algorithm (same reservoir: 300 units, mean states, readout bias, λ = 1e-6):

* CLI wall — ``python -m tff_esn run ALGO`` as a subprocess, import to exit (best of ``CLI_REPEATS``);
* compute — the ``seconds`` the run reports (fit + predict inside the process; best of ``CLI_REPEATS``);
* numpy ref — (best of 3 when under 2 s) a float32 numpy ESN written here with the *same* weights
  (``ReservoirWeights.from_config``): leaky recurrence (IncFed eq. 1) with a length mask,
  mean state, ridge (IncFed eq. 3) in float64; its test accuracy must equal ours;
* reservoirpy — the same reservoir matrices in ``reservoirpy`` when it is installed.

Targets are printed with met/missed: compute ≤ 1.2× numpy ref; CLI wall ≤
1.5× compute + 1 s; IncFed TFF ≤ 1.3× IncFed numpy; harvest ≥ 2× tfa on W1 (from
``bench/harvest.py`` in the same run); ``make reproduce`` quick ≤ 20 min (not measured here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

WHEEL = "sktime==1.2.0"
WORKLOADS = ("JapaneseVowels", "BasicMotions", "OSULeaf", "ACSF1")
UNITS, L2 = 300, 1e-6
RESERVOIR = dict(units=UNITS, spectral_radius=0.9, leaky=0.5, seed=0)
CLI_REPEATS = 3
"""Each CLI row is the best of this many runs (wall and compute separately), as the numpy reference is."""


def cache_dir() -> Path:
    root = os.environ.get("TFF_ESN_CACHE")
    path = Path(root) / "bench_uea" if root else Path(tempfile.gettempdir()) / "tff_esn_bench"
    path.mkdir(parents=True, exist_ok=True)
    return path


def fetch_wheel(folder: Path) -> Path | None:
    """The sktime wheel in ``folder`` (downloaded with pip once); ``None`` when offline."""
    found = sorted(folder.glob("sktime-*.whl"))
    if not found:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", WHEEL, "-d", str(folder)],
                              capture_output=True, text=True, timeout=600)
        found = sorted(folder.glob("sktime-*.whl"))
        if proc.returncode or not found:
            print(f"skip: cannot download {WHEEL} ({proc.stderr.strip().splitlines()[-1:]})")
            return None
    return found[-1]


def parse_ts(text: str) -> tuple[list[np.ndarray], list[str]]:
    """Sequences (T_i, F) float32 and string labels of a ``.ts`` file (dimensions split by ':')."""
    seqs, labels, in_data = [], [], False
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not in_data:
            in_data = line.lower() == "@data"
            continue
        *dims, label = line.split(":")
        seqs.append(np.array([[float(v) for v in d.split(",")] for d in dims], np.float32).T)
        labels.append(label)
    return seqs, labels


def build_npz(name: str, wheel: Path, folder: Path, n_clients: int, seed: int = 0) -> Path:
    """``folder/NAME_cC.npz`` in the ``load_npz`` format (ragged object X when lengths differ)."""
    out = folder / f"{name}_c{n_clients}_s{seed}.npz"
    if out.exists():
        return out
    with zipfile.ZipFile(wheel) as zf:
        parts = {s: parse_ts(zf.read(f"sktime/datasets/data/{name}/{name}_{s.upper()}.ts").decode())
                 for s in ("train", "test")}
    classes = sorted({lab for _, labs in parts.values() for lab in labs})
    rng = np.random.default_rng(seed)
    seqs, y, client, split = [], [], [], []
    for s, (xs, labs) in parts.items():
        k = n_clients if s == "train" else 2
        owner = rng.permutation(len(xs)) % k
        for x, lab, c in zip(xs, labs, owner):
            seqs.append(x)
            y.append(classes.index(lab))
            client.append(f"{s}{c}")
            split.append(s)
    if len({x.shape for x in seqs}) == 1:
        X = np.stack(seqs)
    else:
        X = np.empty(len(seqs), object)
        X[:] = seqs
    np.savez(out, X=X, y=np.array(y), client=np.array(client), split=np.array(split))
    return out


def cli_run(npz: Path, algorithm: str, extra: list[str]) -> tuple[float, dict]:
    """Wall seconds of one ``tff-esn run`` subprocess and its metrics record."""
    with tempfile.TemporaryDirectory() as out:
        args = [sys.executable, "-m", "tff_esn", "run", algorithm, "--data", f"npz:{npz}", "--out", out,
                "--state-mode", "mean", "--l2", str(L2), *sum(([f"--{k.replace('_', '-')}", str(v)]
                                                              for k, v in RESERVOIR.items()), []), *extra]
        t0 = time.perf_counter()
        proc = subprocess.run(args, capture_output=True, text=True, timeout=1800)
        wall = time.perf_counter() - t0
        if proc.returncode:
            raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr[-2000:]}")
        return wall, json.loads((Path(out) / "metrics.json").read_text())


def _padded(seqs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.array([s.shape[0] for s in seqs])
    x = np.zeros((len(seqs), lengths.max(), seqs[0].shape[1]), np.float32)
    for i, s in enumerate(seqs):
        x[i, :len(s)] = s
    return x, lengths


def numpy_mean_states(seqs: list[np.ndarray], w) -> np.ndarray:
    """Mean reservoir state of each sequence: float32 leaky recurrence over a masked padded batch."""
    x, lengths = _padded(seqs)
    proj = np.einsum("btf,fu->tbu", x, w.kernel) + w.bias
    state = np.zeros((len(seqs), w.recurrent.shape[0]), np.float32)
    acc = np.zeros_like(state)
    for t in range(x.shape[1]):
        new = state + np.float32(w.leaky) * (np.tanh(proj[t] + state @ w.recurrent) - state)
        valid = (t < lengths)[:, None]
        state = np.where(valid, new, state)
        acc += np.where(valid, state, 0)
    return acc / lengths[:, None]


def numpy_reference(npz: Path) -> tuple[float, float]:
    """(seconds, test accuracy) of the numpy float32 ESN with our weights, mean states + ridge."""
    from tff_esn.esn.hyperparameters import ReservoirConfig
    from tff_esn.esn.weights import ReservoirWeights

    data = np.load(npz, allow_pickle=True)
    seqs, y, split = list(data["X"]), data["y"], data["split"]
    t0 = time.perf_counter()
    w = ReservoirWeights.from_config(ReservoirConfig(**RESERVOIR), seqs[0].shape[1])
    feats = np.hstack([numpy_mean_states(seqs, w), np.ones((len(seqs), 1), np.float32)]).astype(np.float64)
    train, test = split == "train", split == "test"
    targets = np.eye(y.max() + 1)[y[train]]
    s = feats[train]
    readout = np.linalg.solve(s.T @ s + L2 * np.eye(s.shape[1]), s.T @ targets)
    accuracy = float(np.mean(np.argmax(feats[test] @ readout, axis=1) == y[test]))
    return time.perf_counter() - t0, accuracy


def reservoirpy_reference(npz: Path) -> tuple[float, float] | None:
    """(seconds, test accuracy) of the same ESN in reservoirpy (same matrices), ``None`` when not installed."""
    try:
        import reservoirpy
        from reservoirpy.nodes import Reservoir as RpyReservoir
    except ImportError:
        return None
    reservoirpy.verbosity(0)
    from tff_esn.esn.hyperparameters import ReservoirConfig
    from tff_esn.esn.weights import ReservoirWeights

    data = np.load(npz, allow_pickle=True)
    seqs, y, split = list(data["X"]), data["y"], data["split"]
    t0 = time.perf_counter()
    w = ReservoirWeights.from_config(ReservoirConfig(**RESERVOIR), seqs[0].shape[1])
    node = RpyReservoir(units=UNITS, lr=w.leaky, W=w.recurrent.T, Win=w.kernel.T, bias=w.bias[:, None])
    feats = np.stack([node.run(s, reset=True).mean(axis=0) for s in seqs])
    feats = np.hstack([feats, np.ones((len(seqs), 1))])
    s, targets = feats[split == "train"], np.eye(y.max() + 1)[y[split == "train"]]
    readout = np.linalg.solve(s.T @ s + L2 * np.eye(s.shape[1]), s.T @ targets)
    seconds = time.perf_counter() - t0
    return seconds, float(np.mean(np.argmax(feats[split == "test"] @ readout, axis=1) == y[split == "test"]))


def _mark(ok: bool) -> str:
    return "met" if ok else "MISSED"


def harvest_ratio(quick: bool) -> tuple[float, float, float, float]:
    """tfa/ours on W1 (all states returned, best of 3) from ``bench/harvest.py`` in this process: the
    Keras layer's wall and process-CPU ratio, its wall ratio with one step per loop iteration (before
    the unrolling), and the closed-form numpy recurrence's wall ratio."""
    from bench.harvest import run_workload

    rows = {r[1]: r for r in run_workload("W1", 15, 600 if quick else 6000, 1, 200, 3, before=True)}
    return (rows["all states"][4], rows["all states"][8], rows["all states, before: 1 step/iteration"][4],
            rows["all states, closed-form numpy recurrence"][4])


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    names = WORKLOADS[:2] if quick else WORKLOADS
    folder = cache_dir()
    wheel = fetch_wheel(folder)
    if wheel is None:
        return
    print(f"reservoir {RESERVOIR}, mean states, λ={L2}; data from {wheel.name} in {folder}")
    header = ("workload", "clients", "algorithm", "CLI wall s", "compute s", "numpy ref s", "reservoirpy s",
              "compute/ref", "wall/(1.5·compute+1)", "acc ours", "acc ref", "acc reservoirpy")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    targets = []
    for name in names:
        for clients in (5, 20) if name == "ACSF1" else (5,):
            npz = build_npz(name, wheel, folder, clients)
            ref_s, ref_acc = numpy_reference(npz)
            if ref_s < 2:  # short references are noisy on a shared machine: best of 3
                ref_s = min(ref_s, *(numpy_reference(npz)[0] for _ in range(2)))
            rpy = reservoirpy_reference(npz)
            rpy_s, rpy_acc = rpy or (float("nan"), float("nan"))
            runs = {}
            for label, algo, extra in (("centralized", "centralized", []), ("incfed tff", "incfed", []),
                                       ("incfed numpy", "incfed", ["--backend", "numpy"])):
                walls, records = zip(*(cli_run(npz, algo, extra) for _ in range(CLI_REPEATS)))
                wall, record = min(walls), records[0]
                compute = min(r["seconds"] for r in records)
                runs[label] = compute
                acc = record["test"].get("accuracy", float("nan"))
                row = (name, clients, label, wall, compute, ref_s, rpy_s,
                       compute / ref_s, wall / (1.5 * compute + 1), acc, ref_acc, rpy_acc)
                print(" | ".join(v if isinstance(v, str) else f"{v:.3g}" for v in row), flush=True)
                targets.append((f"{name}/{clients} {label}: CLI wall ≤ 1.5× compute + 1 s ({wall:.1f} s)",
                                wall <= 1.5 * compute + 1))
            targets.append((f"{name}/{clients}: centralized compute ≤ 1.2× numpy ref "
                            f"({runs['centralized'] / ref_s:.2f}×)", runs["centralized"] <= 1.2 * ref_s))
            ratio = runs["incfed tff"] / runs["incfed numpy"]
            targets.append((f"{name}/{clients}: IncFed TFF ≤ 1.3× numpy backend ({ratio:.2f}×)", ratio <= 1.3))
    if rpy is None:
        print("(reservoirpy not installed: its column is nan)")
    ratio, cpu_ratio, before, numpy_ratio = harvest_ratio(quick)
    steps = " (quick: 600 steps)" if quick else ""
    targets.append((f"harvest ≥ 2× tfa on W1{steps}, Keras layer ({ratio:.2f}×; CPU time {cpu_ratio:.2f}×; "
                    f"1 step/iteration: {before:.2f}×)", ratio >= 2))
    targets.append((f"harvest ≥ 2× tfa on W1{steps}, closed-form numpy recurrence ({numpy_ratio:.2f}×)",
                    numpy_ratio >= 2))
    print("\ntargets (shared 2-core machine; ratios from this run):")
    for text, ok in targets:
        print(f"  [{_mark(ok)}] {text}")
    print("  [not measured] make reproduce quick ≤ 20 min alone on 2 cores (run `make reproduce` on an idle machine)")


if __name__ == "__main__":
    main(sys.argv[1:])
