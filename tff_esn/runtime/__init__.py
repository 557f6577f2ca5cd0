"""Ownership of TensorFlow Federated's execution context and its C++ workers.

TFF's default context starts a C++ ``worker_binary`` lazily on the first federated
computation. That process outlives Python, ignores SIGINT and inherits the parent's
stdout/stderr, so a pipe reader (CI, ``| tee``, ``subprocess`` capture) never sees EOF.
This package provides a context whose worker we start ourselves: its stdio is
``/dev/null`` and it dies with this process (parent-death SIGKILL, also when the process
is killed with SIGKILL).

**Who sets the context.** Entry points set ours up — the ``tff-esn`` CLI, ``scripts``, the
benches and the test session — and a library user may call :func:`ensure_context`
(``tff_esn.runtime.ensure_context()``, or ``ensure_context(["h1:p1", "h2:p2"])`` for workers
started with ``tff-esn worker``). Library code (the algorithm builders in
:mod:`tff_esn.closed_form` and :mod:`tff_esn.federated`, :mod:`tff_esn.privacy`, the
discriminator) imports TFF only through :func:`load_tff`, which installs ours when TFF's stock
local context is the current one — the context ``import tensorflow_federated`` installs, whose
worker inherits the parent's stdout and outlives it — and leaves any other context (one the
user installed) in place.

**How workers stop.** Every worker started here gets SIGKILL from the kernel when this
process ends, however it ends. Entry points additionally call :func:`install_exit_hooks`:
at normal exit, on an exception reaching the top level and on SIGTERM the workers get
SIGTERM, then SIGKILL after a grace period. Library calls install no signal handler and
no exit hook. :func:`stop_workers` stops them at any time.

Modules, one job each:

* :mod:`~tff_esn.runtime.workers` — local ``worker_binary`` processes: spawn with parent
  death, pids, stop, exit hooks;
* :mod:`~tff_esn.runtime.heartbeat` — gRPC stubs to a worker (:func:`connect`), each call
  under a :class:`Heartbeat` so a stuck worker ends the run within ``--worker-timeout``;
* :mod:`~tff_esn.runtime.context` — building and installing the execution context
  (:func:`build_context`, :func:`ensure_context`, :func:`load_tff`, :func:`current_workers`);
* :mod:`~tff_esn.runtime.tff_patch` — TFF 0.87's subround-partitioning correction for
  multi-worker contexts, refused with :class:`TFFVersionError` on other TFF versions;
* :mod:`~tff_esn.runtime.serve` — :func:`serve_worker`, the foreground worker of
  ``tff-esn worker``.

The command-line flags (``--workers``, ``--worker-timeout``) live in
:mod:`tff_esn.cli.worker_flags`. The modules here import TensorFlow, TFF and gRPC only inside
the functions that need them.
"""

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
