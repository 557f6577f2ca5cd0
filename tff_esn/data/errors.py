"""The one error type for malformed or unsuitable input data: a :class:`DataError` is one line naming the
file, the field and the fix; the command line reports it without a traceback (exit code 2)."""

from __future__ import annotations


class DataError(ValueError):
    """Malformed input data; ``str(err)`` is one line naming the file and the field."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class MissingDataError(DataError, FileNotFoundError):
    """A data file or folder does not exist (also a ``FileNotFoundError``)."""
