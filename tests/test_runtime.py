"""The package owns its TFF workers: a piped run ends and leaves no worker behind."""

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from tff_esn.runs.run_folder import rounds_done

SCRIPT = textwrap.dedent(
    """
    import signal, sys, time
    from tff_esn import runtime
    if sys.argv[2] == "entry":  # what the CLI main does; a library caller ("library") does neither
        runtime.install_exit_hooks()
    runtime.ensure_context()
    import numpy as np
    import tensorflow_federated as tff

    @tff.tensorflow.computation(tff.TensorType(np.float32, [2]))
    def double(x):
        return x * 2.0

    print("result", double(np.array([1.0, 2.0], np.float32)).tolist(), flush=True)
    print("sigterm", "default" if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL else "handled", flush=True)
    print("workers", *runtime.owned_worker_pids(), flush=True)
    mode = sys.argv[1]
    if mode == "raise":
        raise RuntimeError("boom")
    if mode == "wait":
        time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _run(mode: str, timeout: float = 120, caller: str = "entry") -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, mode, caller],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("workers") or time.monotonic() > deadline:
            break
    return proc, lines


def _worker_pids(lines: list[str]) -> list[int]:
    for line in lines:
        if line.startswith("workers"):
            return [int(p) for p in line.split()[1:]]
    raise AssertionError("child printed no worker line:\n" + "".join(lines))


def _drain_to_eof(proc: subprocess.Popen, timeout: float = 60) -> str:
    """Rest of the child's output; fails if the pipe is still open after ``timeout``."""
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert not reader.is_alive(), "the output pipe never closed (a worker holds it open?)"
    proc.wait(timeout=timeout)
    return "".join(chunks)


@pytest.mark.parametrize("mode", ["exit", "raise"])
def test_piped_run_ends_and_stops_worker(mode):
    proc, lines = _run(mode)
    pids = _worker_pids(lines)
    assert len(pids) == 1
    assert any("result [2.0, 4.0]" in line for line in lines)
    rest = _drain_to_eof(proc)
    assert proc.returncode == (0 if mode == "exit" else 1)
    if mode == "raise":
        assert "boom" in rest
    time.sleep(0.2)
    assert not _alive(pids[0]), "worker survived its parent"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_signalled_parent_takes_worker_down(sig):
    proc, lines = _run("wait")
    pids = _worker_pids(lines)
    assert _alive(pids[0])
    proc.send_signal(sig)
    _drain_to_eof(proc)
    deadline = time.monotonic() + 10
    while _alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pids[0]), f"worker survived {sig.name} of its parent"
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM


def test_library_calls_install_no_handler_and_the_worker_still_dies_with_the_process():
    """Without the entry point's hooks SIGTERM keeps its default action; the parent-death signal stops the worker."""
    proc, lines = _run("wait", caller="library")
    pids = _worker_pids(lines)
    assert "sigterm default\n" in lines, "a library call installed a SIGTERM handler"
    proc.send_signal(signal.SIGTERM)
    _drain_to_eof(proc)
    assert proc.returncode == -signal.SIGTERM
    deadline = time.monotonic() + 10
    while _alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pids[0]), "worker survived its SIGTERMed parent"


def test_a_worker_started_on_a_thread_that_ends_lives_on():
    """PR_SET_PDEATHSIG follows the forking *thread*: workers are forked on the long-lived spawner thread."""
    from tff_esn import runtime

    started = []

    def start_and_connect():  # as TFF's event-loop thread of a context does (then it may end)
        started.append(runtime.LocalWorker().start())
        runtime.connect(started[0].address, worker=started[0], timeout=30)

    thread = threading.Thread(target=start_and_connect)
    thread.start()
    thread.join()
    worker = started[0]
    try:
        time.sleep(0.5)
        assert worker.alive(), "the worker died with the thread that started it"
    finally:
        worker.stop()


LIBRARY_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    from tff_esn import runtime
    from tff_esn.registry.algorithms import run_algorithm
    from tff_esn.data.sequences import dataset_from_arrays
    from tff_esn.data.splits import get_split
    from tff_esn.registry.algorithms import resolve_run

    rng = np.random.default_rng(0)
    x = rng.normal(size=(24, 6, 3)).astype(np.float32)
    dataset = dataset_from_arrays(x, np.arange(24) % 2, np.arange(24) % 6, source="toy")
    split = get_split("npz", dataset, seed=0)
    record = run_algorithm(resolve_run("incfed", dataset, units=8, backend="tff"), dataset, split)
    print("accuracy", record["test"]["accuracy"], flush=True)
    print("owned", *runtime.owned_worker_pids(), flush=True)
    print("workers", *runtime.child_worker_pids(), flush=True)
    """
)


def test_a_library_script_without_ensure_context_stops_the_worker_it_caused():
    """A plain script running a TFF computation (no ``ensure_context``) ends its pipe and leaves no worker."""
    proc = subprocess.Popen([sys.executable, "-c", LIBRARY_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    lines: list[str] = []
    for line in proc.stdout:  # up to the "workers" line: the old pipe never reached EOF
        lines.append(line)
        if line.startswith("workers"):
            break
    pids = _worker_pids(lines)
    try:
        assert len(pids) == 1, "".join(lines)
        assert f"owned {pids[0]}\n" in lines, "the worker was started by TFF's stock context, not tff_esn.runtime"
        _drain_to_eof(proc)
        assert proc.returncode == 0, "".join(lines)
        time.sleep(0.2)
        assert not _alive(pids[0]), "the worker survived the script"
    finally:
        for pid in pids:  # this script's worker only, if the test failed before it died
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_load_tff_replaces_tff_stock_context_and_keeps_any_other():
    import tensorflow_federated as tff

    from tff_esn import runtime

    stack = tff.framework.get_context_stack()
    ours = runtime.ensure_context()
    try:
        tff.backends.native.set_sync_local_cpp_execution_context()  # what `import tensorflow_federated` installs
        assert stack.current is not ours
        assert runtime.load_tff() is tff
        assert stack.current is ours
        user = runtime.build_context()
        stack.set_default_context(user)
        runtime.load_tff()
        assert stack.current is user
    finally:
        assert runtime.ensure_context() is ours
    assert runtime.child_worker_pids() == runtime.owned_worker_pids()


def test_a_timeout_given_to_ensure_context_is_the_context_s():
    """A built local context with another timeout is rebuilt; without a timeout the built one stays."""
    from tff_esn import runtime
    from tff_esn.runtime import context

    first = runtime.ensure_context()
    try:
        changed = runtime.ensure_context(timeout=7)
        assert changed is not first and context._STATE["key"] == (None, 7.0)
        assert runtime.ensure_context() is changed and runtime.ensure_context(timeout=7.0) is changed
        with pytest.raises(ValueError, match="seconds > 0"):
            runtime.ensure_context(timeout=0)
    finally:
        restored = runtime.ensure_context(force=True)
    assert context._STATE["key"] == (None, runtime.DEFAULT_TIMEOUT) and runtime.ensure_context() is restored


def test_library_builders_leave_a_user_context_installed():
    """Building and running IncFed through TFF uses the installed context and never replaces it."""
    import tensorflow_federated as tff

    from closed_form_data import random_dataset
    from tff_esn import runtime
    from tff_esn.esn.hyperparameters import ReservoirConfig
    from tff_esn.closed_form.harvest import Harvester
    from tff_esn.esn.weights import ReservoirWeights, StateSpec
    from tff_esn.closed_form.incfed import fit_incfed, federate_tff, federate_stats_tff

    data = random_dataset(n_clients=3, seed=1)
    weights = ReservoirWeights.from_config(ReservoirConfig(units=8, seed=3), 3)
    spec = StateSpec("mean", 0)
    stats = [Harvester(data, spec).stats(weights, c) for c in data.client_ids]
    ours = runtime.ensure_context()
    user = runtime.build_context()  # a context object the runtime did not install
    stack = tff.framework.get_context_stack()
    stack.set_default_context(user)
    try:
        got = federate_stats_tff(stats, 1e-2)
        assert stack.current is user
        got_raw = federate_tff(weights, list(data.clients.values()), 3, spec, 1e-2).readout
        assert stack.current is user
    finally:
        assert runtime.ensure_context() is ours  # puts ours back: the next tests run on it
        assert stack.current is ours
        runtime.stop_workers()
    ref = fit_incfed(stats, 1e-2)
    np.testing.assert_allclose(got, ref, atol=1e-9 * np.abs(ref).max())
    np.testing.assert_allclose(got_raw, ref, atol=1e-4 * np.abs(ref).max())


def test_partitioning_patch_refuses_other_tff_versions(monkeypatch):
    import tensorflow_federated as tff
    from tensorflow_federated.python.core.impl.execution_contexts import mergeable_comp_execution_context as mc

    from tff_esn import runtime
    from tff_esn.runtime import tff_patch

    assert tff.__version__ in tff_patch.PATCHED_VERSIONS  # the pinned version is the patched one
    monkeypatch.setattr(tff, "__version__", "0.88.0")
    before = mc._partition_value
    with pytest.raises(runtime.TFFVersionError, match=r"written for tensorflow-federated 0\.87\.0; installed: 0\.88\.0"):
        runtime.build_context(["localhost:1", "localhost:2"])
    assert mc._partition_value is before, "the patch was applied on a version it was not written for"
    runtime.build_context(["localhost:1"])  # one worker needs no patch


def test_in_process_context_and_stop():
    from tff_esn import runtime

    runtime.ensure_context()
    import numpy as np
    import tensorflow_federated as tff

    @tff.tensorflow.computation(tff.TensorType(np.int32, []))
    def inc(x):
        return x + 1

    assert inc(np.int32(41)) == 42
    pids = runtime.owned_worker_pids()
    assert len(pids) == 1
    runtime.stop_workers()
    assert runtime.owned_worker_pids() == [] and not _alive(pids[0])
    assert inc(np.int32(1)) == 2  # a fresh worker is started on demand
    assert len(runtime.owned_worker_pids()) == 1


def test_unreachable_worker_is_a_clear_error():
    from tff_esn import runtime

    with pytest.raises(runtime.WorkerError, match="not reachable"):
        runtime.connect(f"localhost:{runtime.pick_port()}", timeout=1.0)
    with pytest.raises(ValueError, match="host:port"):
        runtime.build_context(["nonsense"])


# ---------------------------------------------------------------- stuck workers
STUCK_TIMEOUT = 3.0


def _fedavg_config(rounds):
    from tff_esn import ReservoirConfig
    from tff_esn.federated import FedAvgConfig, ThesisModelConfig

    model = ThesisModelConfig(reservoir=ReservoirConfig(units=6, spectral_radius=0.9, seed=4), batch_size=4,
                              learning_rate=0.05)
    return FedAvgConfig(model=model, rounds=rounds, clients_per_round=4, noise_std=0.5, progress=False)


@pytest.fixture
def one_worker():
    from tff_esn import runtime

    worker = runtime.LocalWorker().start()
    runtime.connect(worker.address, worker=worker)
    yield worker
    if worker.alive():
        os.kill(worker.pid, signal.SIGCONT)  # a stopped process would hold SIGTERM pending
    worker.stop()
    runtime.ensure_context(force=True)


def test_stopped_worker_ends_the_run_within_the_timeout_and_resume_continues(one_worker, tmp_path):
    import numpy as np

    from closed_form_data import THESIS_SPLIT, random_thesis_dataset
    from tff_esn import runtime
    from tff_esn.federated import run_federated

    data, config = random_thesis_dataset(), _fedavg_config(rounds=6)
    runtime.ensure_context([one_worker.address], timeout=STUCK_TIMEOUT)
    reference = run_federated(data, THESIS_SPLIT, config)
    checkpoints = tmp_path / "checkpoints"
    stopped = {}

    def stop_after_first_round():
        while not (checkpoints / "state.npz").exists():
            time.sleep(0.02)
        os.kill(one_worker.pid, signal.SIGSTOP)
        stopped["at"] = time.monotonic()

    threading.Thread(target=stop_after_first_round, daemon=True).start()
    with pytest.raises(runtime.WorkerError, match=f"worker at {one_worker.address} did not answer for 3 s"):
        run_federated(data, THESIS_SPLIT, dataclasses.replace(config, out=str(tmp_path)))
    waited = time.monotonic() - stopped["at"]
    print(f"stopped worker → WorkerError after {waited:.2f} s (timeout {STUCK_TIMEOUT} s)")
    assert waited < STUCK_TIMEOUT + 2.0, f"the stopped worker was waited for {waited:.1f} s"
    with open(f"/proc/{one_worker.pid}/stat") as fh:
        assert fh.read().split(") ")[1].split()[0] == "T", "the worker was not stopped during the run"
    done = rounds_done(tmp_path)
    assert 1 <= done < config.rounds

    os.kill(one_worker.pid, signal.SIGCONT)
    time.sleep(STUCK_TIMEOUT / 4 + 0.2)  # calls within one probe interval of the error still fail fast (Heartbeat.call)
    resumed = run_federated(data, THESIS_SPLIT, dataclasses.replace(config, out=str(tmp_path), resume=True))
    assert [r["round"] for r in resumed["extra"]["rounds"]] == list(range(1, config.rounds + 1))  # history kept
    for key in ("kernel", "bias"):
        np.testing.assert_array_equal(resumed["extra"]["weights"][key], reference["extra"]["weights"][key])
    assert resumed["test"] == reference["test"]


def test_a_step_longer_than_the_timeout_on_a_live_worker_is_not_abandoned(one_worker):
    import numpy as np
    import tensorflow as tf
    import tensorflow_federated as tff

    from tff_esn import runtime

    timeout = 0.3
    runtime.ensure_context([one_worker.address], timeout=timeout)

    @tff.tensorflow.computation(tff.TensorType(np.int32, []))
    def busy(n):
        m = tf.fill([256, 256], 1e-3)
        return tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, tf.tanh(tf.matmul(x, m))), (0, m))[1][0, 0]

    busy(np.int32(1))
    began = time.monotonic()
    busy(np.int32(6000))
    took = time.monotonic() - began
    assert took > 4 * timeout, f"the step took only {took:.2f} s; make it longer so the test means something"


def test_a_prestarted_worker_is_running_at_once_and_serves_the_first_computation():
    code = textwrap.dedent(
        """
        from tff_esn import runtime
        runtime.install_exit_hooks()
        runtime.ensure_context(prestart=True)
        before = runtime.owned_worker_pids()
        import numpy as np
        import tensorflow_federated as tff

        @tff.tensorflow.computation(tff.TensorType(np.int32, []))
        def inc(x):
            return x + 1

        print(len(before), before == runtime.owned_worker_pids(), inc(np.int32(1)), before == runtime.owned_worker_pids())
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1", "True", "2", "True"]
