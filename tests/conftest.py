"""Test-session guards: quiet TensorFlow, and no TFF worker left behind."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _no_orphaned_workers():
    """After the whole session, every TFF worker this process caused must be gone."""
    yield
    from tff_esn import runtime

    runtime.stop_workers()
    left = runtime.child_worker_pids()
    assert not left, f"TFF worker_binary processes left running: {left}"
