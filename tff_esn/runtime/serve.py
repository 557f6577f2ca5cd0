"""``serve_worker``: one TFF worker in the foreground, for ``tff-esn worker``."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

from tff_esn.runtime.heartbeat import connect
from tff_esn.runtime.workers import DEFAULT_TIMEOUT, LocalWorker


def serve_worker(port: int, *, host: str = "localhost", timeout: float = DEFAULT_TIMEOUT,
                 max_concurrent_computation_calls: int = -1, ready: Callable[[str], None] | None = None) -> int:
    """Runs a TFF worker on ``port`` in the foreground until SIGTERM/SIGINT (0) or its exit (its code)."""
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
