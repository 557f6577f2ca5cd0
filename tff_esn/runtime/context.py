"""Our TFF execution context on our own worker(s): :func:`ensure_context` installs it (entry points),
:func:`load_tff` installs it over TFF's stock context."""

from __future__ import annotations

import socket
from collections.abc import Sequence

from tff_esn.runtime import tff_patch
from tff_esn.runtime.heartbeat import connect
from tff_esn.runtime.workers import DEFAULT_TIMEOUT, LOCK, LocalWorker, WorkerError
from tff_esn.common.lazy import quiet_tensorflow
from tff_esn.common.validation import is_finite

_LAZY: list[LocalWorker] = []
_STATE: dict[str, object] = {"context": None, "key": None}


def parse_workers(workers: str | Sequence[str] | None) -> list[str] | None:
    """``"h1:p1,h2:p2"`` or a list of ``host:port`` strings → the list (``None`` stays); bad entries are named."""
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


def _stop_lazy(workers: Sequence[LocalWorker]) -> None:
    """Stops local workers that a context started on demand and forgets them."""
    for worker in workers:
        worker.stop()
        if worker in _LAZY:
            _LAZY.remove(worker)


def _start_local(holder: dict[str, object]) -> LocalWorker:
    worker = LocalWorker().start()
    _LAZY.append(worker)
    holder["worker"] = worker
    return worker


def _executor_factory(addresses: Sequence[str] | None, start_timeout: float, prestart: bool = False):
    """A ``ResourceManagingExecutorFactory`` on ``addresses[0]`` or a lazily started (``prestart``), restarted :class:`LocalWorker`."""
    import tensorflow_federated as tff

    holder: dict[str, object] = {}
    if prestart and addresses is None:
        _start_local(holder)

    def stub_fn():
        stub = holder.get("stub")
        worker = holder.get("worker")
        if stub is not None and stub.is_ready and stub.heartbeat.silent is None and (worker is None or worker.alive()):
            return stub
        if addresses is None:
            if stub is not None or worker is None or not worker.alive():  # else: the prestarted worker
                if worker is not None:
                    _stop_lazy([worker])
                worker = _start_local(holder)
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


def build_context(workers: Sequence[str] | None = None, *, start_timeout: float = DEFAULT_TIMEOUT,
                  prestart: bool = False):
    """An execution context (not installed) on a local worker (``workers=None``) or on ``host:port`` workers."""
    import tensorflow_federated as tff

    workers = parse_workers(workers)
    if workers is None or len(workers) == 1:
        return tff.framework.SyncExecutionContext(
            executor_fn=_executor_factory(workers, start_timeout, prestart), **_context_kwargs()
        )
    tff_patch.fix_subround_partitioning()
    contexts = [
        tff.framework.AsyncExecutionContext(
            executor_fn=_executor_factory([w], start_timeout), **_context_kwargs()
        )
        for w in workers
    ]
    return tff.framework.MergeableCompExecutionContext(
        contexts, compiler_fn=tff.backends.native.compile_to_mergeable_comp_form
    )


def ensure_context(workers: str | Sequence[str] | None = None, *, timeout: float | None = None,
                   force: bool = False, prestart: bool = False):
    """Installs and returns our execution context: the one built, on ``workers``, or a fresh one with ``force``."""
    import tensorflow_federated as tff

    if timeout is not None and not (is_finite(timeout) and timeout > 0):
        raise ValueError(f"timeout: expected a number of seconds > 0, got {timeout!r}.")
    workers = parse_workers(workers)
    with LOCK:
        built = _STATE["context"] is not None and not force
        if built and workers is None:
            kept, kept_timeout = _STATE["key"]
            workers = None if kept is None else list(kept)
            timeout = kept_timeout if timeout is None else timeout
        timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        key = (None if workers is None else tuple(workers), timeout)
        stack = tff.framework.get_context_stack()
        if built and _STATE["key"] == key:
            if stack.current is not _STATE["context"]:
                stack.set_default_context(_STATE["context"])
            return _STATE["context"]
        _stop_lazy(list(_LAZY))
        context = build_context(workers, start_timeout=timeout, prestart=prestart)
        stack.set_default_context(context)
        _STATE["context"] = context
        _STATE["key"] = key
        return context


def _is_tff_stock_context(context) -> bool:
    """Whether ``context`` is TFF's stock local context (its ``worker_binary`` would outlive this process)."""
    stack_fn = getattr(getattr(context, "_executor_factory", None), "_executor_stack_fn", None)
    return getattr(stack_fn, "__qualname__", "").startswith("local_cpp_executor_factory.")


def load_tff():
    """The ``tensorflow_federated`` module, our context installed in place of TFF's stock local one."""
    quiet_tensorflow()
    import tensorflow_federated as tff

    if _is_tff_stock_context(tff.framework.get_context_stack().current):
        ensure_context()
    return tff


def current_workers() -> list[str] | None:
    """The ``host:port`` addresses of our installed context (``None``: the local worker, or none installed)."""
    key = _STATE["key"]
    return None if key is None or key[0] is None else list(key[0])


def on_this_host(workers: Sequence[str] | None) -> bool:
    """Whether all ``workers`` (``None``: the local worker) run on this machine (client datasets may be files)."""
    if workers is None:
        return True
    local = {"localhost", "127.0.0.1", "::1", "[::1]", socket.gethostname(), socket.getfqdn()}
    return all(w.rpartition(":")[0] in local for w in workers)
