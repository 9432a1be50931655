"""The sync runner answers depth first: one sample's chain of calls is finished before the next one starts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.core import LLMRequest, LLMResponse, Message, forward, gather
from semgrad.core.programs import ask, bind, map_, pure
from semgrad.effects import Runner

from ._graphs import chain_graph


@given(st.integers(1, 12), st.integers(1, 4))
def test_sync_calls_finish_each_sample_before_starting_the_next(size, depth):
    """With a sync LLM, calls go sample by sample, each sample's chain in order, samples in batch order."""
    graph, params = chain_graph(depth)
    rec = RecordingLLM(HashLLM())
    program = gather(*(forward(graph, params, {"q": str(i)}, sample=i) for i in range(size)))
    traces = Runner(rec).run_sync(program)
    assert [(r.sample, r.node) for r in rec.requests] == [(i, f"n{k}") for i in range(size) for k in range(depth)]
    assert [t.sample for t in traces] == list(range(size))


def _feed_depth_first(program, llm):
    """The reference: every reply fed to the whole program's states, depth first (what a reply
    makes ready is answered before older requests, in emitted order); returns (value, requests)."""
    stack = list(reversed(program.emitted))
    asked = []
    while not program.done:
        token, request = stack.pop()
        asked.append(request)
        program = program.feed(token, Success(LLMResponse(llm(request))))
        stack.extend(reversed(program.emitted))
    return program.value, asked


def _ask(text):
    return ask(LLMRequest((Message("user", text),), node=text[:12] or "x"))


def _then(depth):
    """A continuation for `bind`: a program built from the value (so it depends on the replies)."""

    def then(value):
        text = repr(value)[:40]
        return gather(_ask("after " + text), *([_ask(f"{depth}:{text}")] if depth % 2 else []))

    return then


def _programs():
    """Random nests of gather, bind and map_ over single asks and forward passes of a chain graph."""
    leaves = st.one_of(
        st.text(max_size=6).map(_ask),
        st.tuples(st.integers(1, 3), st.integers(0, 3)).map(
            lambda dq: forward(*chain_graph(dq[0]), {"q": str(dq[1])}, sample=dq[1])
        ),
        st.just(pure("done already")),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=4).map(lambda ps: gather(*ps)),
            st.tuples(inner, st.integers(0, 3)).map(lambda pd: bind(pd[0], _then(pd[1]))),
            inner.map(lambda p: map_(p, repr)),
        ),
        max_leaves=16,
    )


@given(_programs(), st.text(max_size=4))
def test_the_sync_runner_makes_the_calls_of_feeding_the_whole_program_depth_first(program, salt):
    """Running gathers' children and binds' programs one after another, the sync runner makes exactly
    the calls, in the order, and returns the value of feeding every reply to the whole program."""
    llm = HashLLM(salt=salt)
    want_value, want_requests = _feed_depth_first(program, llm)
    rec = RecordingLLM(llm)
    runner = Runner(rec)
    assert runner.run_sync(program) == want_value
    assert list(rec.requests) == want_requests
    assert runner.statistics().calls == len(want_requests)
