"""Prompt caching against the local HTTP server (issue #36 point 1): the Anthropic codec marks the system text
with ``cache_control`` (``prompt_cache``, on by default), both codecs read the cached and cache-write tokens
the providers report into the reply's usage, and the accounting prices them at the table's cache rates."""

from __future__ import annotations

import pytest

from semgrad.backends import anthropic, openai_compatible
from semgrad.core import LLMRequest, Message
from semgrad.effects import accounted
from semgrad.experiments._prices import bundled_prices

#: A system text long enough for the local server to cache (its `cache_min_chars`).
LONG = "Follow the instruction with care. " * 200


def _requests(n: int) -> list[LLMRequest]:
    return [LLMRequest((Message("system", LONG), Message("user", f"item {i}")), sample=i) for i in range(n)]


def _anthropic(provider, **config):
    return anthropic("claude-haiku-4-5", base_url=provider.base_url, api_key="sk-ant-test", timeout=5.0, **config)


async def test_anthropic_marks_the_system_text_and_reads_the_cache_write_then_the_reads(provider):
    """The first request writes the marked system text to the cache, the next ones read it; input_tokens counts
    every prompt token (Anthropic's own counts neither), and the stop reason is the reply's finish_reason."""
    llm = _anthropic(provider)
    replies = [await llm(r) for r in _requests(3)]
    body = provider.requests[0][2]
    assert body["system"] == [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]
    prefix = len(LONG) // 4
    assert replies[0].usage["cache_write_tokens"] == prefix and "cached_input_tokens" not in replies[0].usage
    assert all(r.usage["cached_input_tokens"] == prefix and "cache_write_tokens" not in r.usage for r in replies[1:])
    assert all(r.usage["input_tokens"] > prefix for r in replies)
    assert {r.finish_reason for r in replies} == {"end_turn"}


async def test_anthropic_prompt_cache_off_sends_plain_system_text_and_nothing_is_cached(provider):
    """With prompt_cache=False the system field is plain text, so nothing is written to or read from the cache."""
    llm = _anthropic(provider, prompt_cache=False)
    replies = [await llm(r) for r in _requests(2)]
    assert provider.requests[0][2]["system"] == LONG
    assert all(set(r.usage) == {"input_tokens", "output_tokens"} for r in replies)


async def test_openai_reports_its_automatic_cache_as_cached_input_tokens(provider):
    """OpenAI caches a long prefix by itself: prompt_tokens_details.cached_tokens becomes cached_input_tokens
    (part of input_tokens), and finish_reason comes through."""
    llm = openai_compatible(provider.base_url + "/v1", model="gpt-4o-mini", timeout=5.0)
    first, second = [await llm(r) for r in _requests(2)]
    assert "cached_input_tokens" not in first.usage
    assert 0 < second.usage["cached_input_tokens"] <= second.usage["input_tokens"]
    assert (first.finish_reason, second.finish_reason) == ("stop", "stop")


@pytest.mark.parametrize(("make", "model"), [("anthropic", "claude-haiku-4-5"), ("openai", "gpt-4o-mini")])
async def test_accounting_prices_cached_reads_and_writes_at_the_table_s_cache_rates(provider, make, model):
    """The accounts keep the cached and cache-write tokens apart, and the cost bills them at the dated table's
    cache rates: less than the same tokens at the plain input rate."""
    prices = bundled_prices().models
    inner = (
        _anthropic(provider)
        if make == "anthropic"
        else openai_compatible(provider.base_url + "/v1", model=model, timeout=5.0)
    )
    llm = accounted(inner, prices=prices)
    for request in _requests(4):
        await llm(request)
    total = llm.accounts.total()
    assert total.cached_input_tokens == 3 * (len(LONG) // 4)
    assert total.cache_write_tokens == (len(LONG) // 4 if make == "anthropic" else 0)
    rate_in, rate_out, rate_cached, rate_write = prices[model]
    plain = total.input_tokens - total.cached_input_tokens - total.cache_write_tokens
    expected = (
        plain * rate_in
        + total.cached_input_tokens * rate_cached
        + total.cache_write_tokens * rate_write
        + total.output_tokens * rate_out
    ) / 1e6
    assert llm.report().cost_usd == pytest.approx(expected)
    assert expected < (total.input_tokens * rate_in + total.output_tokens * rate_out) / 1e6
