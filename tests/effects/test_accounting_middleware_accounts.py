"""accounted and budgeted count through an Accounts: the report and the limits are read from it, hits kept apart."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.core import LLMError, LLMFailure, LLMRequest, LLMResponse, Message
from semgrad.effects import accounted, budgeted, mark_answered
from semgrad.effects._accounting import answered_by

ENGINES = ("forward", "backward", "optimizer")
MODELS = ("m-a", "m-b", "m-a-2025-01-31", "unpriced")
PRICES = {"m-a": (1.0, 2.0), "m-b": (0.5, 4.0)}

#: One step: (engine, what the fake answers): a reply (model, tokens in, tokens out), a hit, or a failure.
steps = st.lists(
    st.tuples(
        st.sampled_from(ENGINES),
        st.one_of(
            st.tuples(st.sampled_from(MODELS), st.integers(0, 5_000), st.integers(0, 5_000)),
            st.sampled_from(["cache", "memo", "error:server", "error:truncated"]),
        ),
    ),
    max_size=30,
)


class _Script:
    """A pure fake LLM answering each request with the next scripted outcome."""

    def __init__(self, script) -> None:
        self.script = list(script)
        self.identity = {"model": "configured"}

    def __call__(self, request: LLMRequest) -> LLMResponse:
        what = self.script.pop(0)
        if what == "cache":
            return mark_answered(LLMResponse("stored", {"input_tokens": 9, "output_tokens": 9}, "m-a"), "cache")
        if what == "memo":
            return LLMResponse("memo", {"input_tokens": 9, "output_tokens": 9}, "m-b", memo_hit=True)
        if isinstance(what, str):
            raise LLMFailure(LLMError(what.removeprefix("error:"), "scripted"))
        model, tokens_in, tokens_out = what
        return LLMResponse("ok", {"input_tokens": tokens_in, "output_tokens": tokens_out}, model)


def _drive(llm, events) -> None:
    async def main() -> None:
        for engine, _ in events:
            try:
                await llm(LLMRequest((Message("user", "hi"),), engine=engine))
            except LLMFailure:
                pass

    anyio.run(main)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_accounted_report_agrees_with_its_accounts_and_the_script(events):
    """For any replies, failures and hits, report() is the billed calls of .accounts per (engine, model), and both
    match the script: hits are counted apart and make no row, failures are calls under the configured model."""
    llm = accounted(_Script(w for _, w in events), prices=PRICES)
    _drive(llm, events)
    report, accounts = llm.report(), llm.accounts
    total = accounts.total()
    assert (report.calls, report.failures) == (total.calls, total.errors)
    assert (report.input_tokens, report.output_tokens) == (total.input_tokens, total.output_tokens)
    whole = accounts.cost(PRICES)  # None when a model that used tokens is unpriced; the report prices the rest
    assert (whole is None) == bool(report.unpriced) and (whole is None or report.cost_usd == pytest.approx(whole))
    replies = [(e, w) for e, w in events if isinstance(w, tuple)]
    failures = [(e, w) for e, w in events if isinstance(w, str) and w.startswith("error:")]
    assert report.calls == len(replies) + len(failures) and report.failures == len(failures)
    assert report.input_tokens == sum(w[1] for _, w in replies)
    assert (total.cache_hits, total.memo_hits) == (
        sum(w == "cache" for _, w in events),
        sum(w == "memo" for _, w in events),
    )
    expected: dict[tuple[str, str], list[int]] = {}
    for engine, what in replies + failures:
        row = expected.setdefault((engine, what[0] if isinstance(what, tuple) else "configured"), [0, 0, 0, 0])
        row[0] += 1
        row[1] += isinstance(what, str)
        row[2] += what[1] if isinstance(what, tuple) else 0
        row[3] += what[2] if isinstance(what, tuple) else 0
    assert {k: [r.calls, r.failures, r.input_tokens, r.output_tokens] for k, r in report.rows.items()} == expected
    priced = {k: r for k, r in expected.items() if k[1] != "unpriced"}
    assert report.unpriced == (("unpriced",) if any(sum(r[2:]) for k, r in expected.items() if k not in priced) else ())
    cost = sum(
        (r[2] * PRICES[k[1][:3]][0] + r[3] * PRICES[k[1][:3]][1]) / 1e6
        for k, r in priced.items()
        if k[1] != "configured"
    )
    assert report.cost_usd == pytest.approx(cost)


@settings(max_examples=60, deadline=None)
@given(steps, st.integers(0, 40))
def test_budgeted_limits_read_its_accounts(events, max_calls):
    """budgeted lets exactly min(max_calls, requests) through, and .calls and .tokens are its Accounts' totals:
    billed calls plus hits, and the tokens charged (reported usage; a hit charges none)."""
    llm = budgeted(_Script(w for _, w in events), max_calls=max_calls)
    _drive(llm, events)
    let_through = events[:max_calls]
    total = llm.accounts.total()
    assert llm.calls == total.calls + total.hits == len(let_through)
    assert llm.refused == len(events) - len(let_through)
    assert llm.tokens == total.input_tokens + total.output_tokens
    assert llm.tokens == sum(w[1] + w[2] for _, w in let_through if isinstance(w, tuple))
    assert total.errors == sum(isinstance(w, str) and w.startswith("error:") for _, w in let_through)


def test_a_hit_mark_travels_on_the_reply_across_calls_and_tasks():
    """A reply marked by a cache stays a hit after other calls and in another task, equals its unmarked original,
    and a fresh reply is never taken for a hit."""
    stored = LLMResponse("4", {"input_tokens": 3}, "m")
    hit = mark_answered(stored, "cache")
    llm = accounted(_Script([("m", 1, 1)]))
    _drive(llm, [("forward", None)])  # another call in between: the former task-local mark was cleared by it
    seen: list[str | None] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: _append(seen, hit))

    anyio.run(main)
    assert seen == ["cache"] and answered_by(hit) == "cache" and answered_by(stored) is None and hit == stored
    assert answered_by(mark_answered(hit, "memo")) == "memo"  # the outermost layer that answered is named


async def _append(seen: list, reply) -> None:
    seen.append(answered_by(reply))
