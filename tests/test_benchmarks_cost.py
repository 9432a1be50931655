"""Smoke test of the cost row (``python -m benchmarks --cost``, issue #36 point 3).

Property: a small run of the paper's protocol on both sides makes the same calls with the same test accuracy
in the simulated world, semgrad's layout puts a larger share of each purpose's prompt tokens in a prefix an
earlier request sent, and the bill is priced for every model. It asserts no target figure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.cost import MODELS, cost_row, shared_prefixes
from tests.conformance._official import skip_module_without_official


@given(st.lists(st.text(alphabet="ab", max_size=6), max_size=12))
def test_shared_prefixes_is_the_longest_prefix_any_earlier_text_shares(texts):
    """Each text's shared prefix is the longest common prefix with any earlier text (0 for the first)."""

    def common(a: str, b: str) -> int:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    expected = [max((common(t, u) for u in texts[:i]), default=0) for i, t in enumerate(texts)]
    assert shared_prefixes(texts) == expected


def test_a_small_cost_row_makes_the_same_calls_with_the_same_results():
    """Both sides make the same calls and score the test items alike; every model's bill is priced."""
    skip_module_without_official()
    row = cost_row(train_items=8, test_items=4, iterations=1)
    ours, theirs = row["semgrad"], row["official"]
    assert ours["calls"] == theirs["calls"] and ours["test_accuracy"] == theirs["test_accuracy"]
    assert row["same_calls"] and ours["by_phase"].keys() == theirs["by_phase"].keys()
    assert set(ours["usd"]) == set(theirs["usd"]) == set(MODELS)
    assert all(ours["prefix_share"][p] >= theirs["prefix_share"][p] for p in ("forward", "backward"))
