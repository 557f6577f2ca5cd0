"""Local ``worker_binary`` processes: start (``setpriv --pdeathsig KILL`` from one spawner thread, so
they die with this process), find, stop."""

from __future__ import annotations

import atexit
import ctypes
import dataclasses
import os
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
LOCK = threading.RLock()
_OWNED: list["LocalWorker"] = []
_SPAWNER: dict[str, object] = {"pid": None, "jobs": None}
_HOOKS = {"atexit": False, "sigterm": False}
DEFAULT_TIMEOUT = 60.0


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


def _popen_with_parent_death(args: Sequence[str]) -> subprocess.Popen:
    """``args`` as a child that gets SIGKILL when the calling thread ends (``setpriv --pdeathsig``, else ``prctl``)."""
    setpriv = shutil.which("setpriv")
    prefix = [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []
    return subprocess.Popen([*prefix, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=None if setpriv else _die_with_parent,
                            close_fds=True)


def _spawner_loop(jobs: queue.SimpleQueue) -> None:
    while True:
        args, future = jobs.get()
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(_popen_with_parent_death(args))
            except BaseException as err:  # handed to the caller's thread
                future.set_exception(err)


def spawn_with_parent_death(args: Sequence[str]) -> subprocess.Popen:
    """``args`` as a child that gets SIGKILL when this process dies (forked on the spawner thread)."""
    with LOCK:
        if _SPAWNER["pid"] != os.getpid():  # first use, or a forked copy of this process
            jobs: queue.SimpleQueue = queue.SimpleQueue()
            threading.Thread(target=_spawner_loop, args=(jobs,), name="tff_esn-worker-spawner", daemon=True).start()
            _SPAWNER.update(pid=os.getpid(), jobs=jobs)
        future: Future = Future()
        _SPAWNER["jobs"].put((list(args), future))
    return future.result()


def pick_port() -> int:
    """An unused loopback TCP port."""
    import portpicker

    return portpicker.pick_unused_port()


def check_port_free(port: int) -> None:
    """Raises :class:`WorkerError` if a process listens on TCP ``port`` (gRPC's ``SO_REUSEPORT`` would share it)."""
    for family, address in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((address, port))
            except OSError as err:
                raise WorkerError(f"port {port} is already in use ({err.strerror}); choose another --port.") from None
            return


@dataclasses.dataclass
class LocalWorker:
    """A ``worker_binary`` child process owned by this Python process (an unused ``port`` when ``None``)."""

    port: int | None = None
    max_concurrent_computation_calls: int = -1
    host: str = "localhost"
    process: subprocess.Popen | None = dataclasses.field(default=None, init=False)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> "LocalWorker":
        """Starts the worker; idempotent while it is alive."""
        with LOCK:
            if self.process is not None and self.process.poll() is None:
                return self
            if self.port is None:
                self.port = pick_port()
            else:
                check_port_free(self.port)
            args = [
                worker_binary_path(),
                f"--port={self.port}",
                f"--max_concurrent_computation_calls={self.max_concurrent_computation_calls}",
            ]
            self.process = spawn_with_parent_death(args)
            _OWNED.append(self)
            return self

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace_seconds: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``grace_seconds`` (the worker ignores SIGINT)."""
        with LOCK:
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


def owned_worker_pids() -> list[int]:
    """Pids of the live workers this process started through this module."""
    return [w.pid for w in _OWNED if w.alive()]


def child_worker_pids() -> list[int]:
    """Pids of every live ``worker_binary`` whose parent is this process (TFF's default context's included)."""
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
    with LOCK:
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


def install_exit_hooks() -> None:
    """For entry points: stop the workers at exit (``atexit``) and on SIGTERM (exit ``128 + SIGTERM``). Idempotent."""
    with LOCK:
        if not _HOOKS["atexit"]:
            atexit.register(stop_workers)
            _HOOKS["atexit"] = True
        if not _HOOKS["sigterm"] and threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
                signal.signal(signal.SIGTERM, _on_sigterm)
            _HOOKS["sigterm"] = True
