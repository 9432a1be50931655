"""Independent re-statements of backward's expectations, for the tests."""

from __future__ import annotations

from semgrad.core import Graph, Params


def trainable_sources(graph: Graph, params: Params, name: str) -> bool:
    """True if `name` is a trainable parameter, or computed with a trainable ancestor
    (an LLM node's own instruction counts)."""
    node = graph[name]
    if node.kind == "param":
        return params[name].trainable
    if node.kind == "input":
        return False
    if node.kind == "llm" and params[node.instruction].trainable:
        return True
    for a in graph.ancestors(name):
        kind = graph[a].kind
        if kind == "param" and params[a].trainable:
            return True
        if kind == "llm" and params[graph[a].instruction].trainable:
            return True
    return False


def expected_steps(graph: Graph, params: Params) -> set[str]:
    """Nodes on a path to the output with at least one input that needs a gradient."""
    return {
        n
        for n in graph.topological_order
        if graph[n].computed
        and graph.reaches_output(n)
        and any(trainable_sources(graph, params, i) for i in graph.predecessors(n))
    }
