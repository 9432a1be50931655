"""Concatenation: `Concat` gives `concat_texts` of its partials' texts, whatever their number and bound."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from semgrad.core import Partial
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
