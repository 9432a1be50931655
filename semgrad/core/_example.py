"""Dataset items."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ._frozen import FrozenMap, to_frozen_map
from ._requests import SampleId

__all__ = ["Example", "as_examples"]


def _inputs(inputs: Any) -> FrozenMap[str, Any]:
    """An example's inputs as a frozen map; a `TypeError` for what is no mapping (a bare question, say)."""
    if not isinstance(inputs, Mapping):
        raise TypeError(
            "Example's inputs must be a mapping of the graph's input fields to values, such as "
            f"Example({{'question': ...}}, target), got {type(inputs).__name__}"
        )
    return to_frozen_map(inputs)


@attrs.frozen
class Example:
    """One dataset item: the graph's input fields, the target, and an id.

    Examples:
        >>> Example({"question": "2+2?"}, "4", id="q1").inputs["question"]
        '2+2?'
        >>> as_examples([{"inputs": {"question": "2+2?"}, "target": "4"}])[0].id
        0
    """

    inputs: FrozenMap[str, Any] = attrs.field(converter=_inputs)
    target: Any = None
    id: SampleId = None


def as_examples(items: Iterable[Example | Mapping[str, Any]]) -> tuple[Example, ...]:
    """Examples from `Example`s or plain dicts ``{"inputs": {...}, "target": ...}``.

    Items without an id get their position as id; ids must be unique.

    Raises:
        TypeError: When `items` is one item (a dict, an `Example`) or a string rather than
            a collection of items, or an item is neither an `Example` nor a dict.
        ValueError: When a dict has no ``"inputs"``, or two items share an id.
    """
    if isinstance(items, (Mapping, Example, str, bytes)):
        one = "one item" if isinstance(items, (Mapping, Example)) else f"a {type(items).__name__}"
        raise TypeError(f"items must be a list of items, got {one}; to pass one item, write [item]")
    result = []
    for position, item in enumerate(items):
        if isinstance(item, Mapping):
            if "inputs" not in item:
                raise ValueError(f"item {position} has no 'inputs' field: {dict(item)!r}")
            item = Example(item["inputs"], item.get("target"), item.get("id"))
        elif not isinstance(item, Example):
            raise TypeError(f"item {position} is a {type(item).__name__}, not an Example or a dict")
        if item.id is None:
            item = attrs.evolve(item, id=position)
        result.append(item)
    ids = [e.id for e in result]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(
            f"example id {duplicate!r} appears more than once (an item without an id gets its position as its id)"
        )
    return tuple(result)
