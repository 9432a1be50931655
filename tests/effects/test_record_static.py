"""A static graph written as a system records the same graph, trace and forward requests as GraphBuilder's."""

from __future__ import annotations

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import FunctionLLM
from semgrad.core import Example, forward
from semgrad.effects import record, run_sync
from semgrad.testing import graphs, inputs_for, pure_llms, system_of_graph


def _asking(llm):
    """`llm`, and the list of every request it is asked, in order."""
    asked = []

    def answer(request):
        asked.append(request)
        return llm(request)

    return FunctionLLM(answer), asked


@settings(max_examples=40, deadline=None)
@given(graphs(functions=False), st.data(), pure_llms())
def test_a_static_graph_written_as_a_system_records_the_same_graph_trace_and_requests(gp, data, llm):
    """For random graphs (LLM nodes, free and frozen parameters, dead branches, unusual names) and a pure
    fake, recording the graph written as a system gives the GraphBuilder graph's nodes, output and params,
    the trace forward gives node by node, and the same forward requests (as a multiset)."""
    graph, params = gp
    inputs = data.draw(inputs_for(graph))
    static_llm, static_asked = _asking(llm)
    expected = run_sync(forward(graph, params, inputs, sample="s1"), static_llm)
    recorded_llm, recorded_asked = _asking(llm)
    example = Example(inputs, id="s1")
    got = anyio.run(lambda: record(system_of_graph(graph, params), params, example, llm=recorded_llm))
    assert dict(got.graph.nodes) == dict(graph.nodes) and got.graph.output == graph.output
    assert got.params == params and got.trace.params == params.digest == expected.params
    assert dict(got.trace.runs) == dict(expected.runs)
    assert (got.trace.sample, got.trace.output) == (expected.sample, expected.output)
    assert sorted(map(repr, recorded_asked)) == sorted(map(repr, static_asked))


@settings(max_examples=15, deadline=None)
@given(graphs(functions=False, shuffle=False, unusual_names=False), st.data(), pure_llms())
def test_a_static_graph_whose_inputs_come_first_records_the_same_fingerprint(gp, data, llm):
    """When the builder added the inputs first and the rest in call order, the recorded graph is equal to
    it in order too: the same topological order and fingerprint, so the same trace."""
    graph, params = gp
    if graph.topological_order[: len(graph.inputs)] != graph.inputs:
        return  # a parameter before an input: the system makes its inputs first, so only the nodes compare
    drawn = data.draw(inputs_for(graph))
    inputs = {name: drawn[name] for name in graph.inputs}  # a system with **inputs makes them in the example's order
    got = anyio.run(lambda: record(system_of_graph(graph, params), params, inputs, llm=llm))
    assert got.graph.topological_order == graph.topological_order
    assert got.graph.fingerprint == graph.fingerprint
    assert got.trace == run_sync(forward(graph, params, inputs), llm)
