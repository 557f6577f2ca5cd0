"""``serve_worker``: one TFF worker in the foreground, for ``tff-esn worker``."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

from tff_esn.runtime.heartbeat import connect
from tff_esn.runtime.workers import DEFAULT_TIMEOUT, LocalWorker
from tff_esn.validation import is_count


def serve_worker(port: int, *, host: str = "localhost", timeout: float = DEFAULT_TIMEOUT,
                 max_concurrent_computation_calls: int = -1, ready: Callable[[str], None] | None = None) -> int:
    """Runs a TFF worker on every interface in the foreground until SIGTERM/SIGINT (0) or its exit (its code)."""
    if not (is_count(port, 1) and port < 65536):
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
