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

Scale-out uses TFF's own distributed runtime, no transport of ours: ``tff-esn worker
--port P`` (:func:`serve_worker`) serves computations on a host, and
``ensure_context(["host:port", ...])`` (``--workers`` on the command line, see
:func:`add_worker_arguments`) splits every computation's clients across those workers with
``tff.framework.MergeableCompExecutionContext``. TFF retries a call whose worker went away
(gRPC ``UNAVAILABLE``) forever; our executor factory waits at most ``timeout`` seconds for
the worker to answer again, then raises :class:`WorkerError` naming it — the run stops
with a message instead of hanging, and a worker restarted within the timeout is simply
picked up again.

A worker that is alive but stuck (stopped with SIGSTOP, swapped out, deadlocked) keeps
its TCP connection up, and TFF sets no gRPC deadline, so a call to it would wait forever.
A per-call deadline would be wrong too: one legitimate step (a large ``federated_map``)
may run longer than any fixed deadline. Every remote call therefore runs under a
**heartbeat** (:class:`Heartbeat`): while the call is in flight, the worker is probed every
``timeout / 4`` seconds (at most 5 s) with an empty ``Dispose`` request — a no-op answered
by the worker's executor service, on its own gRPC thread, also while it computes. A worker
that has answered neither the call nor a probe for ``timeout`` seconds (``--worker-timeout``)
ends the call (it is cancelled) with :class:`WorkerError` naming ``host:port``.
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import dataclasses
import functools
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence

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
_LAZY: list["LocalWorker"] = []
_STATE: dict[str, object] = {"context": None, "atexit": False, "sigterm": False}
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


def _spawn_with_parent_death(args: Sequence[str]) -> subprocess.Popen:
    """``args`` as a child that gets SIGKILL when this process (its spawning thread) dies.

    util-linux ``setpriv --pdeathsig KILL`` sets the signal and execs ``args``, so no Python
    code runs in the forked child: ``preexec_fn`` forces a full ``fork()`` of this heavily
    threaded process (gRPC polling threads, TFF's event loops), whose at-fork handlers were
    seen to abort the child and later crash gRPC's connectivity thread in the parent
    (``Fatal Python error: Aborted`` / ``Segmentation fault`` in a long test session). Without
    ``setpriv`` the ``prctl`` runs as ``preexec_fn``.
    """
    setpriv = shutil.which("setpriv")
    prefix = [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []
    return subprocess.Popen([*prefix, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=None if setpriv else _die_with_parent,
                            close_fds=True)


def pick_port() -> int:
    """An unused loopback TCP port."""
    import portpicker

    return portpicker.pick_unused_port()


def check_port_free(port: int) -> None:
    """Raises :class:`WorkerError` if a process listens on TCP ``port``.

    gRPC servers bind with ``SO_REUSEPORT``, so a second ``worker_binary`` on a taken port
    starts without error and the two silently share the connections; we refuse instead.
    """
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
            else:
                check_port_free(self.port)
            args = [
                worker_binary_path(),
                f"--port={self.port}",
                f"--max_concurrent_computation_calls={self.max_concurrent_computation_calls}",
            ]
            self.process = _spawn_with_parent_death(args)
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


class Heartbeat:
    """Runs gRPC calls to one worker while probing it; a silent worker ends the call.

    Args:
        address: the worker's ``host:port`` (named in the error).
        timeout: seconds the worker may answer neither the call nor a probe.
        probe: ``probe(deadline_seconds)`` sends one cheap request and raises
            ``grpc.RpcError`` when it is not answered in time.
    """

    def __init__(self, address: str, timeout: float, probe: Callable[[float], object]):
        self.address = address
        self.timeout = float(timeout)
        self.interval = min(self.timeout / 4, 5.0)
        self.probe = probe
        self.silent: float | None = None  # when the worker was last found silent

    def _error(self) -> WorkerError:
        return WorkerError(
            f"TFF worker at {self.address} did not answer for {self.timeout:g} s (--worker-timeout): it is "
            "stuck, stopped or overloaded; the call was abandoned. Check or restart the worker and run again "
            "(round-based runs continue from their last completed round with --resume)."
        )

    def call(self, rpc, request):
        """``rpc(request)`` through its future; :class:`WorkerError` once the worker is silent for ``timeout`` s.

        gRPC errors of the call itself are raised unchanged (TFF tells retryable ones apart).
        Once the worker was found silent, further calls within ``interval`` fail at once
        (TFF's clean-up calls after the error do not wait ``timeout`` each); a later call
        first gives the worker one short probe, so a worker that was resumed (SIGCONT)
        serves the next run of the same context again.
        """
        import grpc

        if self.silent is not None:
            if time.monotonic() - self.silent < self.interval:
                raise self._error()
            try:
                self.probe(min(self.interval, 1.0))
            except grpc.RpcError:
                self.silent = time.monotonic()
                raise self._error() from None
            self.silent = None
        future = rpc.future(request)
        answered = time.monotonic()
        while True:
            try:
                return future.result(timeout=self.interval)
            except grpc.FutureTimeoutError:
                pass
            remaining = answered + self.timeout - time.monotonic()
            try:
                self.probe(max(remaining, 0.05))
                answered = time.monotonic()
                continue
            except grpc.RpcError:
                if future.done():
                    return future.result()
                if time.monotonic() - answered < self.timeout:
                    continue
            future.cancel()
            self.silent = time.monotonic()
            raise self._error()


class _WatchedRpcs:
    """The executor service's RPCs (``stub.Compute`` …), each run under a :class:`Heartbeat`."""

    def __init__(self, rpcs, heartbeat: Heartbeat):
        self._rpcs = rpcs
        self._heartbeat = heartbeat

    def __getattr__(self, name: str):
        rpc = getattr(self._rpcs, name)
        return functools.partial(self._heartbeat.call, rpc)


def _watched_stub(channel, address: str, timeout: float):
    """TFF's ``RemoteExecutorGrpcStub`` on ``channel`` whose every RPC runs under a :class:`Heartbeat`."""
    import tensorflow_federated as tff
    from tensorflow_federated.proto.v0 import executor_pb2

    stub = tff.framework.RemoteExecutorGrpcStub(channel)
    rpcs = stub._stub  # the generated ExecutorGroupStub TFF's methods call

    def probe(deadline: float):
        return rpcs.Dispose(executor_pb2.DisposeRequest(), timeout=deadline)

    stub.heartbeat = Heartbeat(address, timeout, probe)
    stub._stub = _WatchedRpcs(rpcs, stub.heartbeat)
    return stub


def connect(address: str, *, timeout: float = 60.0, worker: LocalWorker | None = None):
    """A ready ``tff.framework.RemoteExecutorGrpcStub`` for a worker at ``address``.

    Waits at most ``timeout`` seconds; when ``worker`` is given its process is checked
    while waiting, so a worker that dies at start raises at once instead of hanging.
    Every call of the stub runs under a :class:`Heartbeat` of ``timeout`` seconds.
    """
    import grpc

    channel = grpc.insecure_channel(address, _GRPC_OPTIONS)
    stub = _watched_stub(channel, address, timeout)
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


def _stop_lazy(workers: Sequence["LocalWorker"]) -> None:
    """Stops local workers that a context started on demand and forgets them."""
    for worker in workers:
        worker.stop()
        if worker in _LAZY:
            _LAZY.remove(worker)


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
        if stub is not None and stub.is_ready and stub.heartbeat.silent is None and (worker is None or worker.alive()):
            return stub
        if addresses is None:
            if worker is not None:
                _stop_lazy([worker])
            worker = LocalWorker().start()
            _LAZY.append(worker)
            holder["worker"] = worker
            stub = connect(worker.address, timeout=start_timeout, worker=worker)
        else:
            try:
                stub = connect(addresses[0], timeout=start_timeout)
            except WorkerError:
                if stub is None:
                    raise
                raise WorkerError(
                    f"TFF worker at {addresses[0]} died or became unreachable during the run and did not "
                    f"answer again within {start_timeout:.0f} s; restart it (`tff-esn worker --port P`) and "
                    "run again (round-based runs continue from their last completed round with --resume)."
                ) from None
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


def parse_workers(workers: str | Sequence[str] | None) -> list[str] | None:
    """``"h1:p1,h2:p2"`` or a list of ``host:port`` strings → the list; ``None`` stays ``None``.

    Raises ``ValueError`` naming the bad entry for an empty list, a missing host, a port
    that is not a number in 1–65535 or a repeated address.
    """
    if workers is None:
        return None
    items = workers.split(",") if isinstance(workers, str) else list(workers)
    items = [str(w).strip() for w in items]
    if not items or not any(items):
        raise ValueError(f"workers: expected one or more 'host:port' addresses, got {workers!r}.")
    for w in items:
        host, _, port = w.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"workers: {w!r} is not a 'host:port' address (port 1–65535), in {workers!r}.")
    repeated = sorted({w for w in items if items.count(w) > 1})
    if repeated:
        raise ValueError(f"workers: address(es) {repeated} given more than once in {workers!r}.")
    return items


def _fix_subround_partitioning() -> None:
    """Corrects how TFF 0.87 splits a computation's argument into subrounds (idempotent).

    ``MergeableCompExecutionContext`` splits the CLIENTS-placed parts of the argument
    between workers with ``_partition_value``, which walks a struct argument element by
    element but returns the split position of its *last* element. When the clients'
    value is not the last argument — IncFed's ``(reservoir@SERVER, datasets@CLIENTS,
    l2@SERVER)`` — the position never advances, every worker gets the first
    ⌈n/k⌉ clients and the others are silently dropped (measured: IncFed on 2 workers
    returned the readout of the first half of the clients). The replacement splits every
    element from the same position and continues from the element that took clients.
    """
    from tensorflow_federated.python.core.impl.execution_contexts import mergeable_comp_execution_context as mc
    from tensorflow_federated.python.core.impl.types import computation_types
    from tensorflow_federated.python.common_libs import structure

    original = getattr(mc._partition_value, "__wrapped__", mc._partition_value)

    def partition_value(val, type_signature):
        if not isinstance(type_signature, computation_types.StructType):
            return original(val, type_signature)
        elements = []
        advanced = None
        for (_, value), (name, elem_type) in zip(structure.iter_elements(structure.from_container(val.payload)),
                                                 structure.iter_elements(type_signature)):
            part = partition_value(mc._PartitioningValue(value, val.num_remaining_clients,
                                                         val.num_remaining_partitions, val.last_client_index),
                                   elem_type)
            elements.append((name, part.payload))
            if part.last_client_index != val.last_client_index:
                advanced = part
        if not elements:
            raise ValueError(f"Expected the value to not be empty, found {val}.")
        position = advanced or val
        return mc._PartitioningValue(structure.Struct(elements), position.num_remaining_clients,
                                     position.num_remaining_partitions, position.last_client_index)

    partition_value.__wrapped__ = original
    mc._partition_value = partition_value


def build_context(workers: Sequence[str] | None = None, *, start_timeout: float = DEFAULT_TIMEOUT):
    """An execution context on our own worker(s).

    Args:
        workers: ``None`` for one local worker owned by this process (started lazily), or
            a list of ``host:port`` addresses of running workers. With more than one
            address the computation is split across them with TFF's
            ``MergeableCompExecutionContext`` (one async context per worker).
        start_timeout: seconds to wait for a worker to answer, at start and again after
            it went away during a computation (then :class:`WorkerError`).
    """
    import tensorflow_federated as tff

    workers = parse_workers(workers)
    if workers is None or len(workers) == 1:
        return tff.framework.SyncExecutionContext(
            executor_fn=_executor_factory(workers, start_timeout), **_context_kwargs()
        )
    _fix_subround_partitioning()
    contexts = [
        tff.framework.AsyncExecutionContext(
            executor_fn=_executor_factory([w], start_timeout), **_context_kwargs()
        )
        for w in workers
    ]
    return tff.framework.MergeableCompExecutionContext(
        contexts, compiler_fn=tff.backends.native.compile_to_mergeable_comp_form
    )


def ensure_context(workers: str | Sequence[str] | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                   force: bool = False):
    """Installs our execution context as TFF's default and returns it.

    Without arguments it keeps the context already installed (whatever its workers), or
    installs the local single-worker one: library code calls ``ensure_context()`` before
    its first computation without undoing a ``--workers`` choice. With ``workers`` (a
    list or ``"h:p,h:p"``; see :func:`build_context`) it switches to those workers;
    ``force=True`` with no workers switches back to a fresh local worker. A switch stops
    the local worker of the previous context, never the workers given by address.
    """
    import tensorflow_federated as tff

    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
        raise ValueError(f"timeout: expected a number of seconds > 0, got {timeout!r}.")
    workers = parse_workers(workers)
    with _LOCK:
        key = (None if workers is None else tuple(workers), float(timeout))
        if _STATE["context"] is not None and not force and (workers is None or _STATE.get("key") == key):
            return _STATE["context"]
        _stop_lazy(list(_LAZY))
        context = build_context(workers, start_timeout=timeout)
        tff.framework.get_context_stack().set_default_context(context)
        _STATE["context"] = context
        _STATE["key"] = key
        _install_exit_hooks()
        return context


def current_workers() -> list[str] | None:
    """The ``host:port`` addresses of the installed context (``None``: the local worker)."""
    key = _STATE.get("key")
    return None if key is None or key[0] is None else list(key[0])


def on_this_host(workers: Sequence[str] | None) -> bool:
    """Whether all ``workers`` (``None``: the local worker) run on this machine and so read its files.

    Decides whether client datasets may be file-backed (only a path travels) or must travel
    in memory to workers on other hosts.
    """
    if workers is None:
        return True
    local = {"localhost", "127.0.0.1", "::1", "[::1]", socket.gethostname(), socket.getfqdn()}
    return all(w.rpartition(":")[0] in local for w in workers)


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    """``--workers HOST:PORT,...`` and ``--worker-timeout SECONDS`` (use with :func:`context_from_args`)."""
    g = parser.add_argument_group("TFF workers")
    g.add_argument("--workers", type=_workers_argument, default=None, metavar="HOST:PORT,...",
                   help="run the federated computations on these TFF workers (started with "
                        "`tff-esn worker --port P`), splitting the clients across them; default: one local worker")
    g.add_argument("--worker-timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="give up with an error when a worker does not answer for this long (default %(default)s)")


def _workers_argument(text: str) -> list[str]:
    try:
        return parse_workers(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def context_from_args(args: argparse.Namespace):
    """:func:`ensure_context` with the flags of :func:`add_worker_arguments` (local when absent)."""
    workers = getattr(args, "workers", None)
    timeout = getattr(args, "worker_timeout", DEFAULT_TIMEOUT)
    if workers is None and current_workers() is None:
        return ensure_context(timeout=timeout)
    return ensure_context(workers, timeout=timeout, force=workers is None)


def serve_worker(port: int, *, host: str = "localhost", timeout: float = DEFAULT_TIMEOUT,
                 max_concurrent_computation_calls: int = -1, ready: Callable[[str], None] | None = None) -> int:
    """Runs a TFF worker in the foreground until SIGTERM/SIGINT (then 0) or until it exits.

    The ``worker_binary`` listens on ``port`` of every interface (it has no bind-address
    flag); ``host`` is the name other machines use to reach it: the worker is checked
    through ``host:port`` before ``ready(address)`` is called. Returns the worker's exit
    code if it stops by itself. Raises :class:`WorkerError` if it does not come up (e.g.
    the port is taken).
    """
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"port: expected an integer in 1–65535, got {port!r}.")
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    worker = LocalWorker(port=port, host=host, max_concurrent_computation_calls=max_concurrent_computation_calls)
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        worker.start()
        connect(worker.address, timeout=timeout, worker=worker)
        if ready is not None:
            ready(worker.address)
        while not stop.wait(0.2):
            if not worker.alive():
                return int(worker.process.returncode)
        return 0
    finally:
        worker.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


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
