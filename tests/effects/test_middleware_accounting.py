"""accounted and budgeted: exact counts per engine and model, costs, hard limits."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import LLMError, LLMFailure, LLMRequest, LLMResponse, Message
from semgrad.effects import accounted, budgeted


def ask(engine="forward", text="hi"):
    return LLMRequest((Message("user", text),), engine=engine)


def reply_by_engine(request):
    model = {"forward": "small-2024", "optimizer": "large"}.get(request.engine, "other")
    return LLMResponse("ok", {"input_tokens": 100, "output_tokens": 10}, model)


calls = st.lists(st.sampled_from(["forward", "optimizer", "backward"]), max_size=15)


@given(calls)
def test_totals_are_the_sums_of_the_rows_and_match_the_calls(engines):
    """calls and tokens per (engine, model) add up to the totals, which match what was called."""
    llm = accounted(reply_by_engine)

    async def main():
        for engine in engines:
            await llm(ask(engine))

    anyio.run(main)
    report = llm.report()
    assert report.calls == len(engines) == sum(r.calls for r in report.rows.values())
    assert report.input_tokens == 100 * len(engines) and report.output_tokens == 10 * len(engines)
    for (engine, _), row in report.rows.items():
        assert row.calls == engines.count(engine)


async def test_costs_use_exact_or_longest_prefix_prices_and_list_unpriced_models():
    """Cost = tokens x price per million; 'small-2024' is priced by 'small'; 'other' is listed unpriced."""
    llm = accounted(reply_by_engine, prices={"small": (1.0, 4.0), "sm": (99.0, 99.0), "large": (10.0, 30.0)})
    for engine in ("forward", "optimizer", "backward"):
        await llm(ask(engine))
    report = llm.report()
    assert report.rows[("forward", "small-2024")].cost_usd == pytest.approx((100 * 1 + 10 * 4) / 1e6)
    assert report.rows[("optimizer", "large")].cost_usd == pytest.approx((100 * 10 + 10 * 30) / 1e6)
    assert report.rows[("backward", "other")].cost_usd is None
    assert report.cost_usd == pytest.approx((140 + 1300) / 1e6)
    assert report.unpriced == ("other",)


async def test_failures_are_counted_under_the_configured_model():
    """A failed call counts as a call and a failure, under the model the backend's identity names."""

    class Backend:
        identity = {"provider": "p", "model": "m-default", "models": {"optimizer": "m-big"}}

        def __call__(self, request):
            raise LLMFailure(LLMError("server", "boom", retryable=True))

    llm = accounted(Backend())
    with pytest.raises(LLMFailure):
        await llm(ask("optimizer"))
    report = llm.report()
    assert (report.calls, report.failures) == (1, 1)
    assert ("optimizer", "m-big") in report.rows and report.cost_usd is None


async def test_a_call_a_deadline_cancels_is_counted_as_a_failed_call():
    """A call cancelled in flight (the CLI's per-attempt deadline above it) counts as a call and a failure."""

    async def slow(request):
        await anyio.sleep_forever()

    llm = accounted(slow)
    with anyio.move_on_after(0.01):
        await llm(ask())
    report = llm.report()
    assert (report.calls, report.failures) == (1, 1)


def test_a_bad_price_table_is_refused():
    """Prices must be (input, output) pairs of non-negative numbers."""
    with pytest.raises(ValueError, match="usd_per_1M_input"):
        accounted(reply_by_engine, prices={"m": 1.0})


async def test_a_call_budget_refuses_the_call_after_the_last():
    """With max_calls=2, the third call fails with the non-retryable kind 'budget' and never reaches the LLM."""
    seen = []
    llm = budgeted(lambda r: seen.append(r) or "ok", max_calls=2)
    await llm(ask())
    await llm(ask())
    with pytest.raises(LLMFailure) as caught:
        await llm(ask())
    assert (caught.value.error.kind, caught.value.error.retryable) == ("budget", False)
    assert "max_calls=2" in caught.value.error.message
    assert len(seen) == 2 and llm.refused == 1


async def test_concurrent_calls_never_overshoot_the_call_budget():
    """Twenty concurrent calls under max_calls=5 reach the LLM exactly five times."""
    seen = []

    async def slow(request):
        seen.append(request)
        await anyio.sleep(0.01)
        return "ok"

    llm = budgeted(slow, max_calls=5)

    async def one():
        try:
            await llm(ask())
        except LLMFailure:
            pass

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(one)
    assert len(seen) == 5 and llm.refused == 15


async def test_a_token_budget_stops_once_exceeded():
    """With max_tokens=150 and 110 tokens a call, the third call is refused."""
    llm = budgeted(reply_by_engine, max_tokens=150)
    await llm(ask())
    await llm(ask())
    with pytest.raises(LLMFailure, match="max_tokens=150"):
        await llm(ask())
    assert llm.tokens == 220


@given(st.integers(1, 400), st.integers(0, 2000), st.booleans())
def test_a_token_budget_charges_the_estimate_of_a_reply_without_usage(chars, max_tokens, as_text):
    """Replies that report no usage (a string, or an LLMResponse with none) are charged their estimate,
    so a token budget of N answers exactly N // estimate calls of one size, then refuses."""
    request = ask(text="x" * chars)
    estimate = -(-chars // 4)
    llm = budgeted(lambda r: "ok" if as_text else LLMResponse("ok"), max_tokens=max_tokens)

    async def spend():
        for answered in range(max_tokens + 1):
            try:
                await llm(request)
            except LLMFailure:
                return answered
        return None

    assert anyio.run(spend) == max_tokens // estimate
    assert llm.tokens == (max_tokens // estimate) * estimate and llm.refused == 1


async def test_a_reply_reporting_usage_is_charged_its_usage_not_its_estimate():
    """A reply that reports usage (even zero tokens of one kind) is charged exactly what it reports."""
    llm = budgeted(lambda r: LLMResponse("ok", {"output_tokens": 3}), max_tokens=1000)
    await llm(ask(text="x" * 400))
    assert llm.tokens == 3


async def test_a_paid_reply_that_failed_keeps_its_estimate_and_a_refused_request_costs_nothing():
    """A failed call is charged its estimate (a reply cut at its cap was paid), unless the model never ran."""

    def fail(request):
        kind = request.messages[0].content.split()[0]
        raise LLMFailure(LLMError(kind, "no text", retryable=kind == "rate_limit"))

    llm = budgeted(fail, max_tokens=250)
    for _ in range(3):
        with pytest.raises(LLMFailure, match="rate_limit"):
            await llm(ask(text="rate_limit " + "x" * 389))  # ~100 tokens each, refused by the provider
    assert llm.tokens == 0
    for _ in range(2):
        with pytest.raises(LLMFailure, match="truncated"):
            await llm(ask(text="truncated " + "x" * 390))  # ~100 tokens each, paid for
    assert llm.tokens == 200
    with pytest.raises(LLMFailure, match="budget exhausted"):
        await llm(ask(text="truncated " + "x" * 390))


async def test_a_cancelled_call_keeps_its_estimate():
    """A call cancelled in flight (a timeout from outside) may have been paid for: it is charged its estimate."""

    async def slow(request):
        await anyio.sleep_forever()

    llm = budgeted(slow, max_tokens=1000)
    with anyio.move_on_after(0.01):
        await llm(ask(text="x" * 400))
    assert llm.tokens == 100 and llm.reserved == 0


def test_wrappers_pass_identity_through():
    """accounted(llm) and budgeted(llm) have llm's identity."""
    backend = type("Backend", (), {"identity": "b-3", "__call__": lambda self, r: "ok"})()
    assert accounted(backend).identity == budgeted(backend, 1).identity == "b-3"
