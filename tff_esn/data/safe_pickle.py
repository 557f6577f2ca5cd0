"""Loading pickles that may only hold plain data (the WESAD subject files).

:func:`load_data_pickle` admits only the globals a pickle of dicts, lists, strings and numpy arrays needs;
any other raises :class:`UnsafePickleError` before it is resolved. numpy 2's ``numpy._core.*`` names are
read as ``numpy.core.*`` under numpy 1 (:data:`NUMPY2_RENAMES`).
"""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path
from typing import BinaryIO

from tff_esn.data.errors import DataError

ALLOWED_GLOBALS = frozenset({
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"),
    ("_codecs", "encode"),
})
"""``(module, name)`` pairs a pickle of dicts, lists, str and numpy arrays/dtypes refers to."""

NUMPY2_RENAMES = {
    (module, name): (module.replace("numpy._core", "numpy.core", 1), name)
    for module, name in ALLOWED_GLOBALS if module.startswith("numpy._core.")
}
"""numpy-2 name → numpy-1 name of each allowed global that moved to ``numpy._core``."""

_HAS_NUMPY_CORE_PRIVATE = importlib.util.find_spec("numpy._core") is not None


class UnsafePickleError(DataError, pickle.UnpicklingError):
    """The pickle refers to a global outside :data:`ALLOWED_GLOBALS`."""


class _DataUnpickler(pickle.Unpickler):
    def __init__(self, file, *, source: str) -> None:
        super().__init__(file, encoding="latin1")
        self._source = source

    def find_class(self, module: str, name: str):
        if (module, name) not in ALLOWED_GLOBALS:
            raise UnsafePickleError(
                f"{self._source}: refuses to load the global {module}.{name}; a data pickle may only hold "
                f"dicts, lists, strings and numpy arrays (allowed: "
                f"{', '.join(sorted(f'{m}.{n}' for m, n in ALLOWED_GLOBALS))})."
            )
        if not _HAS_NUMPY_CORE_PRIVATE:
            module, name = NUMPY2_RENAMES.get((module, name), (module, name))
        return super().find_class(module, name)


def read_data_pickle(fh: BinaryIO, source: str):
    """One object unpickled from ``fh`` via the allow-list (:class:`UnsafePickleError`; truncated: :class:`DataError`)."""
    try:
        return _DataUnpickler(fh, source=source).load()
    except UnsafePickleError:
        raise
    except (EOFError, pickle.UnpicklingError, ValueError, TypeError, IndexError, AttributeError, KeyError,
            MemoryError, OverflowError, UnicodeDecodeError) as err:
        raise DataError(f"{source}: not a complete data pickle (truncated or corrupt): "
                         f"{type(err).__name__}: {err}") from None


def load_data_pickle(path: str | Path):
    """:func:`read_data_pickle` of the file ``path`` (``encoding="latin1"``, as the Python-2 WESAD files need)."""
    try:
        fh = Path(path).open("rb")
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err}).") from None
    with fh:
        return read_data_pickle(fh, str(path))
