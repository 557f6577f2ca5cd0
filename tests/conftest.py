"""Test-session guards: quiet TensorFlow, and no TFF worker left behind."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _no_orphaned_workers():
    """Every TFF worker must come from ``tff_esn.runtime`` and be gone after the session.

    A worker that is a child of this process but not owned by the runtime was started by
    TFF's default context, i.e. some code ran a computation without
    ``tff_esn.runtime.ensure_context()``: in a piped run it would hang the pipe.
    """
    yield
    from tff_esn import runtime

    rogue = sorted(set(runtime.child_worker_pids()) - set(runtime.owned_worker_pids()))
    runtime.stop_workers()
    left = runtime.child_worker_pids()
    assert not rogue, f"TFF workers started outside tff_esn.runtime (missing ensure_context()): {rogue}"
    assert not left, f"TFF worker_binary processes left running: {left}"
