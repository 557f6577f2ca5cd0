"""gRPC stubs to a worker (:func:`connect`), every call under a :class:`Heartbeat` that probes the
worker and ends the call with a ``WorkerError`` after ``timeout`` s of silence."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from tff_esn.runtime.workers import LocalWorker, WorkerError

_GRPC_MAX_MESSAGE_BYTES = 2 * 1000 * 1000 * 1000
GRPC_OPTIONS = [
    ("grpc.max_message_length", _GRPC_MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", _GRPC_MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", _GRPC_MAX_MESSAGE_BYTES),
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


class Heartbeat:
    """Runs gRPC calls to the worker at ``address`` while ``probe`` checks it; a silent worker ends the call."""

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
        """``rpc(request)``; :class:`WorkerError` once the worker is silent for ``timeout`` s (then probes)."""
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
    """A ready ``RemoteExecutorGrpcStub`` for ``address`` within ``timeout`` s, every call under a :class:`Heartbeat`."""
    import grpc

    channel = grpc.insecure_channel(address, GRPC_OPTIONS)
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
        time.sleep(0.01)
    return stub
