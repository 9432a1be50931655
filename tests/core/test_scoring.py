"""Losses: what an LLM judge's reply scores."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import Example, NodeRun, Trace
from semgrad.core.scoring import llm_judge, normalized_match, numeric_match
from semgrad.effects import run_sync


def _scored(loss, output: str, target: str) -> float:
    trace = Trace(0, "g", "out", {"out": NodeRun("out", "llm", value=output)})
    return run_sync(loss(Example({}, target), trace), lambda request: "").value


def _judged(score_text: str) -> float:
    trace = Trace(0, "g", "out", {"out": NodeRun("out", "llm", value="x = 1")})
    reply = f"<score>{score_text}</score>\n<critique>Handle the empty input.</critique>"
    return run_sync(llm_judge("Correct code.")(Example({}, None), trace), lambda request: reply).value


@given(
    st.integers(0, 100),
    st.sampled_from([1, 5, 10, 100]),
    st.sampled_from(["{x}/{s}", "{x} / {s}", "{x} out of {s}", "{x}/{s} (1 is perfect)"]),
)
def test_a_judge_score_written_over_a_scale_is_read_as_that_fraction(percent, scale, form):
    """A judge's score written over its scale ("0.3/1", "3 out of 10") is read as that fraction, not as the scale."""
    x = f"{percent * scale / 100:g}"
    assert _judged(form.format(x=x, s=scale)) == pytest.approx(percent / 100)


@given(st.integers(0, 100))
def test_a_judge_score_in_percent_or_alone_is_read_as_a_fraction(percent):
    """A judge's score of "30%" is 0.3, a bare "0.3" or "0 to 1: 0.3" is 0.3, and one above 1 is clamped to 1."""
    assert _judged(f"{percent}%") == pytest.approx(percent / 100)
    assert _judged(f"{percent / 100:g}") == pytest.approx(percent / 100)
    assert _judged(f"0.0 to 1.0: {percent / 100:g}") == pytest.approx(percent / 100)
    assert _judged(f"{percent + 1}") == 1.0


@given(st.integers(-10_000, 10_000), st.sampled_from(["Answer: {n}", "Answer - {n}", "Answer is {n}", "answer {n}"]))
def test_an_answer_lines_number_keeps_its_sign(n, form):
    """A number on an 'Answer' line, negative ones included, scores right against that number as target."""
    output = f"Let me work it out.\n{form.format(n=n)}"
    assert _scored(numeric_match(), output, str(n)) == 1.0
    if ":" in form or " - " in form:
        assert _scored(normalized_match(), output, str(n)) == 1.0


_WORD = st.text(st.sampled_from("abcXYZ0123456789()"), min_size=1, max_size=8)


@given(st.lists(_WORD, min_size=2, max_size=4), _WORD)
def test_the_last_answer_line_is_the_answer(answers, prose):
    """With several 'Answer:' lines, extract_answer and the losses read the last one."""
    from semgrad.core.scoring import exact_match, extract_answer

    output = "\n".join(f"{prose}\nAnswer: {a}" for a in answers)
    assert extract_answer(output) == answers[-1]
    assert _scored(exact_match(), output, answers[-1]) == 1.0


@given(st.integers(10**7, 10**12), st.floats(-0.9, 0.9))
def test_numeric_match_tolerance_is_relative_to_a_large_target(target, share):
    """numeric_match(tolerance=t) takes an answer within t times the target's size (for targets above 1) as right."""
    got = target + share * 1e-6 * target
    assert _scored(numeric_match(), f"Answer: {got:.4f}", str(target)) == 1.0
    assert _scored(numeric_match(), f"Answer: {target * (1 + 3e-6):.4f}", str(target)) == 0.0


@given(st.sampled_from(["", " ", "None", "0"]) | st.text(max_size=5))
def test_no_output_scores_zero_under_every_built_in_loss(target):
    """A trace whose output is None scores 0 under exact, normalized and numeric match, feedback saying there was no
    output, whatever the target (an empty one included)."""
    from semgrad.core.scoring import exact_match

    trace = Trace(0, "g", "out", {"out": NodeRun("out", "llm", value=None)})
    for loss in (exact_match(), normalized_match(), numeric_match()):
        score = run_sync(loss(Example({}, target), trace), lambda request: "")
        assert (score.value, score.answer) == (0.0, None) and "no output" in score.feedback


@given(_WORD, st.sampled_from([" ", "  ", "\n", "\t "]))
def test_exact_match_strips_the_target(answer, pad):
    """exact_match scores right an answer equal to the target once the target's surrounding whitespace is stripped."""
    from semgrad.core.scoring import exact_match

    assert _scored(exact_match(), f"Answer: {answer}", f"{pad}{answer}{pad}") == 1.0
