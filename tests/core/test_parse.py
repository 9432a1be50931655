"""Reading backward replies."""

from __future__ import annotations

import re
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import _parse
from semgrad.core._parse import _TAG_RE, _backward_lookup, format_backward, parse_backward

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


odd_labels = st.builds(
    lambda n, c: f"{c}{n}" if c in " '" else f"{n}{c}", names, st.sampled_from([" ", "'", "\t", "x"])
)
canonical_mixes = st.lists(
    st.one_of(
        fragments,
        st.builds(lambda n, b: f'<feedback input="{n}">{b}</feedback>', odd_labels, bodies),
        st.builds(lambda n: f'<feedback input="{n}">{n} is fine</feedback>', names),
    ),
    max_size=8,
)


@given(canonical_mixes, st.lists(names, min_size=1, max_size=3, unique=True))
def test_the_canonical_shortcut_reads_what_the_general_reading_reads(parts, targets):
    """On any mix of canonical blocks, other spellings and stray tags, a reply parses as the general pattern reads."""
    text = "".join(parts)
    targets = list(dict.fromkeys([*targets, *(label.strip() for label, _ in _TAG_RE.findall(text))]))
    lookup = _backward_lookup(targets, dict(enumerate(targets, 1)))
    with mock.patch.object(_parse, "_CANONICAL_RE", re.compile(r"(?!)")):  # never matches: always the general reading
        general = _parse._parse_backward(text, targets, lookup)
    assert _parse._parse_backward(text, targets, lookup) == general
