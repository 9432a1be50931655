"""Exception types. Misuse and bad graphs raise; bad LLM output is data."""

from __future__ import annotations

__all__ = ["SemgradError", "GraphError", "InputError", "ProtocolError"]


class SemgradError(Exception):
    """Base class of every exception semgrad raises on purpose."""


class GraphError(SemgradError, ValueError):
    """A graph is invalid: a cycle, an unknown or duplicate name, a bad output.

    The message always names the node at fault.
    """


class InputError(SemgradError, ValueError):
    """Inputs given to a run do not fit the graph (missing or unexpected fields)."""


class ProtocolError(SemgradError, RuntimeError):
    """A state machine or optimizer stage was driven in a way it does not allow."""
