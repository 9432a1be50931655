"""Old names kept for one release: each resolves to its new home with a `DeprecationWarning`.

A module lists what moved as ``{old name: (new dotted name, object)}`` and sets
``__getattr__ = moved_names(__name__, MOVED)``; Python calls it only for a
name the module does not define, so current names cost nothing. The objects
are given, never looked up by name: nothing here imports anything.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved_names"]


def moved_names(module: str, moved: Mapping[str, tuple[str, Any]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving each old name in `moved` to its new home, with a warning.

    Examples:
        >>> import warnings
        >>> lookup = moved_names("pkg", {"old": ("pkg.new", 42)})
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     value = lookup("old")
        >>> value, str(caught[0].message)
        (42, 'pkg.old is deprecated: use pkg.new')
    """

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new, value = moved[name]
        warnings.warn(f"{module}.{name} is deprecated: use {new}", DeprecationWarning, stacklevel=2)
        return value

    return __getattr__
