"""What a run ran on, for ``metrics.json``: each group's client ids, the split's rule, and the versions
(:mod:`importlib.metadata`; ``tff_esn``'s own ``__version__`` and git commit) that computed the numbers."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from tff_esn.data.sequences import Split

PACKAGES = ("numpy", "scipy", "scikit-learn", "tensorflow", "tensorflow-federated", "keras", "dp-accounting",
            "tensorflow-privacy", "keras-tuner")
"""The distributions whose versions every ``metrics.json`` records (``None``: not installed)."""


def package_versions() -> dict[str, str | None]:
    """``{"python", "tff_esn", package: version}`` for :data:`PACKAGES`."""
    import tff_esn

    versions: dict[str, str | None] = {"python": platform.python_version(), "tff_esn": tff_esn.__version__}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def source_commit() -> str | None:
    """The source's git commit (12 hex, ``-dirty`` if changed); ``None`` outside a git checkout or without git."""
    import tff_esn

    root = Path(tff_esn.__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root:
        return None
    commit = git("rev-parse", "--short=12", "HEAD")
    if commit is None:
        return None
    return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def run_provenance(split: Split) -> dict[str, Any]:
    """``metrics.json``'s ``clients`` (group → ids), ``split_rule`` and ``versions`` sections."""
    return {"clients": {group: list(ids) for group, ids in split.groups.items()}, "split_rule": split.rule,
            "versions": package_versions()}
