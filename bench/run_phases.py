"""Where a whole federated run's wall time goes, per backend: ``python -m bench run_phases [--quick]``.

One ``run_federated`` of the thesis defaults (FedAvg, 200 units, 78 rounds — ``--quick``: 10 —,
5 of 10 clients, server lr 1.0, same reservoir) on the embedded synthetic WESAD, with a run
folder, on each backend (``tff``, ``sim``), split into: building the federation (client
states harvested or read from the cache, evaluation states, the process), the first round
(tracing), the other rounds' ``process.next``, the rounds' client data, and the per-round
work around a round — evaluating the server model on the validation and test clients, the
row to ``rounds.csv``/TensorBoard and the state checkpoint — and the final scoring. The
phases are timed by wrapping :mod:`tff_esn.federated.training`'s own functions in this
process; the two backends' final weights are printed side by side (float32 rounding apart).
"""

from __future__ import annotations

import collections
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CACHE = os.path.join(tempfile.gettempdir(), "tff_esn_bench")


class _Timer:
    """Seconds and calls per phase name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.calls: collections.Counter = collections.Counter()

    def wrap(self, name: str, fn: Callable) -> Callable:
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - began
                self.calls[name] += 1
        return timed


class _TimedProcess:
    """A learning process whose first ``next`` (tracing included) is timed apart from the others."""

    def __init__(self, process: Any, timer: _Timer):
        self._process, self._timer, self._first = process, timer, True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._process, name)

    def next(self, state: Any, data: Any) -> Any:
        name = "first round (tracing)" if self._first else "process.next"
        self._first = False
        return self._timer.wrap(name, self._process.next)(state, data)


def phases(backend: str, rounds: int) -> tuple[dict[str, float], Any]:
    """``({phase: seconds}, final kernel)`` of one run on ``backend``."""
    import unittest.mock as mock

    from tff_esn.data.sources import load_source
    from tff_esn.data.splits import get_split
    from tff_esn.federated import training
    from tff_esn.federated.checkpoints import RoundCheckpoint
    from tff_esn.federated.configs import FedAvgConfig
    from tff_esn.federated.round_log import RoundLog

    timer = _Timer()
    build = training._federation

    def federation(*args: Any, **kwargs: Any) -> Any:
        fed = timer.wrap("build federation", build)(*args, **kwargs)
        fed.process = _TimedProcess(fed.process, timer)
        fed.client_data = timer.wrap("client data", fed.client_data)
        return fed

    dataset = load_source("synthetic-wesad", "thesis", cache_dir=CACHE)
    split = get_split("thesis-primal", dataset, seed=0)
    with tempfile.TemporaryDirectory() as out, \
            mock.patch.object(training, "_federation", federation), \
            mock.patch.object(training, "_round_row", timer.wrap("evaluation", training._round_row)), \
            mock.patch.object(training, "_train", timer.wrap("train loop", training._train)), \
            mock.patch.object(RoundLog, "append", timer.wrap("rounds.csv + tensorboard", RoundLog.append)), \
            mock.patch.object(RoundCheckpoint, "save", timer.wrap("checkpoint", RoundCheckpoint.save)):
        config = FedAvgConfig(rounds=rounds, out=out, cache_dir=CACHE, progress=False, backend=backend)
        began = time.perf_counter()
        record = training.run_federated(dataset, split, config)
        total = time.perf_counter() - began
    seconds = dict(timer.seconds)
    loop = seconds.pop("train loop")
    seconds["other (sampling, bookkeeping)"] = loop - sum(seconds.values()) + seconds["build federation"]
    seconds["final scoring"] = total - seconds["build federation"] - loop
    seconds["total"] = total
    return seconds, record["extra"]["weights"]["kernel"]


def main(argv: list[str]) -> None:
    import numpy as np

    from tff_esn import runtime

    runtime.ensure_context()
    rounds = 10 if "--quick" in argv else 78
    results = {backend: phases(backend, rounds) for backend in ("tff", "sim")}
    names = list(dict.fromkeys(k for seconds, _ in results.values() for k in seconds))
    print(f"one FedAvg run, {rounds} rounds, synthetic WESAD, thesis defaults — seconds (ms per round)")
    print(f"{'phase':<32}" + "".join(f"{b:>22}" for b in results))
    for name in names:
        cells = "".join(f"{results[b][0].get(name, 0.0):>10.2f} ({results[b][0].get(name, 0.0) / rounds * 1e3:7.1f})"
                        for b in results)
        print(f"{name:<32}{cells}")
    around = ("evaluation", "rounds.csv + tensorboard", "checkpoint")
    for backend, (seconds, _) in results.items():
        work = sum(seconds.get(k, 0.0) for k in around) / rounds
        print(f"{backend}: per-round work around the round {work * 1e3:.1f} ms, process.next "
              f"{seconds.get('process.next', 0.0) / max(rounds - 1, 1) * 1e3:.1f} ms per round")
    gap = float(np.max(np.abs(results["tff"][1] - results["sim"][1])))
    print(f"max |kernel tff − kernel sim| after {rounds} rounds: {gap:.3g}")
