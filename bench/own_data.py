"""Own data with default flags: algorithm × UCR/UEA set, accuracy and wall time, beside the baselines.

Each set is read as a researcher's own data: ``ts:DIR/NAME`` (the aeon 1.6.0 wheel's files), its
training cases dealt to 5 IID clients (``--partition iid --clients 5``, seed 0), the file's own test
split as the test client, no validation group. Every algorithm of the list runs with its default
flags (:func:`tff_esn.registry.algorithms.resolve_run`) through :func:`tff_esn.registry.algorithms.run_algorithm`; beside
them the majority class and logistic regression on the raw inputs (the record's ``baselines``) and
esnfed 1.7.1 with its README defaults (a 200-unit ``random_reservoir(density=0.1)``, spectral
radius 0.9, mean-pooled states, ridge 1e-6, ``federated_classifier`` over the same 5 clients).
Cells: test accuracy, the run's wall time (``seconds``) and a gradient-trained run's training-check flags.
The targets checked: centralized and incfed ≥ max(logistic regression, esnfed) − 0.02; the other algorithms
≥ max(majority + 0.05, centralized − 0.10).

``--selection-cost``: a closed-form run with its default selection against the same run with every
chosen setting given as a flag (numpy path), the ratio of their wall seconds and of their CPU seconds
(target ≤ 5).

Flags: ``--data=DIR`` (required: the folder holding ``NAME/NAME_TRAIN.ts`` and ``_TEST.ts``),
``--algorithms=a,b,…`` (default centralized,incfed,fedavg,fedcurv,thesis-central),
``--datasets=A,B,…``, ``--repeats=N`` (selection cost: the fastest of N runs each, default 3),
``--json=PATH`` (the cells), ``--before=PATH`` (an earlier ``--json``: its
accuracy beside this run's), ``--no-esnfed``, ``--quick`` (two sets, the closed-form pair).
The script uses only the package's public calls, so it measures any checkout put first on the path.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

WHERE = ("the UCR/UEA .ts files ship in the aeon 1.6.0 wheel: `pip download aeon==1.6.0 --no-deps` and unzip "
         "it; DIR is its aeon/datasets/data folder")
SETS = ("JapaneseVowels", "BasicMotions", "GunPoint", "PickupGestureWiimoteZ", "ArrowHead", "ItalyPowerDemand")
ALGORITHMS = ("centralized", "incfed", "fedavg", "fedcurv", "thesis-central")
EXACT = ("centralized", "incfed")
CLIENTS = 5
CHOSEN = ("leaky", "spectral_radius", "input_scaling", "units")
"""The reservoir settings a default closed-form run chooses (its ``selection`` record)."""


def _flag(flags: list[str], name: str, default: str | None = None) -> str | None:
    for f in flags:
        if f.startswith(f"--{name}="):
            return f.split("=", 1)[1]
    return default


def data_folder(flags: list[str]) -> Path:
    """The ``--data=DIR`` folder; a clear exit naming where the files come from when it is missing."""
    folder = _flag(flags, "data")
    if folder is None or not Path(folder).is_dir():
        raise SystemExit(f"bench own_data: --data=DIR {'is required' if folder is None else f'{folder!r} is no folder'}"
                         f" ({WHERE}).")
    return Path(folder)


def load(name: str, folder: Path):
    """``(dataset, split)``: the set ``folder/name``'s TRAIN cases on 5 IID clients, its TEST cases the test client."""
    from tff_esn.data.partition import partition_dataset
    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split
    from tff_esn.registry.defaults import default_pipeline

    source = f"ts:{Path(folder) / name / name}"
    data = load_source(source, default_pipeline(source))
    data, split, _ = partition_dataset(data, get_split("npz", data), "iid", CLIENTS, seed=0)
    return data, split


def run(algorithm: str, data, split, **flags) -> dict:
    """One default-flag run's record (``flags`` over the defaults), TFF's context installed when it needs it."""
    from tff_esn import runtime
    from tff_esn.registry.algorithms import get_algorithm, resolve_run, run_algorithm

    owned = get_algorithm(algorithm).settings()
    if "out" in owned:  # the gradient-trained models write their round log and checkpoints
        flags = {"out": tempfile.mkdtemp(prefix=f"own-data-{algorithm}-"), **flags}
    if "progress" in owned:
        flags = {"progress": False, **flags}
    resolved = resolve_run(algorithm, data, **flags)
    if resolved.tff:
        runtime.ensure_context()
    return run_algorithm(resolved, data, split)


def esnfed_cell(data, split) -> tuple[float, float]:
    """esnfed 1.7.1 with its README defaults on the same clients: (test accuracy, seconds)."""
    from esnfed import EchoStateNetwork, topologies
    from esnfed.classification import federated_classifier, predict_labels

    def sequences(cid):
        c = data.clients[cid]
        return [c.x[i, :c.steps[i]].astype(np.float64) for i in range(len(c))], c.y

    start = time.perf_counter()
    w = topologies.random_reservoir(200, density=0.1, rng=0)
    esn = EchoStateNetwork(len(data.feature_names), data.n_classes, w, spectral_radius=0.9, seed=0)
    readout = federated_classifier(esn, [sequences(c) for c in split.train], data.n_classes)
    truth, predicted = [], []
    for cid in split.test:
        x, y = sequences(cid)
        predicted.append(predict_labels(esn, x, readout))
        truth.append(y)
    accuracy = float(np.mean(np.concatenate(predicted) == np.concatenate(truth)))
    return accuracy, time.perf_counter() - start


def _timed(algorithm: str, data, split, **flags) -> tuple[dict, float]:
    """A run's record and the CPU seconds of this process it took (steadier than wall time on a shared machine)."""
    began = time.process_time()
    record = run(algorithm, data, split, **flags)
    return record, time.process_time() - began


def selection_cost(algorithm: str, data, split, repeats: int = 3) -> dict | None:
    """The default run (selection) against the run with every chosen setting given (numpy path), each
    the fastest of ``repeats`` runs (the machine is shared), in wall seconds and in CPU seconds."""
    from tff_esn.registry.algorithms import get_algorithm

    backend = get_algorithm(algorithm).settings().get("backend")
    flags = {"backend": "numpy"} if backend is not None and "numpy" in (backend.choices or ()) else {}
    chosen = [_timed(algorithm, data, split, **flags) for _ in range(repeats)]
    if "selection" not in chosen[0][0]:
        return None
    first = chosen[0][0]
    picked = first["selection"]
    fixed = {"l2": first["l2_selection"]["l2"], "state_mode": picked["state_mode"],
             **{k: picked[k] for k in ("raw_inputs", *CHOSEN) if k in picked}}
    given = [_timed(algorithm, data, split, **flags, **fixed) for _ in range(repeats)]
    assert given[0][0]["test"]["accuracy"] == first["test"]["accuracy"], (first["test"], given[0][0]["test"])
    selected, fixed_seconds = min(r["seconds"] for r, _ in chosen), min(r["seconds"] for r, _ in given)
    selected_cpu, fixed_cpu = min(c for _, c in chosen), min(c for _, c in given)
    return {"selected": selected, "fixed": fixed_seconds, "ratio": selected / fixed_seconds,
            "selected_cpu": selected_cpu, "fixed_cpu": fixed_cpu, "cpu_ratio": selected_cpu / fixed_cpu,
            "candidates": len(picked.get("candidates", ()))}


def main(flags: list[str]) -> None:
    quick = "--quick" in flags
    algorithms = tuple(_flag(flags, "algorithms", ",".join(EXACT if quick else ALGORITHMS)).split(","))
    names = tuple(_flag(flags, "datasets", ",".join(SETS[:2] if quick else SETS)).split(","))
    before = json.loads(Path(_flag(flags, "before")).read_text()) if _flag(flags, "before") else {}
    folder = data_folder(flags)
    cells: dict[str, dict] = {}
    for name in names:
        if not (folder / name / f"{name}_TRAIN.ts").exists():
            print(f"{name}: no {folder / name}; skipped", flush=True)
            continue
        data, split = load(name, folder)
        row: dict = {}
        for algorithm in algorithms:
            try:
                record = run(algorithm, data, split)
            except (ValueError, RuntimeError) as err:  # a refused setting is a cell, not the end of the table
                row[algorithm] = {"error": " ".join(str(err).split())[:120]}
                continue
            row[algorithm] = {"accuracy": record["test"]["accuracy"], "seconds": record["seconds"],
                              "flags": (record.get("result_check") or {}).get("test", []),
                              "training_check": record.get("training_check", []),
                              "choice": {k: record.get("selection", {}).get(k) for k in
                                         ("state_mode", "raw_inputs", *CHOSEN)}
                              | {"l2": (record.get("l2_selection") or {}).get("l2")}}
            baselines = record["baselines"]
            row["majority"] = {"accuracy": baselines["majority"]["test"]["accuracy"]}
            row["logistic regression"] = {"accuracy": baselines["logistic_regression"]["test"]["accuracy"]}
            print(f"{name:24s} {algorithm:16s} {record['test']['accuracy']:.4f} {record['seconds']:8.2f} s",
                  flush=True)
        if "--no-esnfed" not in flags:
            accuracy, seconds = esnfed_cell(data, split)
            row["esnfed 1.7.1"] = {"accuracy": accuracy, "seconds": seconds}
        if "--selection-cost" in flags:
            for algorithm in EXACT:
                cost = selection_cost(algorithm, data, split, int(_flag(flags, "repeats", "3")))
                if cost is not None:
                    row[f"{algorithm} selection cost"] = cost
                    print(f"{name:24s} {algorithm:16s} selection {cost['selected']:.3f} s / fixed "
                          f"{cost['fixed']:.3f} s = {cost['ratio']:.2f}× (CPU {cost['selected_cpu']:.3f} s / "
                          f"{cost['fixed_cpu']:.3f} s = {cost['cpu_ratio']:.2f}×; {cost['candidates']} candidates)",
                          flush=True)
        cells[name] = row
    print(table(cells, algorithms, before))
    if _flag(flags, "json"):
        Path(_flag(flags, "json")).write_text(json.dumps(cells, indent=1))


def _target(name: str, row: dict, algorithm: str) -> float | None:
    lr = row.get("logistic regression", {}).get("accuracy")
    if lr is None:
        return None
    if algorithm in EXACT:
        return max(lr, row.get("esnfed 1.7.1", {}).get("accuracy", 0.0)) - 0.02
    central = row.get("centralized", {}).get("accuracy")
    majority = row["majority"]["accuracy"]
    return max(majority + 0.05, (central - 0.10) if central is not None else 0.0)


def table(cells: dict, algorithms: tuple[str, ...], before: dict) -> str:
    """Markdown: one row per set, a cell per algorithm (accuracy, seconds; ✗ below its target, ⚠ flagged
    by the result check, ``before → after`` with ``--before``), then the baselines."""
    columns = [*algorithms, "majority", "logistic regression", "esnfed 1.7.1"]
    lines = ["| set | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for name, row in cells.items():
        out = []
        for column in columns:
            cell = row.get(column)
            if cell is None:
                out.append("-")
                continue
            if "error" in cell:
                out.append(f"error: {cell['error']}")
                continue
            text = f"{cell['accuracy']:.3f}"
            old = before.get(name, {}).get(column, {}).get("accuracy")
            if old is not None and column in algorithms:
                text = f"{old:.3f} → {text}"
            if "seconds" in cell:
                text += f" ({cell['seconds']:.1f} s)"
            target = _target(name, row, column) if column in algorithms else None
            if target is not None and cell["accuracy"] < target:
                text += " ✗"
            if cell.get("flags"):
                text += " ⚠"
            if cell.get("training_check"):
                text += f" ({'; '.join(cell['training_check'])})"
            out.append(text)
        lines.append(f"| {name} | " + " | ".join(out) + " |")
    return "\n".join(lines) + ("\n\n✗: below the target (centralized/incfed: max(logistic regression, esnfed) − 0.02;"
                               " others: max(majority + 0.05, centralized − 0.10)); ⚠: one class or not above the "
                               "majority class (result check); (…): the gradient training's flags (training check).")
