"""The package owns its TFF workers: a piped run ends and leaves no worker behind."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

SCRIPT = textwrap.dedent(
    """
    import sys, time
    from tff_esn import runtime
    runtime.ensure_context()
    import numpy as np
    import tensorflow_federated as tff

    @tff.tensorflow.computation(tff.TensorType(np.float32, [2]))
    def double(x):
        return x * 2.0

    print("result", double(np.array([1.0, 2.0], np.float32)).tolist(), flush=True)
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


def _run(mode: str, timeout: float = 120) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, mode],
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
