"""`FrozenMap`: a small immutable, hashable, insertion-ordered mapping.

Values in semgrad are frozen attrs classes whose collections are tuples or
`FrozenMap`, so every value is hashable and compares by content.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")

__all__ = ["FrozenMap", "freeze"]


class FrozenMap(Mapping[K, V]):
    """An immutable mapping that keeps insertion order and is hashable.

    Equality is that of `dict` (order-insensitive); iteration order is insertion
    order, so outputs built from it are deterministic.

    Examples:
        >>> m = FrozenMap({"b": 1, "a": 2})
        >>> list(m), m["a"], m == {"a": 2, "b": 1}
        (['b', 'a'], 2, True)
        >>> m.set("c", 3)
        FrozenMap({'b': 1, 'a': 2, 'c': 3})
        >>> hash(m) == hash(FrozenMap({"a": 2, "b": 1}))
        True
    """

    __slots__ = ("_data", "_hash")

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._data: dict[K, V] = dict(items)
        self._hash: int | None = None

    if TYPE_CHECKING:

        @property
        def view(self) -> Mapping[K, V]:
            """The items as a read-only `Mapping`, for look-ups at C speed on hot paths."""
            ...

    else:
        view = property(
            attrgetter("_data"),  # a C getter: no Python frame per read
            doc="""The items as a read-only `Mapping`, for look-ups at C speed on hot paths.

            It is the map's own `dict` (``view[key]`` and ``view.get(key)`` run in C, where
            the `FrozenMap` methods add a Python call each): read it, never change it -- a
            `FrozenMap` is shared and hashed.

            Examples:
                >>> runs = FrozenMap({"a": 1}).view
                >>> runs["a"], runs.get("b", 0)
                (1, 0)
            """,
        )

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    # Fast paths: the mixin versions of these iterate in Python.
    def get(self, key: K, default: Any = None) -> Any:
        return self._data.get(key, default)

    def keys(self) -> KeysView[K]:
        return self._data.keys()

    def values(self) -> ValuesView[V]:
        return self._data.values()

    def items(self) -> ItemsView[K, V]:
        return self._data.items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (tuple(self._data.items()),))

    def set(self, key: K, value: V) -> FrozenMap[K, V]:
        """Return a copy with `key` bound to `value` (appended if new)."""
        data = dict(self._data)
        data[key] = value
        return _from_dict(data)

    def update(self, other: Mapping[K, V] | Iterable[tuple[K, V]]) -> FrozenMap[K, V]:
        """Return a copy with the items of `other` added or replaced."""
        data = dict(self._data)
        data.update(other._data if type(other) is FrozenMap else other)
        return _from_dict(data)

    def without(self, *keys: K) -> FrozenMap[K, V]:
        """Return a copy without `keys` (missing keys are ignored)."""
        return _from_dict({k: v for k, v in self._data.items() if k not in keys})

    def to_dict(self) -> dict[K, V]:
        """Return a new plain `dict` with the same items."""
        return dict(self._data)


def _from_dict(data: dict[Any, Any]) -> FrozenMap[Any, Any]:
    fm: FrozenMap[Any, Any] = FrozenMap.__new__(FrozenMap)
    fm._data = data
    fm._hash = None
    return fm


@overload
def freeze(value: Mapping[K, V]) -> FrozenMap[K, V]: ...
@overload
def freeze(value: Iterable[tuple[K, V]]) -> FrozenMap[K, V]: ...
def freeze(value: Any) -> FrozenMap[Any, Any]:
    """Any mapping (or pairs) as a `FrozenMap`, reusing one (fields convert with `to_frozen_map`)."""
    if isinstance(value, FrozenMap):
        return value
    return FrozenMap(value)


def to_frozen_map(value: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> FrozenMap[Any, Any]:
    """attrs converter for `FrozenMap` fields: `freeze` without its generic overloads.

    Type checkers (attrs' mypy plugin, ``dataclass_transform``) take a field's argument
    type from its converter's parameter, and cannot solve an overloaded generic one: with
    `freeze` as the converter, ``Example({"q": "2+2?"}, "4")`` did not type-check.
    """
    if isinstance(value, FrozenMap):
        return value
    return FrozenMap(value)


def slot_setters(cls: type, *names: str) -> tuple[Any, ...]:
    """The ``__set__`` of each named slot of a slotted (attrs) class, for trusted constructors.

    Calling a slot's setter directly skips `object.__setattr__`'s name lookup: about
    a third less per field, which the hot paths' value-building constructors use.

    Examples:
        >>> import attrs
        >>> @attrs.frozen
        ... class Point:
        ...     x: int
        ...     y: int
        >>> set_x, set_y = slot_setters(Point, "x", "y")
        >>> p = object.__new__(Point); set_x(p, 1); set_y(p, 2); p
        Point(x=1, y=2)
    """
    return tuple(cls.__dict__[name].__set__ for name in names)
