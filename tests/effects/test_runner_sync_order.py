"""The sync runner answers depth first: one sample's chain of calls is finished before the next one starts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.core import forward, gather
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
