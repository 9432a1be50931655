"""Concatenation: `Concat` gives `concat_texts` of its partials' texts, whatever their number and bound."""

from __future__ import annotations

from hypothesis import event, example, given
from hypothesis import strategies as st

from semgrad.core import Partial, rules
from semgrad.core._aggregate import TRUNCATED, TRUNCATED_TAIL, Concat, concat_texts

texts = st.one_of(st.text(max_size=60), st.sampled_from(["", "  ", " same ", "same", "x" * 80]))
#: Texts long beside the truncation marks, each telling its head from its tail ("abab...ab").
runs = st.builds(lambda a, b, n: (a + b) * n, st.sampled_from("ax "), st.sampled_from("by"), st.integers(1, 20))


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


def _kept(values: list[str], dedupe: bool) -> list[str]:
    """The texts `concat_texts` joins, restated: stripped, empty ones dropped, exact repeats dropped with `dedupe`."""
    items: list[str] = []
    for value in values:
        text = value.strip()
        if text and not (dedupe and text in items):
            items.append(text)
    return items


@given(
    st.lists(st.one_of(runs, texts, st.sampled_from(["alpha", " alpha"])), min_size=1, max_size=6),
    st.floats(0, 1.2),
    st.sampled_from(["recent", "first"]),
    st.booleans(),
    st.sampled_from(["\n\n", " | ", "\n\n---- next ----\n\n"]),
)
@example(["a" * 60, "b" * 10, "c" * 10], 0.6, "recent", True, "\n\n")
@example(["a" * 30, "xy" * 25], 0.75, "recent", True, "\n\n")
@example(["alpha", "beta", "alpha"], 1.0, "recent", False, " | ")
def test_concat_texts_keeps_the_most_recent_whole_texts_in_order_or_the_longest_head(
    values, fraction, keep, dedupe, separator
):
    """Under a bound between the marks' length and the joined length (truncation the common case), `concat_texts`
    gives the whole join when it fits; else keep='recent' gives the mark then as many of the last texts as fit, in
    order (or the last text's tail when none fits), and keep='first' the longest head that fits beside the mark."""
    items = _kept(values, dedupe)
    joined = separator.join(items)
    floor = min(len(TRUNCATED) + 2, len(joined))  # the older tests draw bounds below the marks' length
    max_chars = floor + round(fraction * (len(joined) - floor))
    result = concat_texts(values, dedupe=dedupe, max_chars=max_chars, keep=keep, separator=separator)
    assert len(result) <= max_chars
    if len(joined) <= max_chars:
        assert result == joined
    elif keep == "first" and max_chars > len(TRUNCATED_TAIL) + 1:
        event("first, truncated with room")
        head = joined[: max_chars - len(TRUNCATED_TAIL) - 1].rstrip()
        assert result == f"{head} {TRUNCATED_TAIL}"
    elif keep == "recent" and max_chars > len(TRUNCATED) + 1:
        fitting = [k for k in range(1, len(items)) if len(separator.join([TRUNCATED, *items[-k:]])) <= max_chars]
        event(f"recent, truncated to {'whole texts' if fitting else 'a tail'}")
        if fitting:
            assert result == separator.join([TRUNCATED, *items[-max(fitting) :]])
        else:
            assert result == f"{TRUNCATED} {items[-1][-(max_chars - len(TRUNCATED) - 1) :]}"
    else:
        event(f"{keep}, truncated below the mark's length")
