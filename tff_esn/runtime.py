"""Ownership of TensorFlow Federated's execution context and its C++ workers.

TFF's default context starts a C++ ``worker_binary`` lazily on the first federated
computation. That process outlives Python, ignores SIGINT and inherits the parent's
stdout/stderr, so a pipe reader (CI, ``| tee``, ``subprocess`` capture) never sees EOF.
This module replaces the default context with one whose worker we start ourselves:

* stdio of the worker is ``/dev/null`` (a pipe reader of the parent is never held open);
* the worker gets ``PR_SET_PDEATHSIG = SIGKILL`` so it dies with its parent, even when
  the parent is killed with SIGKILL;
* at normal exit, on an exception reaching the top level and on SIGTERM the worker gets
  SIGTERM, then SIGKILL if it does not stop within a grace period;
* a worker that dies while starting gives :class:`WorkerError` instead of TFF's endless
  wait.

Every entry point of the package (CLI, scripts, tests) calls :func:`ensure_context`;
importing :mod:`tff_esn` does so as well, which costs nothing until the first federated
computation runs (the worker starts lazily).
"""

from __future__ import annotations

import atexit
import ctypes
import dataclasses
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence

_GRPC_MAX_MESSAGE_BYTES = 2 * 1000 * 1000 * 1000
_GRPC_OPTIONS = [
    ("grpc.max_message_length", _GRPC_MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", _GRPC_MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", _GRPC_MAX_MESSAGE_BYTES),
]
_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
_LOCK = threading.RLock()
_OWNED: list["LocalWorker"] = []
_STATE: dict[str, object] = {"context": None, "atexit": False, "sigterm": False}


class WorkerError(RuntimeError):
    """A TFF worker could not be started, reached, or died during a computation."""


def worker_binary_path() -> str:
    """Path of the ``worker_binary`` shipped inside the installed TFF wheel."""
    import tensorflow_federated

    path = os.path.join(os.path.dirname(tensorflow_federated.__file__), "data", "worker_binary")
    if not os.path.isfile(path):
        raise WorkerError(
            f"TFF worker binary not found at {path}; reinstall tensorflow-federated==0.87.0 "
            "(see constraints.txt / `make .venv`)."
        )
    return path


def _die_with_parent() -> None:
    """Runs in the forked child before exec: SIGKILL this process when the parent dies."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def pick_port() -> int:
    """An unused loopback TCP port."""
    import portpicker

    return portpicker.pick_unused_port()


@dataclasses.dataclass
class LocalWorker:
    """A ``worker_binary`` child process owned by this Python process.

    Args:
        port: TCP port to serve on (an unused one when ``None``).
        max_concurrent_computation_calls: passed to the worker (non-positive: no limit).
        host: address the worker binds to (loopback by default).
    """

    port: int | None = None
    max_concurrent_computation_calls: int = -1
    host: str = "localhost"
    process: subprocess.Popen | None = dataclasses.field(default=None, init=False)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> "LocalWorker":
        """Starts the worker; idempotent while it is alive."""
        with _LOCK:
            if self.process is not None and self.process.poll() is None:
                return self
            if self.port is None:
                self.port = pick_port()
            args = [
                worker_binary_path(),
                f"--port={self.port}",
                f"--max_concurrent_computation_calls={self.max_concurrent_computation_calls}",
            ]
            self.process = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
                close_fds=True,
            )
            _OWNED.append(self)
            _install_exit_hooks()
            return self

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace_seconds: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``grace_seconds`` (the worker ignores SIGINT)."""
        with _LOCK:
            proc = self.process
            if proc is None:
                return
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=grace_seconds)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if self in _OWNED:
                _OWNED.remove(self)


def connect(address: str, *, timeout: float = 60.0, worker: LocalWorker | None = None):
    """A ready ``tff.framework.RemoteExecutorGrpcStub`` for a worker at ``address``.

    Waits at most ``timeout`` seconds; when ``worker`` is given its process is checked
    while waiting, so a worker that dies at start raises at once instead of hanging.
    """
    import grpc
    import tensorflow_federated as tff

    channel = grpc.insecure_channel(address, _GRPC_OPTIONS)
    stub = tff.framework.RemoteExecutorGrpcStub(channel)
    deadline = time.monotonic() + timeout
    while not stub.is_ready:
        if worker is not None and not worker.alive():
            code = None if worker.process is None else worker.process.returncode
            raise WorkerError(f"TFF worker at {address} exited while starting (exit code {code}).")
        if time.monotonic() > deadline:
            raise WorkerError(
                f"TFF worker at {address} not reachable after {timeout:.0f} s; "
                "check that it runs (`tff-esn worker --port P`) and that the address is right."
            )
        time.sleep(0.05)
    return stub


def _executor_factory(addresses: Sequence[str] | None, start_timeout: float):
    """A ``ResourceManagingExecutorFactory`` whose executors talk to one worker.

    With ``addresses=None`` a :class:`LocalWorker` is started lazily on first use and
    restarted if it died; otherwise the remote worker at ``addresses[0]`` is used.
    """
    import tensorflow_federated as tff

    holder: dict[str, object] = {}

    def stub_fn():
        stub = holder.get("stub")
        worker = holder.get("worker")
        if stub is not None and stub.is_ready and (worker is None or worker.alive()):
            return stub
        if addresses is None:
            if worker is not None:
                worker.stop()
            worker = LocalWorker().start()
            holder["worker"] = worker
            stub = connect(worker.address, timeout=start_timeout, worker=worker)
        else:
            stub = connect(addresses[0], timeout=start_timeout)
        holder["stub"] = stub
        return stub

    def stack_fn(cardinalities):
        if cardinalities.get(tff.CLIENTS) is None:
            cardinalities[tff.CLIENTS] = 0
        ex = tff.framework.RemoteExecutor(stub_fn())
        ex.set_cardinalities(cardinalities)
        return ex

    return tff.framework.ResourceManagingExecutorFactory(executor_stack_fn=stack_fn)


def _context_kwargs():
    import tensorflow_federated as tff

    return dict(
        compiler_fn=tff.backends.native.desugar_and_transform_to_native,
        transform_args=tff.tensorflow.transform_args,
        transform_result=tff.tensorflow.transform_result,
    )


def build_context(workers: Sequence[str] | None = None, *, start_timeout: float = 60.0):
    """An execution context on our own worker(s).

    Args:
        workers: ``None`` for one local worker owned by this process (started lazily), or
            a list of ``host:port`` addresses of running workers. With more than one
            address the computation is split across them with TFF's
            ``MergeableCompExecutionContext`` (one async context per worker).
        start_timeout: seconds to wait for a worker to answer.
    """
    import tensorflow_federated as tff

    if workers is not None:
        workers = list(workers)
        if not workers:
            raise ValueError("workers: expected at least one 'host:port' address, got an empty list.")
        for w in workers:
            host, _, port = w.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"workers: {w!r} is not a 'host:port' address.")
    if workers is None or len(workers) == 1:
        return tff.framework.SyncExecutionContext(
            executor_fn=_executor_factory(workers, start_timeout), **_context_kwargs()
        )
    contexts = [
        tff.framework.AsyncExecutionContext(
            executor_fn=_executor_factory([w], start_timeout), **_context_kwargs()
        )
        for w in workers
    ]
    return tff.framework.MergeableCompExecutionContext(
        contexts, compiler_fn=tff.backends.native.compile_to_mergeable_comp_form
    )


def ensure_context(workers: Sequence[str] | None = None, *, force: bool = False):
    """Installs our execution context as TFF's default (once) and returns it.

    Call again with ``workers`` (or ``force=True``) to switch; the previous local worker
    is stopped.
    """
    import tensorflow_federated as tff

    with _LOCK:
        key = None if workers is None else tuple(workers)
        if _STATE["context"] is not None and not force and _STATE.get("key") == key:
            return _STATE["context"]
        if _STATE["context"] is not None:
            stop_workers()
        context = build_context(workers)
        tff.framework.get_context_stack().set_default_context(context)
        _STATE["context"] = context
        _STATE["key"] = key
        _install_exit_hooks()
        return context


def owned_worker_pids() -> list[int]:
    """Pids of the live workers this process started through this module."""
    return [w.pid for w in _OWNED if w.alive()]


def child_worker_pids() -> list[int]:
    """Pids of every live ``worker_binary`` whose parent is this process.

    Includes workers started behind our back (e.g. by TFF's default context before
    :func:`ensure_context` ran); all of them are children we caused, so they are ours
    to stop.
    """
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2 :].split()
        if name.startswith("worker_binary") and int(fields[1]) == me and fields[0] != "Z":
            found.append(int(entry))
    return found


def stop_workers(grace_seconds: float = 5.0) -> None:
    """Stops every worker this process owns or caused (SIGTERM, then SIGKILL)."""
    with _LOCK:
        for worker in list(_OWNED):
            worker.stop(grace_seconds)
        for pid in child_worker_pids():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + grace_seconds
            while time.monotonic() < deadline:
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    break
                if done:
                    break
                time.sleep(0.02)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass


def _on_sigterm(signum, frame):  # pragma: no cover - exercised in a subprocess test
    stop_workers()
    raise SystemExit(128 + signum)


def _install_exit_hooks() -> None:
    """atexit stop, and a SIGTERM handler (only where SIGTERM still has its default)."""
    if not _STATE["atexit"]:
        atexit.register(stop_workers)
        _STATE["atexit"] = True
    if not _STATE["sigterm"] and threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
        _STATE["sigterm"] = True
