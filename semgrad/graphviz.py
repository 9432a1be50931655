"""Deprecated: the diagram exports moved to `semgrad.diagrams` (this module never needed Graphviz).

Reading a name from here still works for a release, with a `DeprecationWarning`.
"""

from __future__ import annotations

import warnings
from typing import Any

from . import diagrams as _diagrams

__all__ = list(_diagrams.__all__)  # the same names, each read with a warning


def __getattr__(name: str) -> Any:
    if name in __all__:
        warnings.warn(
            f"semgrad.graphviz.{name} moved to semgrad.diagrams.{name}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_diagrams, name)
    raise AttributeError(f"module 'semgrad.graphviz' has no attribute {name!r}")
