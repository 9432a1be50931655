"""The hot path's trusted constructors build exactly the values the public constructors build."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from semgrad.backends.fake import HashLLM
from semgrad.core import (
    BackwardFailure,
    FrozenMap,
    Gradients,
    LLMRequest,
    LLMResponse,
    Message,
    NodeFeedback,
    NodeRun,
    Partial,
    backward,
    forward,
    merge_gradients,
)
from semgrad.core._gradients import _node_feedback, _partial
from semgrad.core._requests import _message, _request, _response, _success
from semgrad.core._rules import BackwardContext, NodeResult, _context, _node_result
from semgrad.core._trace import _node_run
from semgrad.effects import run_sync
from semgrad.testing import graphs, inputs_for
from semgrad.topologies import paper_graph

texts = st.text(max_size=20)
samples = st.one_of(st.none(), st.integers(), texts)


@given(st.sampled_from(["system", "user", "assistant"]), texts)
def test_trusted_message_equals_public_message(role, content):
    """`_message` gives a value equal to `Message`, with the same hash and repr."""
    fast, public = _message(role, content), Message(role, content)
    assert fast == public and hash(fast) == hash(public) and repr(fast) == repr(public)


@given(
    st.lists(st.tuples(st.sampled_from(["system", "user"]), texts), max_size=3),
    st.sampled_from(["forward", "backward", "optimizer"]),
    st.sampled_from(["forward", "backward", "rewrite"]),
    st.one_of(st.none(), texts),
    samples,
    st.lists(texts, max_size=3),
    st.dictionaries(texts, st.integers(), max_size=2),
)
def test_trusted_request_equals_public_request(messages, engine, purpose, node, sample, targets, options):
    """`_request` gives a value equal to `LLMRequest` built from the same fields (draw 0)."""
    msgs = tuple(Message(r, c) for r, c in messages)
    fast = _request(msgs, engine, purpose, node, sample, tuple(targets), FrozenMap(options))
    public = LLMRequest(
        msgs, engine=engine, purpose=purpose, node=node, sample=sample, targets=targets, options=options
    )
    assert fast == public and hash(fast) == hash(public) and repr(fast) == repr(public)


@given(texts)
def test_trusted_response_equals_public_response(text):
    """`_response` gives a value equal to `LLMResponse(text)`."""
    fast, public = _response(text), LLMResponse(text)
    assert fast == public and hash(fast) == hash(public) and repr(fast) == repr(public)


@given(texts, st.sampled_from(["input", "llm", "function"]), st.one_of(st.none(), texts), st.one_of(st.none(), texts))
def test_trusted_node_run_equals_public_node_run(node, kind, value, raw):
    """`_node_run` with every field gives a value equal to `NodeRun` with the same fields."""
    inputs = (("q", "2+2?"),)
    fast = _node_run(node, kind, inputs, value, None, raw, None)
    public = NodeRun(node, kind, inputs, value, None, raw, None)
    assert fast == public and hash(fast) == hash(public) and repr(fast) == repr(public)


@given(texts, texts, texts, st.lists(texts, max_size=3), samples)
def test_trusted_partial_equals_public_partial(target, source, value, siblings, sample):
    """`_partial` with every field gives a value equal to `Partial` with the same fields."""
    fast = _partial(target, source, value, tuple(siblings), sample)
    public = Partial(target, source, value, tuple(siblings), sample)
    assert fast == public and hash(fast) == hash(public) and repr(fast) == repr(public)


@given(st.one_of(texts, st.integers(), st.builds(LLMResponse, texts)))
def test_trusted_success_equals_public_success(value):
    """`_success` gives a `Success` equal to `Success(value)`: same type, hash, repr and behaviour."""
    fast, public = _success(value), Success(value)
    assert type(fast) is Success and fast == public and hash(fast) == hash(public) and repr(fast) == repr(public)
    assert fast.unwrap() == value and fast.map(repr) == public.map(repr)


@given(graphs(), st.data(), texts)
def test_trusted_context_equals_public_context(gp, data, gradient):
    """`_context` gives a `BackwardContext` equal to the public one, with the same node spec and views."""
    graph, params = gp
    trace = run_sync(forward(graph, params, data.draw(inputs_for(graph))), HashLLM())
    node = data.draw(st.sampled_from(graph.topological_order))
    targets = tuple(graph[node].inputs)
    fast = _context(graph, params, trace, node, gradient, targets, graph[node])
    public = BackwardContext(graph, params, trace, node, gradient, targets)
    assert fast == public and repr(fast) == repr(public)
    assert fast.spec == public.spec and fast.inputs_shown() == public.inputs_shown() and fast.task == public.task


@given(texts, st.one_of(texts, st.integers()), samples)
def test_trusted_node_feedback_equals_public_node_feedback(node, value, sample):
    """`_node_feedback` gives a value equal to `NodeFeedback` with the same fields."""
    fast, public = _node_feedback(node, value, sample), NodeFeedback(node, value, sample)
    assert fast == public and hash(fast) == hash(public) and repr(fast) == repr(public)


@given(st.lists(st.tuples(texts, texts, texts), max_size=3), st.lists(texts, max_size=2))
def test_trusted_node_result_equals_public_node_result(partials, reasons):
    """`_node_result` gives a value equal to `NodeResult` with the same partials and failures."""
    ps = tuple(Partial(t, s, v) for t, s, v in partials)
    fs = tuple(BackwardFailure("n", ("a",), reason) for reason in reasons)
    fast, public = _node_result(ps, fs), NodeResult(ps, fs)
    assert fast == public and hash(fast) == hash(public) and repr(fast) == repr(public)


partials_st = st.lists(
    st.builds(Partial, texts, texts, st.one_of(texts, st.integers()), st.lists(texts, max_size=2).map(tuple), samples),
    max_size=4,
)
feedback_st = st.lists(st.builds(NodeFeedback, texts, st.one_of(texts, st.integers()), samples), max_size=3)
failures_st = st.lists(st.builds(BackwardFailure, texts, st.lists(texts, max_size=2).map(tuple), texts), max_size=2)


@given(partials_st, feedback_st, failures_st)
def test_gradients_give_back_the_values_they_were_built_from(partials, feedback, failures):
    """`Gradients` keeps rows but reads back equal partials, feedback and failures, in order, with a readable repr."""
    grads = Gradients(partials, feedback, failures)
    assert grads.partials == tuple(partials) and grads.feedback == tuple(feedback)
    assert grads.failures == tuple(failures)
    for name in {p.target for p in partials} | {"absent"}:
        assert grads.for_node(name) == tuple(p for p in partials if p.target == name)
    for name in {f.node for f in feedback} | {"absent"}:
        assert grads.feedback_for(name) == tuple(f for f in feedback if f.node == name)
    assert repr(grads) == (
        f"Gradients(partials={tuple(partials)!r}, feedback={tuple(feedback)!r}, failures={tuple(failures)!r})"
    )


@given(partials_st, feedback_st, partials_st, feedback_st)
def test_gradients_equality_and_hash_follow_their_values(p1, f1, p2, f2):
    """Two `Gradients` are equal (with equal hashes) exactly when their partials, feedback and failures are."""
    a, b = Gradients(p1, f1), Gradients(p2, f2)
    assert (a == b) == (tuple(p1) == tuple(p2) and tuple(f1) == tuple(f2))
    if a == b:
        assert hash(a) == hash(b)
    assert merge_gradients([a, b]) == Gradients(p1 + p2, f1 + f2)


def test_kept_gradients_cost_the_cyclic_collector_nothing():
    """Once collected, a backward pass's gradients hold no object the cyclic collector still tracks."""
    graph, params = paper_graph()
    llm = HashLLM()
    trace = run_sync(forward(graph, params, {"question": "2+2?"}), llm)
    grads = run_sync(backward(graph, params, trace, "The expected output is 4."), llm)
    assert grads._partial_rows and grads._feedback_rows
    for _ in range(3):  # a pass stops tracking a tuple of untracked items: one nesting level per pass
        gc.collect()
    assert not gc.is_tracked(grads._partial_rows) and not gc.is_tracked(grads._feedback_rows)
    assert grads.for_node("hint_1")[0].source == "answer"


@given(st.dictionaries(st.text(max_size=4), st.integers(), max_size=8), st.text(max_size=4))
def test_a_frozen_maps_view_reads_its_items_in_order(items, key):
    """FrozenMap.view has the map's items in insertion order, and its look-ups answer as the map's own do."""
    frozen = FrozenMap(items)
    assert list(frozen.view.items()) == list(items.items()) == list(frozen.items())
    assert frozen.view.get(key, -1) == frozen.get(key, -1) and (key in frozen.view) == (key in frozen)
    assert frozen.set(key, 7).view[key] == 7 and frozen.view == items
