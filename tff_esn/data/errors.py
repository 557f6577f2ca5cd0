"""The one error type for malformed or unsuitable input data.

A :class:`DataError` means the *user's data* is wrong (a missing key, a wrong shape or
rate, NaN, a truncated or unsafe file); its message is one line naming the file and the
field and what to do. The command line reports it without a traceback and exits with
code 2; every other exception keeps its traceback (it is a bug of ours).
"""

from __future__ import annotations


class DataError(ValueError):
    """Malformed input data; ``str(err)`` is one line naming the file and the field."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class MissingDataError(DataError, FileNotFoundError):
    """A data file or folder does not exist (also a ``FileNotFoundError``)."""
