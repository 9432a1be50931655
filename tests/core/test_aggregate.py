"""Concatenation: `Concat` gives `concat_texts` of its partials' texts, whatever their number and bound."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from semgrad.core import Partial, rules
from semgrad.core._aggregate import Concat, concat_texts

texts = st.one_of(st.text(max_size=60), st.sampled_from(["", "  ", " same ", "same", "x" * 80]))


@given(
    st.lists(st.one_of(texts, st.integers()), min_size=1, max_size=4),
    st.one_of(st.none(), st.integers(0, 120)),
    st.sampled_from(["recent", "first"]),
    st.booleans(),
)
@example(["x" * 80], 40, "recent", True)
@example([" abc "], 0, "first", False)
def test_concat_is_concat_texts_of_the_partials_texts(values, max_chars, keep, dedupe):
    """For one partial (read without the general join) or several, with or without a bound, `Concat` yields
    exactly `concat_texts` of the partials' texts."""
    partials = tuple(Partial("t", f"s{i}", value, (), 0) for i, value in enumerate(values))
    aggregate = Concat(dedupe=dedupe, max_chars=max_chars, keep=keep)
    expected = concat_texts([p.text for p in partials], dedupe=dedupe, max_chars=max_chars, keep=keep)
    assert aggregate("t", "a role", partials).value == expected


@given(
    st.lists(texts, max_size=5),
    st.integers(0, 150),
    st.sampled_from(["recent", "first"]),
    st.booleans(),
    st.sampled_from(["\n\n", "\n", " | ", "\n\n---- next ----\n\n"]),
)
@example(["x" * 50, "y" * 400], 30, "recent", True, "\n\n")
@example(["x" * 200], 10, "first", True, "\n\n")
@example(["x" * 200], 0, "recent", True, "\n\n")
def test_concat_texts_never_exceeds_max_chars(values, max_chars, keep, dedupe, separator):
    """Whatever the texts, the bound (however small, even below the truncation mark's length), `keep` and the
    separator, `concat_texts(..., max_chars=n)` is at most n characters long, and so is `rules.concat`'s gradient."""
    joined = concat_texts(values, dedupe=dedupe, max_chars=max_chars, keep=keep, separator=separator)
    assert len(joined) <= max_chars
    if max_chars >= 1 and values:
        partials = tuple(Partial("t", f"s{i}", value, (), 0) for i, value in enumerate(values))
        aggregate = rules.concat(dedupe=dedupe, max_chars=max_chars, keep=keep)
        assert len(aggregate("t", "a role", partials).value) <= max_chars
