"""Test-session guards: quiet TensorFlow, the same property examples on every run, and no TFF worker left behind."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# Property tests draw the same examples on every run and machine (a failure reproduces; a loaded machine's slow
# example generation is no failure); HYPOTHESIS_PROFILE=default draws new ones.
settings.register_profile("repeatable", derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture(scope="session", autouse=True)
def _no_orphaned_workers():
    """The session is an entry point: it installs our TFF context; every worker must be gone after it.

    The session installs it as the CLI does. A worker that is a child of this process but not
    owned by the runtime was started by another context, i.e. a test replaced our context and
    ran a computation without restoring it (``tff_esn.runtime.ensure_context(force=True)``): in
    a piped run it would hang the pipe.
    """
    from tff_esn import runtime

    runtime.ensure_context()
    yield
    rogue = sorted(set(runtime.child_worker_pids()) - set(runtime.owned_worker_pids()))
    runtime.stop_workers()
    left = runtime.child_worker_pids()
    assert not rogue, f"TFF workers started outside tff_esn.runtime (missing ensure_context()): {rogue}"
    assert not left, f"TFF worker_binary processes left running: {left}"
