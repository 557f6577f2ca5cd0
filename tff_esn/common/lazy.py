"""Package exports imported on first use (PEP 562), so importing a package imports nothing heavy."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any

TF_LOGS = "TFF_ESN_TF_LOGS"
"""Set to ``1`` to keep TensorFlow's C++ start-up log lines (cuDNN/cuFFT/cuBLAS factories, oneDNN, CUDA drivers)."""


def quiet_tensorflow() -> None:
    """Silences TensorFlow's C++ log below FATAL (``TF_CPP_MIN_LOG_LEVEL=3``) unless :data:`TF_LOGS` is ``1`` or the
    level is already set; effective only before TensorFlow is first imported."""
    if os.environ.get(TF_LOGS) != "1":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` importing ``exports[name]`` when ``name`` is first used."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        quiet_tensorflow()
        return getattr(importlib.import_module(exports[name], package), name)

    return __getattr__


class LazyModule:
    """A module imported on first attribute access (``tf = LazyModule("tensorflow")``)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        quiet_tensorflow()
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"LazyModule({self._name!r})"
