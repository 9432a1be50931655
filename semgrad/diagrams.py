"""Diagrams of a graph: its structure as Graphviz DOT or Mermaid flowchart text (no Graphviz needed).

Both exports are deterministic: nodes in topological order, each node's incoming
edges in the order it reads its inputs. Node kinds are drawn differently:

========  ======================  ==========================
kind      DOT                     Mermaid
========  ======================  ==========================
input     ellipse                 stadium ``([...])``
param     note, dashed            cylinder ``[(...)]``
llm       rounded filled box      rounded box ``(...)``
function  parallelogram           parallelogram ``[/.../]``
========  ======================  ==========================

The output node gets a double border. Names are quoted and escaped, so any
string is safe as a node name.
"""

from __future__ import annotations

from .core import Graph, Node

__all__ = ["dot_quote", "mermaid_label", "to_dot", "to_mermaid"]

_DOT_STYLE = {
    "input": 'shape=ellipse, style=filled, fillcolor="#eeeeee"',
    "param": 'shape=note, style="filled,dashed", fillcolor="#fff4cc"',
    "llm": 'shape=box, style="rounded,filled", fillcolor="#dbe9ff"',
    "function": 'shape=parallelogram, style=filled, fillcolor="#e2f5e2"',
}

_MERMAID_SHAPE = {"input": ('(["', '"])'), "param": ('[("', '")]'), "llm": ('("', '")'), "function": ('[/"', '"/]')}

_MERMAID_CLASS = {
    "input": "fill:#eeeeee,stroke:#555555",
    "param": "fill:#fff4cc,stroke:#aa8800,stroke-dasharray:4 3",
    "llm": "fill:#dbe9ff,stroke:#3366aa",
    "function": "fill:#e2f5e2,stroke:#338833",
}


def dot_quote(text: str) -> str:
    """`text` as a double-quoted DOT string: backslashes, quotes and line breaks escaped.

    A line feed becomes ``\\n`` and a carriage return ``\\r``, so the result is
    always a single line and the name can be read back exactly.

    Examples:
        >>> print(dot_quote('say "hi"\\\\n'))
        "say \\"hi\\"\\\\n"
        >>> print(dot_quote("two\\nlines"))
        "two\\nlines"
    """
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r") + '"'


def to_dot(graph: Graph, *, name: str = "semgrad") -> str:
    """The graph as Graphviz DOT text (render with ``dot -Tsvg``).

    Args:
        graph: The graph to draw.
        name: The DOT graph's name.

    Returns:
        A ``digraph`` with one statement per node and per edge.

    Examples:
        >>> from semgrad.topologies import paper_graph
        >>> print(to_dot(paper_graph()[0]))
        digraph "semgrad" {
          rankdir=TB;
          node [fontname="Helvetica"];
          "question" [shape=ellipse, style=filled, fillcolor="#eeeeee"];
          "hint_1" [shape=box, style="rounded,filled", fillcolor="#dbe9ff"];
          "hint_2" [shape=box, style="rounded,filled", fillcolor="#dbe9ff"];
          "answer" [shape=box, style="rounded,filled", fillcolor="#dbe9ff", peripheries=2];
          "question" -> "hint_1";
          "question" -> "hint_2";
          "question" -> "answer";
          "hint_1" -> "answer";
          "hint_2" -> "answer";
        }
    """
    lines = [f"digraph {dot_quote(name)} {{", "  rankdir=TB;", '  node [fontname="Helvetica"];']
    for node in graph.nodes.values():
        output = ", peripheries=2" if node.name == graph.output else ""
        lines.append(f"  {dot_quote(node.name)} [{_DOT_STYLE[node.kind]}{output}];")
    lines += [f"  {dot_quote(source)} -> {dot_quote(target)};" for source, target in _edges(graph)]
    return "\n".join([*lines, "}"])


def mermaid_label(text: str) -> str:
    """`text` made safe inside a quoted Mermaid label (entity codes for special characters).

    Examples:
        >>> mermaid_label('a "b" <c> #1')
        'a #quot;b#quot; #lt;c#gt; #35;1'
    """
    for char, code in (("#", "#35;"), ("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("`", "#96;")):
        text = text.replace(char, code)
    return " ".join(text.splitlines()) or " "


def to_mermaid(graph: Graph, *, direction: str = "TD") -> str:
    """The graph as a Mermaid flowchart (paste into Markdown inside a ``mermaid`` block).

    Nodes get the ids ``n0``, ``n1``, ... in topological order; their labels are
    the escaped names.

    Args:
        graph: The graph to draw.
        direction: ``"TD"`` (top-down) or ``"LR"`` (left to right).

    Examples:
        >>> from semgrad.topologies import paper_graph
        >>> print(to_mermaid(paper_graph()[0]))
        flowchart TD
          n0(["question"])
          n1("hint_1")
          n2("hint_2")
          n3("answer")
          n0 --> n1
          n0 --> n2
          n0 --> n3
          n1 --> n3
          n2 --> n3
          classDef input fill:#eeeeee,stroke:#555555
          classDef param fill:#fff4cc,stroke:#aa8800,stroke-dasharray:4 3
          classDef llm fill:#dbe9ff,stroke:#3366aa
          classDef function fill:#e2f5e2,stroke:#338833
          classDef output stroke-width:3px
          class n0 input
          class n1,n2,n3 llm
          class n3 output
    """
    if direction not in ("TD", "TB", "BT", "LR", "RL"):
        raise ValueError(f"direction must be one of TD, TB, BT, LR, RL, got {direction!r}")
    ids = {name: f"n{i}" for i, name in enumerate(graph.nodes)}
    lines = [f"flowchart {direction}"]
    lines += [f"  {ids[node.name]}{_mermaid_shape(node)}" for node in graph.nodes.values()]
    lines += [f"  {ids[source]} --> {ids[target]}" for source, target in _edges(graph)]
    lines += [f"  classDef {kind} {style}" for kind, style in _MERMAID_CLASS.items()]
    lines.append("  classDef output stroke-width:3px")
    for kind in _MERMAID_CLASS:
        members = [ids[name] for name in graph.of_kind(kind)]  # type: ignore[arg-type]
        if members:
            lines.append(f"  class {','.join(members)} {kind}")
    lines.append(f"  class {ids[graph.output]} output")
    return "\n".join(lines)


def _mermaid_shape(node: Node) -> str:
    opening, closing = _MERMAID_SHAPE[node.kind]
    return f"{opening}{mermaid_label(node.name)}{closing}"


def _edges(graph: Graph) -> tuple[tuple[str, str], ...]:
    return tuple((source, node.name) for node in graph.nodes.values() for source in node.inputs)
