"""The neighbour-aware prompt, split once per node and filled per sample, is the template filled in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from semgrad.core._prompts import NEIGHBOR_AWARE_USER, NeighborAwarePrompt, _numbered, feedback_form, format_inputs

texts = st.text(max_size=12)  # braces included: the split must not read them as fields
values = st.one_of(texts, st.integers(), st.floats(allow_nan=False), st.none())


@given(
    texts,
    st.lists(st.tuples(texts, texts, values), max_size=4),
    values,
    values,
    st.data(),
)
def test_a_filled_neighbor_aware_prompt_is_the_template_formatted(task, shown, output, feedback, data):
    """NeighborAwarePrompt.of(...).fill(...) equals NEIGHBOR_AWARE_USER.format of the task, the formatted inputs,
    output, feedback, numbered targets and reply form, for any text (braces too) and non-text values."""
    names = [name for name, _, _ in shown]
    targets = data.draw(st.lists(st.sampled_from(names), unique=True) if names else st.just([]))
    prompt = NeighborAwarePrompt.of(task, targets, [(name, role) for name, role, _ in shown])
    expected = NEIGHBOR_AWARE_USER.format(
        task=task,
        inputs=format_inputs(shown),
        output=output,
        feedback=feedback,
        targets=_numbered(targets, names),
        form=feedback_form(targets),
    )
    assert prompt.fill([value for _, _, value in shown], output, feedback) == expected
