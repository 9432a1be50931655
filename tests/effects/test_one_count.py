"""The runner, its statistics and fit's budget guard read one count: `Accounts` lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.core import LLMError, LLMFailure, LLMRequest, LLMResponse, Message
from semgrad.core.programs import ask, gather
from semgrad.effects import Accounts, Amount, Budget, Line, Runner, RunStatistics
from semgrad.effects._fit_budget import BudgetGuard

OUTCOMES = st.lists(
    st.tuples(
        st.sampled_from(["forward", "backward"]),
        st.sampled_from(["forward", "backward", "rewrite"]),
        st.one_of(
            st.none(), st.tuples(st.integers(0, 50), st.integers(0, 50)), st.sampled_from(["server", "parse", "bug"])
        ),
    ),
    max_size=12,
)


def _llm(outcomes):
    table = {f"q{i}": outcome for i, outcome in enumerate(outcomes)}

    def llm(request):
        outcome = table[request.messages[0].content]
        if outcome == "bug":  # a plain exception: the runner's kind is "exception"
            raise ValueError("a bug in the LLM")
        if isinstance(outcome, str):
            raise LLMFailure(LLMError(outcome, "no"))
        usage = {} if outcome is None else {"input_tokens": outcome[0], "output_tokens": outcome[1]}
        return LLMResponse("ok", usage, "m")

    return llm


def _program(requests):
    return gather(*(ask(r) for r in requests))


@settings(max_examples=30, deadline=None)
@given(OUTCOMES)
def test_the_guard_and_the_runner_keep_the_same_accounts(outcomes):
    """Under no limit, fit's budget guard and the runner over it hold equal accounts of the same calls (replies'
    tokens by engine, purpose and model; failed calls by kind, a plain exception's too), and RunStatistics is
    read from the runner's."""
    requests = [
        LLMRequest((Message("user", f"q{i}"),), engine=engine, purpose=purpose)
        for i, (engine, purpose, _) in enumerate(outcomes)
    ]
    guard = BudgetGuard(_llm([o for *_, o in outcomes]), Budget())
    runner = Runner(guard)
    runner.run_sync(_program(requests))
    expected = Accounts()
    for engine, purpose, outcome in outcomes:
        if isinstance(outcome, str):
            kind = "exception" if outcome == "bug" else outcome
            expected = expected.add(Line(engine, purpose, "", kind), Amount(calls=1, errors=1))
        else:
            used = outcome or (0, 0)
            expected = expected.add(
                Line(engine, purpose, "m"), Amount(calls=1, input_tokens=used[0], output_tokens=used[1])
            )
    assert runner.accounts() == guard.accounts == expected
    stats = runner.statistics()
    assert stats == RunStatistics.from_accounts(expected, stats.peak_in_flight)
    assert stats.calls == guard.calls == len(outcomes)
    assert (
        stats.input_tokens + stats.output_tokens
        == guard.tokens
        == expected.total().input_tokens + expected.total().output_tokens
    )
