"""The overfitting guard: an update that copies a training item verbatim is refused and reported."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends.fake import FunctionLLM
from semgrad.core import Example, GraphBuilder, ProtocolError, optim
from semgrad.core._frozen import FrozenMap
from semgrad.core.optim import Step
from semgrad.effects import run_sync

QUESTION = "Lena buys seven red apples and gives two of them to her brother on Monday morning."
ITEMS = (
    Example({"question": "What is two plus two?"}, "4", id="short"),
    Example({"question": QUESTION}, "Lena keeps five red apples after giving two of them away", id="lena"),
)


def _params():
    b = GraphBuilder()
    q = b.input("question")
    h = b.llm("hint", inputs=[q], instruction="Give a hint.")
    b.llm("answer", inputs=[q, h], instruction="Solve the problem.")
    return b.build(output="answer")


def _guarded(updates, *, items=ITEMS, min_words=8, current=None):
    """The step after the guard, given `updates` (and the instructions' current values `current`)."""
    graph, params = _params()
    if current:
        params = params.with_values(current)
    step = Step(graph, train=items, updates=FrozenMap(updates))
    guard = optim.memorization_guard(min_words)
    new, _ = run_sync(guard.update(step, guard.init(params), params), FunctionLLM(lambda r: "unused"))
    return new


def test_an_instruction_copying_eight_words_of_a_training_input_is_refused_and_reported():
    """An update holding 8 consecutive words of an item's input is removed; the report names the parameter,
    the item, the field and the words; the other update goes on."""
    copied = "Solve it. For example: Lena buys seven red apples and gives two of them, so count."
    new = _guarded({"answer.instruction": copied, "hint.instruction": "Give a short hint."})
    assert new.updates == FrozenMap({"hint.instruction": "Give a short hint."})
    assert new.report[-1].stage == "memorization_guard"
    assert new.report[-1].notes == (
        "answer.instruction: refused, it copies 8 consecutive words of training item 'lena' (input question): "
        '"lena buys seven red apples and gives two"',
    )


def test_a_copied_target_is_refused_and_case_and_punctuation_do_not_hide_it():
    """Eight words of an item's target, in other case and punctuation, are a copy too."""
    new = _guarded({"answer.instruction": "Reply like: LENA KEEPS five, red apples -- after giving two of them."})
    assert not new.updates
    assert "training item 'lena' (target)" in new.report[-1].notes[0]


def test_an_instruction_sharing_only_short_phrases_passes():
    """Sharing runs of up to 7 words with the items (and many single words) is no copy."""
    value = "Lena buys seven red apples and gives some away: two of them to her brother. Count what remains on Monday."
    new = _guarded({"answer.instruction": value})
    assert new.updates == FrozenMap({"answer.instruction": value})
    assert new.report[-1].notes == ("no copy of 8 words or more in 1 update(s)",)


def test_a_run_the_current_instruction_already_held_is_no_new_copy():
    """Words the parameter's current value already held (a worked example the user wrote) are not refused."""
    current = f"Solve the problem, as in: {QUESTION}"
    new = _guarded({"answer.instruction": current + " Show your steps."}, current={"answer.instruction": current})
    assert new.updates == FrozenMap({"answer.instruction": current + " Show your steps."})


@given(st.integers(0, 15 - 8), st.integers(1, 8), st.text(alphabet="abc ", max_size=30))
def test_any_window_of_min_words_of_an_input_in_a_new_instruction_is_refused(start, min_words, padding):
    """Whatever window of `min_words` words of an item's input is pasted into an instruction (among any other
    text), the guard refuses it; the same words with no two in a row pass a guard of 2 words."""
    words = QUESTION.rstrip(".").split()
    window = " ".join(words[start : start + min_words])
    item = Example({"question": QUESTION}, None, id="q")
    refused = _guarded({"answer.instruction": f"{padding}. {window}. {padding}"}, items=(item,), min_words=min_words)
    assert not refused.updates and "training item 'q'" in refused.report[-1].notes[0]
    short = " zz ".join(words[start : start + min_words])  # no two of its words in a row
    assert _guarded({"answer.instruction": short}, items=(item,), min_words=2).updates


def test_a_skipped_step_has_nothing_to_check_and_a_missing_update_stage_is_named():
    """After every_k skipped the rewrite the guard passes nothing on; with no update stage before it, it says so."""
    graph, params = _params()
    guard = optim.memorization_guard()
    skipped = Step(graph, train=ITEMS, skipped=True)
    assert guard.update(skipped, guard.init(params), params).value[0].report[-1].notes == ("nothing to check",)
    with pytest.raises(ProtocolError, match=r"memorization_guard needs step.updates; put an update stage"):
        guard.update(Step(graph, train=ITEMS), guard.init(params), params)


@pytest.mark.parametrize("bad", [0, -1, 2.0, True])
def test_min_words_below_one_or_not_whole_is_refused(bad):
    """memorization_guard refuses a min_words that is no whole number >= 1 when it is made."""
    with pytest.raises(ValueError, match="whole number min_words >= 1"):
        optim.memorization_guard(bad)
