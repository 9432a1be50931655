"""Reading backward replies."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from semgrad.core._parse import format_backward, parse_backward

names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
bodies = st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)


@given(st.dictionaries(names, bodies.filter(lambda b: b.strip() and "<" not in b), min_size=1, max_size=5))
def test_canonical_replies_round_trip(feedback):
    """`format_backward` output parses back to the same feedback per target (bodies stripped)."""
    parsed = parse_backward(format_backward(feedback), list(feedback))
    assert parsed.unwrap() == {name: body.strip() for name, body in feedback.items()}
