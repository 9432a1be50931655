"""Middleware over a real HTTP backend: concurrency and rate limits, the cache, record and replay."""

from __future__ import annotations

import anyio
import pytest

from semgrad.backends import anthropic, openai_compatible
from semgrad.core import GraphBuilder, LLMRequest, Message, forward, gather
from semgrad.effects import cached, limited, recorded, replayed, run, run_sync


def small_graph():
    b = GraphBuilder()
    q = b.input("question")
    h1 = b.llm("hint_1", inputs=[q], instruction="Work out an intermediate step.")
    h2 = b.llm("hint_2", inputs=[q], instruction="Work out another step.")
    b.llm("answer", inputs=[q, h1, h2], instruction="Solve the problem.")
    return b.build(output="answer")


def backend(provider, model="small-model"):
    return openai_compatible(provider.base_url + "/v1", model=model, timeout=5.0)


def requests(n):
    return [LLMRequest((Message("user", f"question {i}"),), sample=i) for i in range(n)]


@pytest.mark.parametrize("limit", [1, 3])
async def test_the_server_never_sees_more_than_max_concurrency(provider, limit):
    """Under limited(max_concurrency=C), the server's peak of requests in flight is exactly C."""
    provider.delay = 0.15
    llm = limited(backend(provider), max_concurrency=limit)
    async with anyio.create_task_group() as tg:
        for request in requests(2 * limit + 1):
            tg.start_soon(llm, request)
    assert provider.count == 2 * limit + 1
    assert provider.peak == limit


async def test_requests_per_minute_spaces_arrivals(provider):
    """With requests_per_minute=1200, requests reach the server about 50 ms apart, never in a burst."""
    await backend(provider)(requests(1)[0])  # warm up: the first call imports httpx and opens a connection
    provider.arrivals.clear()
    llm = limited(backend(provider), requests_per_minute=1200)
    async with anyio.create_task_group() as tg:
        for request in requests(6):
            tg.start_soon(llm, request)
    arrivals = sorted(provider.arrivals)
    assert all(c - a > 0.05 for a, c in zip(arrivals, arrivals[2:]))  # nominally 0.1 s: no three in one interval
    assert arrivals[-1] - arrivals[0] >= 0.2  # nominally 0.25 s


async def test_a_cached_forward_makes_no_request_the_second_time(provider, tmp_path):
    """Running the same forward twice through cached(backend, path) makes zero HTTP requests the second time."""
    graph, params = small_graph()
    llm = cached(backend(provider), path=tmp_path / "cache.sqlite")
    first = await run(forward(graph, params, {"question": "2+3?"}, sample=0), llm)
    calls = provider.count
    second = await run(forward(graph, params, {"question": "2+3?"}, sample=0), llm)
    assert calls == 3 and provider.count == calls
    assert first == second and first.ok
    again = cached(backend(provider), path=tmp_path / "cache.sqlite")
    assert await run(forward(graph, params, {"question": "2+3?"}, sample=0), again) == first
    assert provider.count == calls and again.hits == 3


async def test_changing_temperature_or_model_misses(provider, tmp_path):
    """A different temperature (request options) or a different backend model is a cache miss."""
    graph, params = small_graph()
    path = tmp_path / "cache.sqlite"
    await run(
        forward(graph, params, {"question": "q"}, options={"temperature": 0.0}), cached(backend(provider), path=path)
    )
    await run(
        forward(graph, params, {"question": "q"}, options={"temperature": 0.7}), cached(backend(provider), path=path)
    )
    assert provider.count == 6
    other_model = cached(backend(provider, model="large-model"), path=path)
    await run(forward(graph, params, {"question": "q"}, options={"temperature": 0.0}), other_model)
    assert provider.count == 9 and other_model.misses == 3
    other_provider = cached(anthropic("small-model", base_url=provider.base_url, api_key="k"), path=path)
    await run(forward(graph, params, {"question": "q"}, options={"temperature": 0.0}), other_provider)
    assert provider.count == 12


def test_a_recorded_run_replays_offline_to_an_identical_trace(provider, tmp_path):
    """A batch recorded against the server replays, with the server stopped, to equal traces and no calls."""
    graph, params = small_graph()
    cassette = tmp_path / "run.jsonl"
    program = lambda: gather(*(forward(graph, params, {"question": f"{i}+1?"}, sample=i) for i in range(3)))  # noqa: E731
    live = run_sync(program(), recorded(backend(provider), cassette))
    provider.stop()
    offline = run_sync(program(), replayed(cassette))
    assert offline == live and all(trace.ok for trace in live)
    assert len(cassette.read_text().splitlines()) == 9
