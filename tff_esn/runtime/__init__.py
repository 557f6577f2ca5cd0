"""Ownership of TensorFlow Federated's execution context and its C++ workers (which die with this
process); library code loads TFF through :func:`load_tff`."""

from tff_esn.runtime.context import (build_context, current_workers, ensure_context, load_tff, on_this_host,
                                     parse_workers)
from tff_esn.runtime.heartbeat import Heartbeat, connect
from tff_esn.runtime.serve import serve_worker
from tff_esn.runtime.tff_patch import TFFVersionError
from tff_esn.runtime.workers import (DEFAULT_TIMEOUT, LocalWorker, WorkerError, check_port_free,
                                     child_worker_pids, install_exit_hooks, owned_worker_pids, pick_port,
                                     stop_workers, worker_binary_path)

__all__ = [
    "DEFAULT_TIMEOUT", "Heartbeat", "LocalWorker", "TFFVersionError", "WorkerError", "build_context",
    "check_port_free", "child_worker_pids", "connect", "current_workers", "ensure_context",
    "install_exit_hooks", "load_tff", "on_this_host", "owned_worker_pids", "parse_workers", "pick_port", "serve_worker",
    "stop_workers", "worker_binary_path",
]
