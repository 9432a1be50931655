"""Seeded, disjoint train / validation / test splits of examples."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

import attrs

from ..core import Example
from ._errors import DataError

__all__ = ["Split", "split", "test_items"]


def _examples(value: Iterable[Example]) -> tuple[Example, ...]:
    return tuple(value)


def _disjoint(instance: Split, attribute: attrs.Attribute, value: tuple[Example, ...]) -> None:
    seen: dict[object, str] = {}
    for part in ("train", "validation", "test"):
        for example in getattr(instance, part):
            if example.id in seen:
                where = seen[example.id]
                raise DataError(f"example id {example.id!r} is in both {where} and {part}; splits must be disjoint")
            seen[example.id] = part


@attrs.frozen
class Split:
    """Three disjoint tuples of examples: no example id is in two of them.

    Attributes:
        train: The items the optimizer learns from.
        validation: The items the update gate scores candidates on.
        test: The held-out items reported at the end.

    Examples:
        >>> from semgrad.core import Example
        >>> s = Split(train=[Example({"q": "a"}, "1", id=0)], validation=[], test=[Example({"q": "b"}, "2", id=1)])
        >>> s.sizes
        (1, 0, 1)
        >>> Split(train=[Example({"q": "a"}, id=0)], validation=[Example({"q": "a"}, id=0)], test=[])
        Traceback (most recent call last):
        ...
        semgrad.tasks._errors.DataError: example id 0 is in both train and validation; splits must be disjoint
    """

    train: tuple[Example, ...] = attrs.field(converter=_examples)
    validation: tuple[Example, ...] = attrs.field(converter=_examples)
    test: tuple[Example, ...] = attrs.field(converter=_examples, validator=_disjoint)

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(len(train), len(validation), len(test))``."""
        return len(self.train), len(self.validation), len(self.test)


def split(
    examples: Iterable[Example],
    *,
    train: int,
    validation: int,
    test: int | None = None,
    seed: int,
) -> Split:
    """Shuffle `examples` with ``random.Random(seed)`` and cut them into a `Split`.

    The first `train` shuffled items are the training set, the next `validation`
    the validation set, and the next `test` (all the rest when None) the test set.
    The same examples and seed always give the same split; the global `random`
    state is neither read nor changed.

    Args:
        examples: Items with unique ids (see `semgrad.core.as_examples`).
        train: How many training items.
        validation: How many validation items.
        test: How many test items; None takes every remaining item.
        seed: The shuffle's seed.

    Returns:
        The `Split`; its three parts never share an example id.

    Raises:
        DataError: Two examples share an id, or there are fewer examples than asked for.

    Examples:
        >>> from semgrad.core import Example
        >>> items = [Example({"question": str(i)}, str(i), id=i) for i in range(10)]
        >>> s = split(items, train=3, validation=2, seed=0)
        >>> s.sizes
        (3, 2, 5)
        >>> s == split(items, train=3, validation=2, seed=0)
        True
        >>> split(items, train=8, validation=5, seed=0)
        Traceback (most recent call last):
        ...
        semgrad.tasks._errors.DataError: asked for 8 train + 5 validation items but there are only 10 examples
    """
    items = _unique(tuple(examples))
    _check_sizes(len(items), train, validation, test)
    order = list(items)
    random.Random(seed).shuffle(order)
    end = train + validation
    rest = order[end:] if test is None else order[end : end + test]
    return Split(train=order[:train], validation=order[train:end], test=rest)


def test_items(test_file: Iterable[Example], test: int | None, seed: int) -> tuple[Example, ...]:
    """The test set the paper's protocols take from a dataset's own test file: all of it, or with
    `test` given a seeded sample of that many of its items.

    Examples:
        >>> from semgrad.core import Example
        >>> items = [Example({"q": str(i)}, str(i), id=i) for i in range(6)]
        >>> len(test_items(items, None, 0)), len(test_items(items, 2, 0))
        (6, 2)
    """
    return tuple(test_file) if test is None else split(test_file, train=0, validation=0, test=test, seed=seed).test


def _unique(items: Sequence[Example]) -> Sequence[Example]:
    seen: set[object] = set()
    for example in items:
        if not isinstance(example, Example):
            raise TypeError(f"split needs Examples, got a {type(example).__name__}; see semgrad.core.as_examples")
        if example.id in seen:
            raise DataError(f"example id {example.id!r} appears more than once; split needs unique ids")
        seen.add(example.id)
    return items


def _check_sizes(available: int, train: int, validation: int, test: int | None) -> None:
    for name, size in (("train", train), ("validation", validation), ("test", test)):
        if size is None and name == "test":
            continue
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"{name} must be a non-negative int, got {size!r}")
    wanted = train + validation + (test or 0)
    if wanted > available:
        parts = f"{train} train + {validation} validation" + ("" if test is None else f" + {test} test")
        raise DataError(f"asked for {parts} items but there are only {available} examples")
