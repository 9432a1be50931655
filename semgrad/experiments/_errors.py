"""`SetupError`, in a module of its own: the run's setup (`_run`) and resuming (`_resume`) both raise it,
and `_run` calls `_resume`, so neither may be where the other finds it."""

from __future__ import annotations

__all__ = ["SetupError"]


class SetupError(ValueError):
    """The run cannot start: a missing key, an unreachable server, a changed config."""
