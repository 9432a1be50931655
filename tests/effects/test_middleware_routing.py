"""by_engine routing, and middleware composing in any order around sync and async LLMs."""

from __future__ import annotations

import itertools

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import FunctionLLM, HashLLM
from semgrad.core import LLMFailure, LLMRequest, Message, forward, gather
from semgrad.effects import (
    RetryPolicy,
    accounted,
    budgeted,
    by_engine,
    cached,
    is_async_llm,
    limited,
    retrying,
    run_sync,
)
from semgrad.testing import graphs, inputs_for


def ask(engine="forward"):
    return LLMRequest((Message("user", "hi"),), engine=engine)


def test_requests_go_to_the_llm_of_their_engine():
    """Each engine's requests reach its own LLM; others reach the default."""
    llm = by_engine({"forward": lambda r: "small", "optimizer": lambda r: "strong"}, default=lambda r: "other")
    assert [llm(ask(e)) for e in ("forward", "optimizer", "backward")] == ["small", "strong", "other"]


def test_an_unrouted_engine_fails_with_what_to_do():
    """Without a default, an unknown engine fails with kind 'unrouted' naming the known routes."""
    llm = by_engine({"forward": lambda r: "small"})
    with pytest.raises(LLMFailure, match="'forward'") as caught:
        llm(ask("optimizer"))
    assert caught.value.error.kind == "unrouted"


async def test_a_router_is_async_when_any_route_is():
    """by_engine is sync over sync routes and async (always awaitable) when one route is async."""

    async def strong(request):
        return "strong"

    assert not is_async_llm(by_engine({"forward": lambda r: "small"}))
    llm = by_engine({"forward": lambda r: "small", "optimizer": strong})
    assert is_async_llm(llm)
    assert [await llm(ask("forward")), await llm(ask("optimizer"))] == ["small", "strong"]
    with pytest.raises(LLMFailure):
        await by_engine({"optimizer": strong})(ask("forward"))


def test_bad_routes_are_refused():
    """An empty router or a non-callable route raises ValueError."""
    with pytest.raises(ValueError):
        by_engine({})
    with pytest.raises(ValueError, match="'forward'"):
        by_engine({"forward": "gpt-4o"})


def test_the_router_identity_lists_each_route():
    """by_engine's identity holds each route's identity, so a cache over it keys by all of them."""
    a = type("A", (), {"identity": "a", "__call__": lambda self, r: "x"})()
    assert by_engine({"forward": a}).identity["routes"] == {"forward": "a"}


WRAPPERS = {
    "retrying": lambda llm: retrying(llm, RetryPolicy(base_delay=0)),
    "limited": lambda llm: limited(llm, max_concurrency=2, requests_per_minute=60000),
    "cached": lambda llm: cached(llm),
    "accounted": lambda llm: accounted(llm),
    "budgeted": lambda llm: budgeted(llm, max_calls=1000),
}


class Backend(HashLLM):
    identity = "hash-backend"


@settings(max_examples=25)
@given(st.permutations(list(WRAPPERS)), st.integers(1, 5), graphs(max_computed=5), st.data(), st.booleans())
def test_middleware_composes_in_any_order(order, depth, gp, data, use_async):
    """Any stack of middleware over a sync or async LLM gives the bare LLM's traces and keeps its identity."""
    graph, params = gp
    inputs = data.draw(inputs_for(graph))
    inner = Backend()
    if use_async:

        async def answer(request):
            return inner(request)

        base = FunctionLLM(answer)
        base.identity = "hash-backend"
    else:
        base = inner
    llm = base
    for name in order[:depth]:
        llm = WRAPPERS[name](llm)
    assert is_async_llm(llm) and llm.identity == "hash-backend"
    program = lambda: gather(forward(graph, params, inputs, sample=0), forward(graph, params, inputs, sample=1))  # noqa: E731
    assert run_sync(program(), llm) == run_sync(program(), inner)


def test_every_pair_of_wrappers_composes_both_ways():
    """Each ordered pair of wrappers answers a request like the bare LLM."""
    for a, b in itertools.permutations(WRAPPERS, 2):
        llm = WRAPPERS[b](WRAPPERS[a](HashLLM()))
        assert anyio.run(llm, ask()).text == HashLLM()(ask()), (a, b)
