"""Sampling options per role: the official defaults on every call, overrides per engine and per stage, the cache key."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.core import Example, FrozenMap, LLMRequest, Message, optim, request_key
from semgrad.core.calls import OFFICIAL_OPTIONS, sampling
from semgrad.effects import cached, fit_sync
from semgrad.topologies import paper_graph


def _train(n=4):
    return [Example({"question": f"question {i}"}, "right", id=i) for i in range(n)]


def _fit(rec, **options):
    graph, params = paper_graph()
    return fit_sync(
        graph,
        params,
        options.pop("optimizer", optim.neighbor_sgd(k=2, via_feedback=True)),
        train=_train(),
        llm=rec,
        iterations=1,
        **options,
    )


def test_every_call_of_a_run_carries_the_official_options_by_default():
    """Forward, backward, critique and rewrite requests all carry temperature 0 and 1024 max tokens."""
    rec = RecordingLLM(HashLLM())
    _fit(rec)
    assert {r.purpose for r in rec.requests} == {"forward", "backward", "critique", "rewrite"}
    assert {r.options for r in rec.requests} == {OFFICIAL_OPTIONS}
    assert dict(OFFICIAL_OPTIONS) == {"temperature": 0.0, "max_tokens": 1024}


def test_options_per_engine_reach_their_engines_only():
    """`fit(options=sampling(forward=...))` changes forward requests (the gate's too) and nothing else; a
    stage's own options win over the run's."""
    rec = RecordingLLM(HashLLM())
    chain = optim.chain(
        optim.select_error_samples(2),
        optim.backpropagate(),
        optim.aggregate(),
        optim.propose_rewrite(options={"temperature": 1.0}),
        optim.full_update(),
        optim.validation_gate(),
    )
    _fit(rec, optimizer=chain, options=sampling(forward={"temperature": 0.7}, backward={"max_tokens": 300}))
    by_purpose = {}
    for r in rec.requests:
        by_purpose.setdefault(r.purpose, set()).add(tuple(sorted(r.options.items())))
    assert by_purpose == {
        "forward": {(("max_tokens", 1024), ("temperature", 0.7))},
        "backward": {(("max_tokens", 300), ("temperature", 0.0))},
        "rewrite": {(("max_tokens", 1024), ("temperature", 1.0))},
    }


def test_an_engine_given_empty_options_leaves_them_to_the_provider():
    """`options={"forward": {}}` sends forward requests with no options; the other engines keep the official ones."""
    rec = RecordingLLM(HashLLM())
    _fit(rec, options={"forward": {}})
    assert {r.options for r in rec.requests if r.purpose == "forward"} == {FrozenMap()}
    assert {r.options for r in rec.requests if r.purpose != "forward"} == {OFFICIAL_OPTIONS}
    with pytest.raises(ValueError, match="per engine"):
        _fit(rec, options={"temperature": 0.5})


@given(st.floats(0, 2), st.floats(0, 2), st.integers(1, 4096))
def test_options_are_part_of_the_cache_key(t1, t2, tokens):
    """Requests differing only in options have different keys, and `cached` makes one call for each."""
    base = (Message("user", "same prompt"),)
    a = LLMRequest(base, options={"temperature": t1, "max_tokens": tokens})
    b = LLMRequest(base, options={"temperature": t2, "max_tokens": tokens})
    assert (request_key(a) == request_key(b)) == (t1 == t2)
    rec = RecordingLLM(HashLLM())
    llm = cached(rec)
    anyio.run(llm, a)
    anyio.run(llm, b)
    anyio.run(llm, a)
    assert len(rec.requests) == (1 if t1 == t2 else 2)
