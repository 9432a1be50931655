"""Reading backward replies."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from semgrad.core import _parse
from semgrad.core._parse import _TAG_RE, _feedback_blocks, format_backward, parse_backward

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
bodies = st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)


@given(st.dictionaries(names, bodies.filter(lambda b: b.strip() and "<" not in b), min_size=1, max_size=5))
def test_canonical_replies_round_trip(feedback):
    """`format_backward` output parses back to the same feedback per target (bodies stripped)."""
    parsed = parse_backward(format_backward(feedback), list(feedback))
    assert parsed.unwrap() == {name: body.strip() for name, body in feedback.items()}


# The pattern as first written (a lazy body); the faster one must find exactly the same blocks.
_LAZY = re.compile(
    r"<\s*feedback\s+(?:input|for|name|target)\s*=\s*[\"']?\s*([^\"'>]+?)\s*[\"']?\s*>(.*?)<\s*/\s*feedback\s*>",
    re.IGNORECASE | re.DOTALL,
)
fragments = st.one_of(
    st.builds(lambda n, b: f'<feedback input="{n}">{b}</feedback>', names, bodies),
    st.builds(lambda n, b: f"<FEEDBACK for='{n}' >{b}< / Feedback >", names, bodies),
    st.sampled_from(["<", ">", "</feedback>", "</ feedback", "<feedback target=x>", "a < b", "\n", " ", "\u0130"]),
    bodies,
)


@given(st.lists(fragments, max_size=8))
def test_the_block_pattern_finds_what_the_lazy_pattern_finds(parts):
    """On any mix of blocks, spellings, stray tags and text, the unrolled pattern matches the lazy one exactly."""
    text = "".join(parts)
    assert _TAG_RE.findall(text) == _LAZY.findall(text)


labels = st.one_of(
    names,
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=8),
    st.sampled_from(['a"b', "a'b", "a>b", "a<b", " a", "a\n", "[2]", "A B"]),
)
tricky = st.sampled_from(["a </FEEDBACK> b", "x< / feedback >y", '<feedback input="z">w', "a < b", "\n"])
canonical = st.dictionaries(labels, st.one_of(bodies, tricky), min_size=1, max_size=4).map(format_backward)
near_canonical = st.lists(
    st.one_of(
        canonical,
        st.sampled_from(["\n", " ", "", "\n\n", "x", "<", '">', "</feedback>", '<feedback input="', "'", "\u0130"]),
    ),
    min_size=1,
    max_size=5,
).map("".join)


@given(st.one_of(canonical, near_canonical, st.lists(fragments, max_size=8).map("".join)))
@example(format_backward({'a"b': "x"}))
@example(format_backward({"a'b": "x", "c": "y"}))
@example(format_backward({" a": "x"}))
@example(format_backward({"a": "x </FEEDBACK> y"}))
@example(format_backward({"a": "x"}) + "Z" + format_backward({"b": "y"}))
def test_the_fast_reading_of_canonical_blocks_finds_what_the_pattern_finds(text):
    """Canonical replies (read without the expression), their near misses and any other text give exactly
    the blocks the pattern finds."""
    assert _feedback_blocks(text) == _TAG_RE.findall(text)


def test_the_fast_reading_takes_canonical_replies_without_the_pattern(monkeypatch):
    """A reply in `format_backward`'s form is read without the regular expression (which a test replaces)."""

    class Unused:
        def findall(self, text):
            raise AssertionError("the pattern was used")

    text = format_backward({"a": "Shorter.", "b b": "More\ndetail."})
    monkeypatch.setattr(_parse, "_TAG_RE", Unused())
    assert _feedback_blocks(text) == [("a", "\nShorter.\n"), ("b b", "\nMore\ndetail.\n")]
