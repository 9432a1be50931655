"""Cached prompt tokens in the accounting (issue #36 point 1): what a reply reports is booked apart, priced at
the cache rates, summed by every counter, and older accounts and ledgers without it still load."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import LLMRequest, LLMResponse, Message
from semgrad.effects import Accounts, Amount, Line
from semgrad.effects._accounting import billed, token_cost
from semgrad.experiments import RunConfig
from semgrad.experiments._prices import run_cost
from semgrad.experiments._run_stack import add_counters, counters_of

REQUEST = LLMRequest((Message("user", "hi"),), purpose="forward")
counts = st.integers(min_value=0, max_value=10**7)
rates = st.floats(min_value=0, max_value=100, allow_nan=False)


@given(counts, counts, counts, counts)
def test_billed_keeps_the_cached_tokens_within_the_input_tokens(tokens_in, tokens_out, cached, written):
    """Whatever a reply reports, the cached and cache-write tokens booked are disjoint parts of its input tokens."""
    usage = {"input_tokens": tokens_in, "output_tokens": tokens_out}
    usage |= {"cached_input_tokens": cached, "cache_write_tokens": written}
    amount = billed(usage)
    assert amount.calls == 1 and (amount.input_tokens, amount.output_tokens) == (tokens_in, tokens_out)
    assert amount.cached_input_tokens + amount.cache_write_tokens <= amount.input_tokens
    assert amount.cached_input_tokens == min(cached, tokens_in)


@given(counts, counts, counts, rates, rates, rates)
def test_cached_tokens_cost_the_cached_rate_and_a_two_rate_price_bills_them_as_input(
    tokens_in, tokens_out, cached, rate_in, rate_out, rate_cached
):
    """With a cached rate at most the input rate, cached tokens never raise the cost; a price without cache
    rates bills them as plain input."""
    cached = min(cached, tokens_in)
    plain = token_cost((rate_in, rate_out), tokens_in, tokens_out)
    assert token_cost((rate_in, rate_out), tokens_in, tokens_out, cached, 0) == pytest.approx(plain)
    cheaper = token_cost((rate_in, rate_out, min(rate_cached, rate_in), rate_in), tokens_in, tokens_out, cached)
    assert cheaper <= plain + 1e-9


def test_accounts_record_the_cached_tokens_and_round_trip_through_json():
    """A reply's cached and cache-write tokens land on its line, and to_json / from_json keep them."""
    usage = {"input_tokens": 5000, "output_tokens": 10, "cached_input_tokens": 4000, "cache_write_tokens": 500}
    accounts = Accounts().record(REQUEST, LLMResponse("ok", usage, "claude-haiku-4-5"))
    total = accounts.total()
    assert (total.cached_input_tokens, total.cache_write_tokens) == (4000, 500)
    assert Accounts.from_json(accounts.to_json()) == accounts
    # 500 plain at 1.0, 4000 read at 0.1, 500 written at 1.25, 10 out at 5.0 (USD per million)
    assert accounts.cost({"claude-haiku-4-5": (1.0, 5.0, 0.1, 1.25)}) == pytest.approx(
        (500 * 1.0 + 4000 * 0.1 + 500 * 1.25 + 10 * 5.0) / 1e6
    )


def test_accounts_written_before_cached_tokens_were_counted_still_load():
    """A ledger's accounts line without the cached-token fields loads, with them 0; one with a stray field does not."""
    old = [{"engine": "forward", "purpose": "forward", "model": "m", "error": "", "calls": 1, "errors": 0,
            "input_tokens": 5, "output_tokens": 1, "cache_hits": 0, "memo_hits": 0}]  # fmt: skip
    loaded = Accounts.from_json(old)
    assert loaded.total() == Amount(calls=1, input_tokens=5, output_tokens=1)
    with pytest.raises(ValueError):
        Accounts.from_json([{**old[0], "surprise": 1}])


def test_counters_sum_the_cached_tokens_and_the_run_cost_prices_them():
    """counters_of keeps each model's [read, written] prompt-cache tokens, add_counters sums them, and run_cost
    bills them at the model's cache rates."""
    line = Line("forward", "forward", "claude-haiku-4-5")
    amount = Amount(calls=1, input_tokens=2_000_000, cached_input_tokens=1_000_000, cache_write_tokens=500_000)
    counters = counters_of(Accounts().add(line, amount))
    assert counters["prompt_cache_by_model"] == {"claude-haiku-4-5": [1_000_000, 500_000]}
    twice = add_counters(counters, counters)
    assert twice["prompt_cache_by_model"] == {"claude-haiku-4-5": [2_000_000, 1_000_000]}
    prices = {"claude-haiku-4-5": (1.0, 5.0, 0.1, 1.25)}
    cost = run_cost(RunConfig("gsm8k", backend="anthropic"), counters, prices)
    assert cost == pytest.approx(0.5 * 1.0 + 1.0 * 0.1 + 0.5 * 1.25)


def test_a_plan_counts_a_repeated_long_system_text_as_cached_and_prices_it_lower():
    """The dry run's stand-in counts a system text an earlier request sent, and long enough to cache, as read
    from the cache (Anthropic: its first sending as a write); off, or too short, nothing is cached."""
    from semgrad.experiments._plan import _Counter

    long = "Follow the instruction with care. " * 600  # ~5,000 tokens: above every provider's minimum
    requests = [LLMRequest((Message("system", long), Message("user", f"item {i}"))) for i in range(3)]
    counter = _Counter()
    counter.caching = {"forward": (4096, True)}
    for request in requests:
        counter(request)
    tokens = len(long) // 4
    assert counter.cached["forward"] == (2 * tokens, tokens)
    short = _Counter()
    short.caching = {"forward": (10**6, True)}
    off = _Counter()
    for stand_in in (short, off):
        for request in requests:
            stand_in(request)
    assert short.cached == off.cached == {}
