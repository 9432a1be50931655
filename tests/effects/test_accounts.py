"""Accounts: one model of calls, tokens, cost and errors; totals are the sums of the lines, hits are never calls."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.core import LLMError, LLMFailure, LLMRequest, LLMResponse, Message
from semgrad.effects import Accounts, Amount, Line, accounted, cached, mark_answered, memoized

ENGINES = ("forward", "backward", "optimizer")
PURPOSES = ("forward", "evaluate", "backward", "rewrite")

#: One outcome: (engine, purpose, what happened) with what happened a reply's tokens, "cache", "memo" or an error kind.
outcomes = st.lists(
    st.tuples(
        st.sampled_from(ENGINES),
        st.sampled_from(PURPOSES),
        st.one_of(
            st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)),
            st.sampled_from(["cache", "memo", "error:server", "error:timeout"]),
        ),
    ),
    max_size=40,
)


def _request(engine: str, purpose: str, text: str = "hi") -> LLMRequest:
    return LLMRequest((Message("user", text),), engine=engine, purpose=purpose)


def _accounts(events) -> Accounts:
    accounts = Accounts()
    for engine, purpose, what in events:
        request = _request(engine, purpose)
        if isinstance(what, tuple):
            reply = LLMResponse("ok", {"input_tokens": what[0], "output_tokens": what[1]}, f"m-{engine}")
            accounts = accounts.record(request, reply)
        elif what in ("cache", "memo"):
            stored = LLMResponse("ok", {"input_tokens": 99, "output_tokens": 99}, "m")
            accounts = accounts.record(request, mark_answered(stored, what))
        else:
            accounts = accounts.record(request, error=LLMError(what.split(":")[1], "failed"), model="m")
    return accounts


@given(outcomes)
def test_totals_are_the_sums_of_the_lines_by_every_field(events):
    """The total, and the sum of each grouping (engine, purpose, model, error), equal the sum of the lines."""
    accounts = _accounts(events)
    total = accounts.total()
    summed = Amount()
    for amount in accounts.lines.values():
        summed = summed + amount
    assert total == summed
    for field in ("engine", "purpose", "model", "error"):
        grouped = Amount()
        for amount in accounts.by(field).values():  # type: ignore[arg-type]
            grouped = grouped + amount
        assert grouped == total, field
    assert sum(accounts.errors_by_kind().values()) == total.errors


@given(outcomes)
def test_hits_are_never_counted_as_calls_nor_their_tokens(events):
    """Cache and memo hits land in cache_hits and memo_hits; calls are the replies and failures only, and the
    tokens are the billed replies' only."""
    total = _accounts(events).total()
    replies = [w for _, _, w in events if isinstance(w, tuple)]
    failures = [w for _, _, w in events if isinstance(w, str) and w.startswith("error:")]
    assert total.calls == len(replies) + len(failures)
    assert total.errors == len(failures)
    assert total.cache_hits == sum(w == "cache" for _, _, w in events)
    assert total.memo_hits == sum(w == "memo" for _, _, w in events)
    assert total.input_tokens == sum(r[0] for r in replies)
    assert total.output_tokens == sum(r[1] for r in replies)


@given(outcomes, outcomes)
def test_accounts_add_up_and_survive_json(first, second):
    """Two accounts added equal the accounts of both outcome lists; to_json / from_json gives the same accounts."""
    a, b = _accounts(first), _accounts(second)
    assert (a + b).total() == _accounts(first + second).total()
    assert Accounts.from_json((a + b).to_json()) == a + b


@pytest.mark.parametrize(
    "bad",
    [
        {},
        [1],
        [{"engine": "f"}],
        [{"engine": "f", "purpose": "p", "model": "m", "error": "", "calls": -1, "errors": 0, "input_tokens": 0,
          "output_tokens": 0, "cache_hits": 0, "memo_hits": 0}],
        [{"engine": 1, "purpose": "p", "model": "m", "error": "", "calls": 1, "errors": 0, "input_tokens": 0,
          "output_tokens": 0, "cache_hits": 0, "memo_hits": 0}],
        [{"engine": "f", "purpose": "p", "model": "m", "error": "", "calls": True, "errors": 0, "input_tokens": 0,
          "output_tokens": 0, "cache_hits": 0, "memo_hits": 0}],
    ],
)  # fmt: skip
def test_accounts_from_json_refuses_what_is_not_a_line(bad):
    """A list of anything but exact lines of strings and non-negative whole counts is refused, naming the source."""
    with pytest.raises(ValueError, match="ledger.json"):
        Accounts.from_json(bad, source="ledger.json")


def test_cost_is_priced_by_the_model_that_answered():
    """Each model's tokens at its own price; a model without a price makes the cost unknown, never a guess."""
    accounts = Accounts().add(Line("forward", "forward", "cheap"), Amount(calls=1, input_tokens=1_000_000))
    accounts = accounts.add(Line("optimizer", "rewrite", "dear-2024-01-01"), Amount(calls=1, output_tokens=1_000_000))
    assert accounts.cost({"cheap": (0.5, 1.0), "dear": (3.0, 10.0)}) == pytest.approx(10.5)
    assert accounts.cost({"cheap": (0.5, 1.0)}) is None
    assert accounts.cost(None) is None


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=12))
def test_accounted_above_a_cache_and_a_memo_counts_hits_apart(texts):
    """accounted over memoized over cached: calls are the distinct requests (what reached the LLM below), every
    repeat is a hit, and calls + hits equal the requests made."""
    reached: list[str] = []

    def llm(request: LLMRequest) -> LLMResponse:
        reached.append(request.messages[0].content)
        return LLMResponse("ok", {"input_tokens": 3, "output_tokens": 1}, "m")

    outer = accounted(memoized(cached(llm), every_temperature=True))

    async def main() -> None:
        for text in texts:
            await outer(_request("forward", "forward", text))

    anyio.run(main)
    total = outer.accounts.total()
    assert total.calls == len(reached) == len(set(texts))
    assert total.hits == len(texts) - len(set(texts)) == total.memo_hits
    assert total.input_tokens == 3 * len(reached)
    assert outer.report().calls == total.calls


def test_a_cache_hit_below_accounted_is_a_cache_hit():
    """A request the cache answers (the memo gone) is a cache hit, not a call, and costs no tokens."""

    def llm(request: LLMRequest) -> LLMResponse:
        return LLMResponse("ok", {"input_tokens": 3, "output_tokens": 1}, "m")

    outer = accounted(cached(llm))
    request = _request("forward", "forward")
    anyio.run(outer, request)
    anyio.run(outer, request)
    total = outer.accounts.total()
    assert (total.calls, total.cache_hits, total.input_tokens) == (1, 1, 3)


def test_a_failed_call_is_a_call_and_an_error_of_its_kind():
    """A call that fails is counted once as a call and once under its error kind."""

    def llm(request: LLMRequest) -> LLMResponse:
        raise LLMFailure(LLMError("rate_limit", "HTTP 429", retryable=True))

    outer = accounted(llm)
    with pytest.raises(LLMFailure):
        anyio.run(outer, _request("forward", "forward"))
    assert outer.accounts.total().calls == 1
    assert outer.accounts.errors_by_kind() == {"rate_limit": 1}
