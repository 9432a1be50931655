"""What a training run is: a stable description of its graph, data, optimizer and loss.

A checkpoint stores a digest of each part (`run_fingerprint`), so that resuming
refuses a checkpoint written by another run and says which part differs. The
optimizer and the loss are functions built by factories such as
``optim.neighbor_sgd(k=2, seed=0)``; `describe` reads what they close over
(numbers, strings, nested functions and frozen values), so two optimizers that
differ in a setting get different descriptions. Nothing here runs the
functions it describes.
"""

from __future__ import annotations

import functools
import hashlib
import types
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ..core import Example, FrozenMap, Graph, Params
from ..core.programs import SystemRef

__all__ = ["PARTS", "describe", "differing_parts", "run_fingerprint"]

#: The parts of a run a checkpoint is bound to, with the words an error uses for each.
PARTS = FrozenMap(
    {
        "graph": "the graph",
        "initial_params": "the initial params",
        "train": "the training data",
        "validation": "the validation data",
        "optimizer": "the optimizer or its settings",
        "loss": "the loss",
        "options": "the sampling options",
    }
)

_MAX_DEPTH = 24


def _name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', None) or '?'}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def describe(value: Any) -> str:
    """A deterministic text describing `value`; callables by name, defaults and what they close over.

    Examples:
        >>> from semgrad.core import optim
        >>> describe(optim.neighbor_sgd(2)) == describe(optim.neighbor_sgd(2)) != describe(optim.neighbor_sgd(3))
        True
    """
    return _describe(value, 0, set())


def _describe(value: Any, depth: int, active: set[int]) -> str:
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if depth > _MAX_DEPTH or id(value) in active:
        return f"<{type(value).__qualname__}>"
    active.add(id(value))
    try:
        return _compound(value, depth + 1, active)
    finally:
        active.discard(id(value))


def _compound(value: Any, depth: int, active: set[int]) -> str:
    inner = functools.partial(_describe, depth=depth, active=active)
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}(" + ", ".join(inner(v) for v in value) + ")"
    if isinstance(value, (set, frozenset)):
        return "set(" + ", ".join(sorted(inner(v) for v in value)) + ")"
    if isinstance(value, Mapping):
        return "map(" + ", ".join(sorted(f"{inner(k)}: {inner(v)}" for k, v in value.items())) + ")"
    if attrs.has(type(value)):
        fields = ", ".join(f"{f.name}={inner(getattr(value, f.name))}" for f in attrs.fields(type(value)) if f.init)
        return f"{_name(type(value))}({fields})"
    if isinstance(value, functools.partial):
        return f"partial({inner(value.func)}, {inner(value.args)}, {inner(value.keywords)})"
    if isinstance(value, types.MethodType):
        return f"method({inner(value.__func__)}, {inner(value.__self__)})"
    if isinstance(value, types.FunctionType):
        cells = tuple(_cell(c) for c in value.__closure__ or ())
        parts = (value.__defaults__ or (), value.__kwdefaults__ or {}, cells)
        return f"fn({_name(value)}, {', '.join(inner(p) for p in parts)})"
    if isinstance(value, (types.BuiltinFunctionType, type)):
        return _name(value)
    return f"<{_name(type(value))}>"  # an object of another kind: only its type is part of the description


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def run_fingerprint(
    graph: Graph | SystemRef,
    params: Params,
    train: Iterable[Example],
    validation: Iterable[Example],
    optimizer: Any,
    loss: Any,
    options: Mapping[str, Any] | None = None,
) -> FrozenMap[str, str]:
    """A short digest of each part of a run (`PARTS`), for a checkpoint to be bound to.

    `options` are the sampling options per engine the run sends (as `fit` resolves them).
    """
    return FrozenMap(
        {
            "graph": graph.fingerprint,
            "initial_params": _digest(describe(params)),
            "train": _digest(describe(tuple(train))),
            "validation": _digest(describe(tuple(validation))),
            "optimizer": _digest(describe(optimizer)),
            "loss": _digest(describe(loss)),
            "options": _digest(describe(options)),
        }
    )


def differing_parts(saved: Mapping[str, str], current: Mapping[str, str]) -> tuple[str, ...]:
    """The words for each part in which two fingerprints differ (a part one of them lacks differs)."""
    return tuple(PARTS[p] for p in PARTS if saved.get(p) != current.get(p))
