"""What a run ran on, for ``metrics.json``: the client ids of each group, how the split was
made, and the versions of the packages that computed the numbers.

Versions are read with :mod:`importlib.metadata` (no TensorFlow import); ``tff_esn`` reports
its own ``__version__`` (the source that ran, also when it is not the installed copy).
"""

from __future__ import annotations

import platform
from importlib import metadata
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


def run_provenance(split: Split) -> dict[str, Any]:
    """``metrics.json``'s ``clients`` (group → ids), ``split_rule`` and ``versions`` sections."""
    return {"clients": {group: list(ids) for group, ids in split.groups.items()}, "split_rule": split.rule,
            "versions": package_versions()}
