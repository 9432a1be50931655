"""Properties of `semgrad.tasks.split` and `Split`."""

from __future__ import annotations

import random

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import Example, SemgradError
from semgrad.tasks import DataError, Split, split


def make_examples(n: int) -> tuple[Example, ...]:
    """`n` examples with ids 0..n-1."""
    return tuple(Example({"question": f"q{i}"}, str(i), id=i) for i in range(n))


@st.composite
def split_requests(draw: st.DrawFn) -> tuple[tuple[Example, ...], int, int, int | None]:
    """Examples plus train / validation / test sizes that fit them."""
    n = draw(st.integers(0, 60))
    train = draw(st.integers(0, n))
    validation = draw(st.integers(0, n - train))
    test = draw(st.none() | st.integers(0, n - train - validation))
    return make_examples(n), train, validation, test


@given(split_requests(), st.integers())
def test_split_parts_are_disjoint_and_have_the_asked_sizes(request, seed):
    """The three parts share no id, come from the examples, and have the sizes asked for."""
    examples, train, validation, test = request
    s = split(examples, train=train, validation=validation, test=test, seed=seed)
    parts = [{e.id for e in part} for part in (s.train, s.validation, s.test)]
    assert sum(map(len, parts)) == len(set().union(*parts))
    assert set().union(*parts) <= {e.id for e in examples}
    rest = len(examples) - train - validation
    assert s.sizes == (train, validation, rest if test is None else test)


@given(split_requests(), st.integers())
def test_split_is_deterministic_for_a_seed(request, seed):
    """The same examples and seed always give the same split."""
    examples, train, validation, test = request
    first = split(examples, train=train, validation=validation, test=test, seed=seed)
    assert first == split(list(examples), train=train, validation=validation, test=test, seed=seed)


@given(split_requests(), st.integers())
def test_split_neither_reads_nor_changes_global_random_state(request, seed):
    """Splitting leaves the global `random` state as it was and does not depend on it."""
    examples, train, validation, test = request
    saved = random.getstate()
    try:
        random.seed(1)
        before = random.getstate()
        first = split(examples, train=train, validation=validation, test=test, seed=seed)
        assert random.getstate() == before
        random.seed(2)
        assert split(examples, train=train, validation=validation, test=test, seed=seed) == first
    finally:
        random.setstate(saved)


def test_different_seeds_give_different_splits():
    """Two seeds shuffle 100 items differently."""
    examples = make_examples(100)
    assert split(examples, train=20, validation=20, seed=0) != split(examples, train=20, validation=20, seed=1)


@given(st.integers(0, 30), st.integers(1, 10), st.integers())
def test_asking_for_too_many_items_is_a_data_error(n, extra, seed):
    """Asking for more items than there are raises a DataError naming both counts."""
    with pytest.raises(DataError, match=f"only {n} examples"):
        split(make_examples(n), train=n, validation=0, test=extra, seed=seed)


def test_duplicate_ids_are_rejected():
    """Examples sharing an id cannot be split disjointly, so split refuses them."""
    examples = (*make_examples(3), Example({"question": "again"}, "x", id=1))
    with pytest.raises(DataError, match="id 1 appears more than once"):
        split(examples, train=1, validation=1, seed=0)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_sizes_must_be_non_negative_ints(bad):
    """A negative, fractional, boolean or text size is a ValueError that names the part."""
    with pytest.raises(ValueError, match="train must be a non-negative int"):
        split(make_examples(5), train=bad, validation=0, seed=0)


def test_split_value_refuses_overlapping_parts():
    """A Split whose parts share an id cannot be constructed, even with evolve."""
    s = split(make_examples(6), train=2, validation=2, seed=0)
    with pytest.raises(DataError, match="in both train and test"):
        attrs.evolve(s, test=(*s.test, s.train[0]))


def test_split_is_a_hashable_value_of_tuples():
    """A Split holds tuples, hashes, and compares by content."""
    s = split(make_examples(6), train=2, validation=2, seed=0)
    assert all(isinstance(part, tuple) for part in (s.train, s.validation, s.test))
    assert hash(s) == hash(Split(list(s.train), list(s.validation), list(s.test)))


def test_data_error_is_a_semgrad_value_error():
    """DataError subclasses both SemgradError and ValueError."""
    assert issubclass(DataError, SemgradError) and issubclass(DataError, ValueError)
