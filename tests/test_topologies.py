"""Ready-made topologies (paper, LIAR, layered) and their DOT / Mermaid export."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import FrozenMap, Graph, GraphBuilder, GraphError, Node
from semgrad.diagrams import mermaid_label, to_dot, to_mermaid
from semgrad.testing import graphs, join_text
from semgrad.topologies import (
    HINT_INSTRUCTION,
    LIAR_ANALYSIS_INSTRUCTIONS,
    LIAR_DECIDE_INSTRUCTION,
    LIAR_FIELDS,
    SOLVE_INSTRUCTION,
    layered_graph,
    liar_graph,
    paper_graph,
)


def edges(graph: Graph) -> list[tuple[str, str]]:
    """Every edge (input, reader), readers in topological order, inputs in reading order."""
    return [(source, node.name) for node in graph.nodes.values() for source in node.inputs]


# --- the paper graph -------------------------------------------------------------------


def test_paper_graph_has_two_hints_and_a_final_answer():
    """The paper graph: question -> hint_1, hint_2; answer reads question and both hints."""
    graph, params = paper_graph()
    assert graph.topological_order == ("question", "hint_1", "hint_2", "answer")
    assert edges(graph) == [
        ("question", "hint_1"),
        ("question", "hint_2"),
        ("question", "answer"),
        ("hint_1", "answer"),
        ("hint_2", "answer"),
    ]
    assert params.texts() == {
        "hint_1.instruction": HINT_INSTRUCTION,
        "hint_2.instruction": HINT_INSTRUCTION,
        "answer.instruction": SOLVE_INSTRUCTION,
    }


# --- the LIAR graph --------------------------------------------------------------------


def test_liar_graph_has_five_analyses_feeding_one_decision():
    """As the official system: five analysis nodes and the final node each read the whole record (all five
    fields); the final node also reads the five analyses; six trainable instructions."""
    graph, params = liar_graph()
    analyses = tuple(f"{field}_analysis" for field in LIAR_FIELDS)
    assert graph.inputs == LIAR_FIELDS
    assert graph.of_kind("llm") == (*analyses, "answer")
    assert all(graph.predecessors(f"{field}_analysis") == LIAR_FIELDS for field in LIAR_FIELDS)
    assert graph.predecessors("answer") == (*LIAR_FIELDS, *analyses) and graph.output == "answer"
    assert len(edges(graph)) == 5 * 5 + 10 and len(params) == 6
    assert params.trainable() == (*(f"{a}.instruction" for a in analyses), "answer.instruction")


def test_liar_graph_instructions_are_our_own_and_overridable():
    """Each analysis starts from its own instruction and is held to two sentences; the decision asks for Yes or
    No and its instruction can be replaced (issue 31 point 5: both limits are fixed formats, not instructions)."""
    graph, params = liar_graph()
    for field in LIAR_FIELDS:
        assert params.value(f"{field}_analysis.instruction") == LIAR_ANALYSIS_INSTRUCTIONS[field]
        assert "two sentences" in graph.nodes[f"{field}_analysis"].output_format
    assert params.value("answer.instruction") == LIAR_DECIDE_INSTRUCTION
    assert "Yes or No" in graph.nodes["answer"].output_format
    assert liar_graph(decide_instruction="Lie? Yes/No.")[1].value("answer.instruction") == "Lie? Yes/No."


def test_liar_forward_fixes_the_formats_outside_the_trainable_instructions():
    """Issue 31 point 5: LIAR's analyses are not asked to reason and show 'at most two sentences', the final node
    shows 'Yes or No', as fixed text after the instruction: no trainable value holds them, and a rewritten
    instruction still gets them."""
    from returns.result import Success

    from semgrad.core import LLMResponse, forward
    from semgrad.topologies import LIAR_ANALYSIS_FORMAT, LIAR_DECIDE_FORMAT

    graph, params = liar_graph()
    assert not any("two sentences" in v or "Yes or No" in v for v in (params.value(n) for n in params.trainable()))
    record = {field: f"the {field}" for field in LIAR_FIELDS}
    changed = params.with_values({"party_analysis.instruction": "X", "answer.instruction": "Y"})
    for values in (params, changed):
        program = forward(graph, values, record)
        requests = {}
        while not program.done:
            emitted = program.emitted
            requests.update({r.node: r for _, r in emitted})
            for token, request in emitted:
                program = program.feed(token, Success(LLMResponse(f"<result>{request.node}</result>")))
        party, answer = requests["party_analysis"].system, requests["answer"].system
        assert party.endswith(LIAR_ANALYSIS_FORMAT) and "step by step" not in party
        assert answer.endswith(LIAR_DECIDE_FORMAT) and "step by step" in answer
        assert values.value("party_analysis.instruction") in party


# --- layered graphs --------------------------------------------------------------------

sizes = st.tuples(st.integers(1, 5), st.integers(0, 5), st.booleans(), st.integers(1, 3))


@given(sizes)
def test_layered_graph_node_and_edge_counts(shape):
    """width*depth layer nodes plus final; edges: full bipartite between layers, plus skips when asked."""
    width, depth, skip, n_inputs = shape
    inputs = tuple(f"in_{i}" for i in range(n_inputs))
    graph, params = layered_graph(width, depth, skip=skip, inputs=inputs)
    assert len(graph.nodes) == n_inputs + width * depth + 1 and len(params) == width * depth + 1
    assert graph.inputs == inputs and graph.output == "final"
    if depth == 0:
        expected = n_inputs
    else:
        expected = width * n_inputs + (depth - 1) * width * width + width
        if skip:
            expected += (depth - 1) * width * n_inputs + n_inputs
    assert len(edges(graph)) == expected


@given(sizes)
def test_layered_graph_each_layer_reads_the_previous_one(shape):
    """Node l{k}_{i} reads every node of layer k-1 (layer 0 reads the inputs), plus the inputs with skip."""
    width, depth, skip, n_inputs = shape
    inputs = tuple(f"in_{i}" for i in range(n_inputs))
    graph, _ = layered_graph(width, depth, skip=skip, inputs=inputs)
    previous = inputs
    for layer in range(depth):
        current = tuple(f"l{layer}_{i}" for i in range(width))
        for name in current:
            extra = inputs if skip and layer else ()
            assert graph.predecessors(name) == (*extra, *previous)
        previous = current
    assert graph.predecessors("final") == ((*inputs, *previous) if skip and depth else previous)


def test_layered_graph_with_skip_has_the_paper_graph_shape():
    """layered_graph(2, 1, skip=True) is the paper graph with other names."""
    layered, _ = layered_graph(2, 1, skip=True)
    paper, _ = paper_graph()
    rename = dict(zip(paper.topological_order, layered.topological_order))
    assert [(rename[a], rename[b]) for a, b in edges(paper)] == edges(layered)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 2), "width >= 1"),
        ((2, -1), "depth >= 0"),
        ((True, 1), "width >= 1"),
        ((2, 1.0), "depth >= 0"),
    ],
)
def test_layered_graph_rejects_bad_sizes(args, message):
    """Bad widths or depths are GraphErrors that say what is allowed."""
    with pytest.raises(GraphError, match=message):
        layered_graph(*args)


@pytest.mark.parametrize("inputs", [(), "question"])
def test_layered_graph_needs_a_list_of_inputs(inputs):
    """No inputs, or a bare string, is a GraphError."""
    with pytest.raises(GraphError, match="non-empty list of input names"):
        layered_graph(1, 1, inputs=inputs)


# --- DOT and Mermaid export ----------------------------------------------------------------

DOT_NODE = re.compile(r'^  "((?:[^"\\]|\\.)*)" \[(.*)\];$')
DOT_EDGE = re.compile(r'^  "((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)";$')
MERMAID_NODE = re.compile(r'^  n(\d+)(\(\[|\[\(|\(|\[/)"([^"]*)"(\]\)|\)\]|\)|/\])$')
MERMAID_EDGE = re.compile(r"^  n(\d+) --> n(\d+)$")


def dot_unescape(text: str) -> str:
    """Undo `dot_quote`'s escaping of a quoted DOT string's body."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), text)


def parse_dot(text: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Node attributes by name, and the edges, read back from `to_dot` output (fails on any other line)."""
    lines = text.split("\n")
    assert lines[0].startswith("digraph ") and lines[-1] == "}"
    nodes, found = {}, []
    for line in lines[3:-1]:
        if node := DOT_NODE.match(line):
            nodes[dot_unescape(node.group(1))] = node.group(2)
        else:
            edge = DOT_EDGE.match(line)
            assert edge, f"unexpected DOT line {line!r}"
            found.append((dot_unescape(edge.group(1)), dot_unescape(edge.group(2))))
    return nodes, found


def parse_mermaid(text: str) -> tuple[dict[int, tuple[str, str]], list[tuple[int, int]], list[str]]:
    """Nodes (shape, label) by index, edges, and the class lines of `to_mermaid` output."""
    lines = text.split("\n")
    assert lines[0] == "flowchart TD"
    nodes, found, classes = {}, [], []
    for line in lines[1:]:
        if node := MERMAID_NODE.match(line):
            nodes[int(node.group(1))] = (node.group(2), node.group(3))
        elif edge := MERMAID_EDGE.match(line):
            found.append((int(edge.group(1)), int(edge.group(2))))
        else:
            assert line.startswith(("  classDef ", "  class ")), f"unexpected Mermaid line {line!r}"
            classes.append(line)
    return nodes, found, classes


hostile = st.text(min_size=1, max_size=12) | st.sampled_from(
    ['a"b', "x\\", '"; digraph x {', "line\nbreak", "cr\rx", "<b>", "#quot;", "`md`", "end", "n1 --> n0", "}"]
)


def hostile_graph(names: list[str]) -> Graph:
    """An input, a param, an LLM node and a function node named `names`, made as a `Graph` directly: the
    builder refuses quotes, angle brackets and control characters in names (a backward reply could not
    label them), but the exporters must escape whatever a graph holds."""
    first, second, third, fourth = names
    nodes = [
        Node(first, "input"),
        Node(second, "param"),
        Node(third, "llm", (first, second)),
        Node(fourth, "function", (third, first), fn=join_text),
    ]
    return Graph(FrozenMap((node.name, node) for node in nodes), fourth)


@st.composite
def hostile_graphs(draw: st.DrawFn) -> Graph:
    """Graphs with one node of each kind whose names are arbitrary (hostile) text."""
    return hostile_graph(draw(st.lists(hostile, min_size=4, max_size=4, unique=True)))


def graphs_to_draw() -> st.SearchStrategy[Graph]:
    """Generated graphs of every shape, and graphs with hostile names."""
    return graphs().map(lambda pair: pair[0]) | hostile_graphs()


@given(graphs_to_draw())
def test_dot_contains_every_node_and_edge_and_reads_back_exactly(graph):
    """Each DOT line is one node or edge statement; names read back exactly, in topological order."""
    nodes, found = parse_dot(to_dot(graph))
    assert tuple(nodes) == graph.topological_order
    assert found == edges(graph)
    assert "peripheries=2" in nodes[graph.output]
    assert sum("peripheries=2" in attrs for attrs in nodes.values()) == 1


@given(graphs_to_draw())
def test_mermaid_contains_every_node_and_edge_with_safe_labels(graph):
    """Each Mermaid node line carries its escaped name; edges and classes cover every node."""
    nodes, found, classes = parse_mermaid(to_mermaid(graph))
    order = graph.topological_order
    assert [label for _, label in nodes.values()] == [mermaid_label(name) for name in order]
    assert found == [(order.index(a), order.index(b)) for a, b in edges(graph)]
    for _, label in nodes.values():
        assert not set(label) & set('"<>`\n\r')
    assert f"  class n{order.index(graph.output)} output" in classes


@given(graphs_to_draw())
def test_exports_are_deterministic(graph):
    """Exporting the same graph twice gives the same text."""
    assert to_dot(graph) == to_dot(graph) and to_mermaid(graph) == to_mermaid(graph)


def test_each_node_kind_is_drawn_differently():
    """input, param, llm and function nodes get different DOT styles and Mermaid shapes."""
    b = GraphBuilder()
    b.input("q")
    b.param("p", "text")
    b.llm("l", inputs=["q", "p"], instruction="Go.")
    b.function("f", join_text, inputs=["l"])
    graph, _ = b.build(output="f")
    dot_nodes, _ = parse_dot(to_dot(graph))
    styles = [attrs.replace(", peripheries=2", "") for attrs in dot_nodes.values()]
    assert len(set(styles)) == 4
    mermaid_nodes, _, _ = parse_mermaid(to_mermaid(graph))
    assert len({shape for shape, _ in mermaid_nodes.values()}) == 4


def test_hostile_name_cannot_break_out_of_its_quotes():
    """A name with quotes, braces and a newline stays inside one quoted DOT string and one Mermaid label."""
    evil = 'x" ]; "pwn" -> "y\n}'
    graph = Graph(FrozenMap({evil: Node(evil, "input"), "ok": Node("ok", "llm", (evil,))}), "ok")
    dot = to_dot(graph)
    assert '"x\\" ]; \\"pwn\\" -> \\"y\\n}" [shape=ellipse' in dot and dot.count("\n") == 6
    assert 'n0(["x#quot; ]; #quot;pwn#quot; -#gt; #quot;y }"])' in to_mermaid(graph)


def test_mermaid_direction_is_checked():
    """Only Mermaid's flowchart directions are accepted."""
    assert to_mermaid(paper_graph()[0], direction="LR").startswith("flowchart LR\n")
    with pytest.raises(ValueError, match="direction must be one of"):
        to_mermaid(paper_graph()[0], direction="sideways")


def test_a_nodes_fixed_prompt_text_is_part_of_the_graphs_fingerprint():
    """Two graphs that differ only in a node's fixed output format or its reasoning request have different
    fingerprints (a checkpoint of one is not the other's), and a node without either keeps its old one."""
    from semgrad.core import GraphBuilder

    def one(**fixed):
        b = GraphBuilder()
        b.llm("a", inputs=[b.input("q")], instruction="x", **fixed)
        return b.build(output="a")[0].fingerprint

    plain, formatted, direct = one(), one(output_format="Yes or No."), one(reason=False)
    assert len({plain, formatted, direct, one(output_format="Yes or No.", reason=False)}) == 4
    assert plain == one(output_format="", reason=True)


def test_the_old_graphviz_module_still_gives_the_diagram_exports_with_a_deprecation_warning():
    """``semgrad.graphviz`` (renamed ``semgrad.diagrams``: it never used Graphviz) hands out the same functions for a
    release, each read warning that it moved; a name it never had is still an AttributeError."""
    import semgrad.diagrams
    import semgrad.graphviz

    for name in semgrad.diagrams.__all__:
        with pytest.warns(DeprecationWarning, match=f"semgrad.diagrams.{name}"):
            assert getattr(semgrad.graphviz, name) is getattr(semgrad.diagrams, name)
    with pytest.raises(AttributeError):
        semgrad.graphviz.nothing  # noqa: B018
