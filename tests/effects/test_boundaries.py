"""Bad arguments at the library's boundary raise at once, naming the argument, instead of a budget or a rate limit
quietly switched off (NaN compares false with everything), a wrong count, or calls that all fail as if the model
were weak."""

from __future__ import annotations

import math

import pytest

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.core import GraphBuilder, GraphError, Score, as_examples, forward, optim
from semgrad.effects import Budget, RetryPolicy, Runner, budgeted, fit_sync, limited, run_sync


@pytest.mark.parametrize("value", [math.nan, 1.5, True, -1])
def test_a_budget_limit_must_be_a_whole_number(value):
    """budgeted() and Budget refuse NaN, fractions, booleans and negatives for their limits."""
    with pytest.raises(ValueError, match="max_calls must be >= 0 and a whole number"):
        budgeted(HashLLM(), max_calls=value)
    with pytest.raises(ValueError, match="max_tokens must be >= 0 and a whole number"):
        Budget(max_tokens=value)


@pytest.mark.parametrize("name", ["requests_per_minute", "tokens_per_minute"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0])
def test_a_rate_limit_must_be_a_positive_number(name, value):
    """limited() refuses a rate that is NaN, infinite, zero or negative (NaN disabled the limit)."""
    with pytest.raises(ValueError, match=f"{name} must be positive and finite"):
        limited(HashLLM(), **{name: value})


@pytest.mark.parametrize("value", [0.5, 0.999])
def test_a_token_rate_below_one_token_a_minute_is_refused(value):
    """limited(tokens_per_minute=0.5) is refused: each call's estimate is capped at a minute's whole tokens, 0 here,
    so it limited nothing; requests_per_minute=0.5 (one call every two minutes) stays allowed."""
    with pytest.raises(ValueError, match="tokens_per_minute must be at least 1"):
        limited(HashLLM(), tokens_per_minute=value)
    limited(HashLLM(), requests_per_minute=value)


def test_a_retry_delay_must_not_be_nan():
    """RetryPolicy refuses a NaN delay, which failed every retry later."""
    with pytest.raises(ValueError, match="max_delay must be >= 0"):
        RetryPolicy(max_delay=math.nan)


def _graph():
    b = GraphBuilder()
    q = b.input("question")
    b.llm("answer", inputs=[q], instruction="Solve.")
    return b.build(output="answer")


@pytest.mark.parametrize("iterations", [2.5, math.nan, -1])
def test_fit_s_iterations_must_be_a_whole_number(iterations):
    """fit refuses fractional or NaN iterations (2.5 ran 3, NaN ran none)."""
    graph, params = _graph()
    train = [{"inputs": {"question": "1+1?"}, "target": "2"}]
    with pytest.raises(ValueError, match="iterations must be >= 0 and a whole number"):
        fit_sync(graph, params, optim.neighbor_sgd(k=1), train=train, llm=HashLLM(), iterations=iterations)


@pytest.mark.parametrize("llm", [None, "gpt-4o-mini", 42])
def test_something_that_is_not_an_llm_is_refused(llm):
    """run_sync, Runner and fit refuse a non-callable LLM instead of failing every call."""
    graph, params = _graph()
    with pytest.raises(TypeError, match="needs an LLM"):
        run_sync(forward(graph, params, {"question": "1+1?"}), llm)
    with pytest.raises(TypeError, match="needs an LLM"):
        Runner(llm)
    train = [{"inputs": {"question": "1+1?"}, "target": "2"}]
    with pytest.raises(TypeError, match="needs an LLM"):
        fit_sync(graph, params, optim.neighbor_sgd(k=1), train=train, llm=llm, iterations=1)


def test_a_refused_llm_node_leaves_the_builder_as_it_was():
    """An llm node whose instruction name is taken is refused before it is added: build() does not then run a
    node that was refused."""
    b = GraphBuilder()
    q = b.input("question")
    b.param("x.instruction", "free text")
    with pytest.raises(GraphError, match="already taken"):
        b.llm("x", inputs=[q], instruction="Solve.")
    b.llm("answer", inputs=[q], instruction="Solve.")
    graph, _ = b.build(output="answer")
    assert "x" not in graph.nodes


@pytest.mark.parametrize("value", [math.nan, math.inf, "1"])
def test_a_score_must_be_a_finite_number(value):
    """A Score's value is a finite number: a NaN score made the gate refuse every candidate without a word, and
    left a checkpoint the run could not resume."""
    from semgrad.core import Score

    with pytest.raises(ValueError, match="finite number"):
        Score(value, "feedback")


@pytest.mark.parametrize(("feedback", "rule"), [(None, None), (5, None), ("ok", "bogus")])
def test_backward_refuses_feedback_or_a_rule_of_the_wrong_kind(feedback, rule):
    """backward with the LLM rules needs text feedback (None was sent to the model as 'None', a paid call), and a
    rule that is not a backward rule is refused at once, not inside the run."""
    from semgrad.core import backward

    graph, params = _graph()
    trace = run_sync(forward(graph, params, {"question": "1+1?"}), HashLLM())
    with pytest.raises(TypeError, match="feedback must be text|rule must be a backward rule"):
        backward(graph, params, trace, feedback, rule)


def test_items_without_a_target_are_refused_by_the_default_loss():
    """fit with the default loss refuses an item with no target (its target was None, and an output 'None'
    scored as right); with a loss of one's own such items are allowed."""
    graph, params = _graph()
    train = [{"inputs": {"question": "1+1?"}}]
    with pytest.raises(ValueError, match="has no target"):
        fit_sync(graph, params, optim.neighbor_sgd(k=1), train=train, llm=HashLLM(), iterations=1)
    from semgrad.core import Score
    from semgrad.core.programs import pure

    result = fit_sync(
        graph, params, optim.neighbor_sgd(k=1), train=train, llm=HashLLM(), iterations=1,
        loss=lambda example, trace: pure(Score(1.0, "fine")),
    )  # fmt: skip
    assert [record.train_score for record in result.history] == [1.0]


@pytest.mark.parametrize("optimizer", [optim.neighbor_sgd, None, "neighbor_sgd"])
def test_fit_refuses_an_optimizer_that_is_not_a_transform_before_any_call(optimizer):
    """fit refuses something that is not a Transform (the factory optim.neighbor_sgd passed uncalled, say) with a
    TypeError naming what it needs, before any call (it failed with an AttributeError on 'init')."""
    graph, params = _graph()
    llm = RecordingLLM(HashLLM())
    train = [{"inputs": {"question": "1+1?"}, "target": "2"}]
    with pytest.raises(TypeError, match=r"fit needs an optimizer, a Transform such as optim.neighbor_sgd\(k=2\)"):
        fit_sync(graph, params, optimizer, train=train, llm=llm, iterations=1)
    assert not llm.requests


def test_a_loss_that_returns_a_score_instead_of_a_program_is_refused_when_first_called():
    """A loss returning a bare Score (not a Program[Score] such as pure(Score(...))) fails at its first call, in fit
    and in evaluate, with a TypeError saying what it must return (it failed in the runner with an AttributeError on
    'done'); a loss that is not callable is refused before any call."""
    graph, params = _graph()
    llm = RecordingLLM(HashLLM())
    train = [{"inputs": {"question": "1+1?"}, "target": "2"}]
    wrong = lambda example, trace: Score(0.0, "wrong")  # noqa: E731
    message = r"the loss must return a Program\[Score\], e.g. pure\(Score\(...\)\), got Score"
    with pytest.raises(TypeError, match=message):
        fit_sync(graph, params, optim.neighbor_sgd(k=1), train=train, llm=llm, iterations=1, loss=wrong)
    assert {r.purpose for r in llm.requests} == {"forward"}  # the first forward only: no optimizer call
    with pytest.raises(TypeError, match=message):
        run_sync(optim.evaluate(graph, params, as_examples(train), wrong), HashLLM())
    with pytest.raises(TypeError, match=r"loss must be a callable loss\(example, trace\) -> Program\[Score\]"):
        fit_sync(graph, params, optim.neighbor_sgd(k=1), train=train, llm=llm, iterations=1, loss=Score(0.0, "x"))
