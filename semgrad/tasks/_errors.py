"""The error type of the dataset loaders."""

from __future__ import annotations

from ..core import SemgradError

__all__ = ["DataError"]


class DataError(SemgradError, ValueError):
    """A dataset cannot be read: a missing directory or file, a malformed line,
    an unknown task name, or too few items for the split asked for.

    The message is one line that names the path (with the line number when there
    is one) or lists the valid choices, and says what to pass instead.
    """
