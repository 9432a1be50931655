"""Persistent sequences whose updates cost little: the state of the core's machines.

A machine state (`ForwardMachine`, `BackwardMachine`, a `gather`) is a value:
feeding it a reply returns a *new* state and leaves the old one as it was. Copying
per-node tuples on every reply would make each step O(nodes) and a whole pass
O(nodes²); these two structures keep a step cheap while every state stays an
independent, immutable value.

* `PVec` -- a persistent array as a radix-32 trie of tuples, after Clojure's
  persistent vector (Bagwell; Hickey): the items sit in leaves of 32, and `set`
  copies only the path from the root to one leaf -- one tuple of at most 32
  items per level, two levels up to 1,024 items, three up to 32,768. Nothing is
  ever mutated, so any number of versions can be kept and used in any order (or
  from several threads), and an old version never keeps a newer one alive.
* `Chain` -- an append-only log as nested pairs ``(rest, item)`` (and triples
  ``(rest, items, True)`` for several items appended at once, so `extend` allocates
  two objects, not two per item): O(1) append, shared tails, `items()` in
  O(length) at the end.

Examples:
    >>> a = PVec([0, 0, 0])
    >>> b = a.set(1, 5)
    >>> c = b.set(2, 7)
    >>> a.tolist(), b.tolist(), c.tolist()
    ([0, 0, 0], [0, 5, 0], [0, 5, 7])
    >>> b.set(0, 9).tolist(), c.get(0)
    ([9, 5, 0], 0)
    >>> big = PVec(range(100)).set(70, -1)
    >>> big.get(70), big.get(71), len(big)
    (-1, 71, 100)
    >>> log = Chain().append("x").append("y")
    >>> log.items(), len(log)
    (('x', 'y'), 2)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Generic, TypeVar

__all__ = ["Chain", "PVec"]

T = TypeVar("T")

_BITS = 5
_WIDTH = 1 << _BITS
_MASK = _WIDTH - 1


class PVec(Generic[T]):
    """A persistent array: `set` returns a new version and copies O(log32 n) small tuples."""

    __slots__ = ("_root", "_shift", "_size")

    def __init__(self, items: Iterable[T] = ()) -> None:
        level: tuple[Any, ...] = tuple(items)
        self._size = len(level)
        shift = 0
        while len(level) > _WIDTH:
            level = tuple(level[i : i + _WIDTH] for i in range(0, len(level), _WIDTH))
            shift += _BITS
        self._root = level
        self._shift = shift

    def get(self, index: int) -> T:
        """The item at `index` in this version."""
        if not 0 <= index < self._size:
            raise IndexError(f"index {index} out of range for a PVec of {self._size}")
        node = self._root
        shift = self._shift
        while shift:
            node = node[(index >> shift) & _MASK]
            shift -= _BITS
        return node[index & _MASK]  # type: ignore[no-any-return]

    def set(self, index: int, value: T) -> PVec[T]:
        """A new version with `value` at `index`; this version is unchanged."""
        if not 0 <= index < self._size:
            raise IndexError(f"index {index} out of range for a PVec of {self._size}")
        new: PVec[T] = PVec.__new__(PVec)
        new._shift = shift = self._shift
        new._size = self._size
        root = self._root
        if not shift:  # one leaf: up to 32 items
            leaf = list(root)
            leaf[index] = value
            new._root = tuple(leaf)
        elif shift == _BITS:  # two levels: up to 1,024 items, written out (no recursion)
            slot = index >> _BITS
            leaf = list(root[slot])
            leaf[index & _MASK] = value
            top = list(root)
            top[slot] = tuple(leaf)
            new._root = tuple(top)
        else:
            new._root = _assoc(root, shift, index, value)
        return new

    def set_many(self, changes: dict[int, T]) -> PVec[T]:
        """A new version with ``changes[i]`` at each index ``i``: one copy per leaf touched,
        not one per change; this version is unchanged.

        Examples:
            >>> PVec([0, 0, 0, 0]).set_many({1: 5, 3: 7}).tolist()
            [0, 5, 0, 7]
        """
        size = self._size
        new: PVec[T] = PVec.__new__(PVec)
        new._shift = shift = self._shift
        new._size = size
        root = self._root
        if shift == _BITS:  # two levels (up to 1,024 items), the usual case: written out
            top: list[Any] = list(root)
            if len(changes) == 1:  # as often as not: no bookkeeping
                for index, value in changes.items():
                    if not 0 <= index < size:
                        raise IndexError(f"index {index} out of range for a PVec of {size}")
                    slot = index >> _BITS
                    leaf = list(root[slot])
                    leaf[index & _MASK] = value
                    top[slot] = tuple(leaf)
                new._root = tuple(top)
                return new
            touched = []
            for index, value in changes.items():
                if not 0 <= index < size:
                    raise IndexError(f"index {index} out of range for a PVec of {size}")
                slot = index >> _BITS
                leaf = top[slot]
                if type(leaf) is tuple:  # not copied yet: a leaf touched twice is copied once
                    leaf = top[slot] = list(leaf)
                    touched.append(slot)
                leaf[index & _MASK] = value
            for slot in touched:
                top[slot] = tuple(top[slot])
            new._root = tuple(top)
            return new
        for index in changes:
            if not 0 <= index < size:
                raise IndexError(f"index {index} out of range for a PVec of {size}")
        if not shift:
            leaf = list(root)
            for index, value in changes.items():
                leaf[index] = value
            new._root = tuple(leaf)
        else:
            for index, value in changes.items():
                root = _assoc(root, shift, index, value)
            new._root = root
        return new

    def tolist(self) -> list[T]:
        """A fresh list of this version's items."""
        level: list[Any] = list(self._root)
        for _ in range(self._shift // _BITS):
            level = [item for node in level for item in node]
        return level

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"PVec({self.tolist()!r})"


def _assoc(node: tuple[Any, ...], shift: int, index: int, value: Any) -> tuple[Any, ...]:
    """`node` with the item at `index` replaced, copying one tuple per level."""
    copy = list(node)
    if shift:
        slot = (index >> shift) & _MASK
        copy[slot] = _assoc(node[slot], shift - _BITS, index, value)
    else:
        copy[index & _MASK] = value
    return tuple(copy)


class Chain(Generic[T]):
    """An append-only persistent log: `append` is O(1); `items()` lists it in order."""

    __slots__ = ("_cell", "_size")

    def __init__(self) -> None:
        self._cell: Any = None
        self._size = 0

    def append(self, item: T) -> Chain[T]:
        """A new log with `item` at the end."""
        new: Chain[T] = Chain.__new__(Chain)
        new._cell = (self._cell, item)
        new._size = self._size + 1
        return new

    def extend(self, items: Iterable[T]) -> Chain[T]:
        """A new log with `items` at the end."""
        chunk = items if type(items) is tuple else tuple(items)
        if len(chunk) < 2:
            return self.append(chunk[0]) if chunk else self
        new: Chain[T] = Chain.__new__(Chain)
        new._cell = (self._cell, chunk, True)
        new._size = self._size + len(chunk)
        return new

    def items(self) -> tuple[T, ...]:
        """The items, oldest first."""
        out: list[T] = []
        cell = self._cell
        while cell is not None:
            if len(cell) == 3:  # several items appended at once
                cell, chunk, _ = cell
                out.extend(reversed(chunk))
            else:
                cell, item = cell
                out.append(item)
        out.reverse()
        return tuple(out)

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"Chain({list(self.items())!r})"
