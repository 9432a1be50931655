"""The graph as a picture: an inline SVG laid out here, without Graphviz or script.

Theory of operation: nodes are put in layers by the longest path from a node with
no inputs (so every edge points down), kept in their listed order within a layer,
and each layer is centred. Edges are cubic curves from the bottom of the source
to the top of the target, ending in an arrow. Node kinds have the shapes and
colours of `semgrad.diagrams`: inputs are stadiums, params dashed notes, LLM
nodes rounded boxes, functions parallelograms; the output has a second border.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import attrs

from ._format import as_list, as_mapping, as_text, esc

__all__ = ["GraphShape", "graph_shape", "graph_svg", "longest_path_layers"]

_BOX_W, _BOX_H, _H_GAP, _V_GAP, _MARGIN, _LEGEND_H = 168, 40, 28, 56, 20, 34
_MAX_NODES = 400
_LEGEND_STEP = 110
_LABEL_CHARS = 20
_KINDS = ("input", "param", "llm", "function")


@attrs.frozen
class GraphShape:
    """The drawable part of a run's ``graph`` entry: nodes as (name, kind, role), edges, output."""

    nodes: tuple[tuple[str, str, str], ...]
    edges: tuple[tuple[str, str], ...]
    output: str | None


def graph_shape(graph: Any) -> GraphShape:
    """Read the ``graph`` entry of a results task, tolerating any malformed part.

    Edge endpoints that are not listed as nodes are added with kind ``"unknown"``;
    repeated node names are kept once.

    Examples:
        >>> graph_shape({"nodes": [{"name": "q", "kind": "input"}], "edges": [["q", "a"], "junk"], "output": "a"})
        GraphShape(nodes=(('q', 'input', ''), ('a', 'unknown', '')), edges=(('q', 'a'),), output='a')
    """
    data = as_mapping(graph)
    nodes: dict[str, tuple[str, str, str]] = {}
    for entry in as_list(data.get("nodes")):
        node = as_mapping(entry)
        name = as_text(node.get("name"))
        nodes.setdefault(name, (name, as_text(node.get("kind")), as_text(node.get("role"))))
    edges = tuple(
        (as_text(edge[0]), as_text(edge[1])) for edge in as_list(data.get("edges")) if len(as_list(edge)) == 2
    )
    for source, target in edges:
        for name in (source, target):
            nodes.setdefault(name, (name, "unknown", ""))
    output = data.get("output")
    return GraphShape(tuple(nodes.values()), edges, output if isinstance(output, str) else None)


def longest_path_layers(names: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Each node's layer: the length of the longest path reaching it from a node without inputs.

    Nodes on a cycle (which a valid graph never has) go in one extra layer at the bottom.

    Examples:
        >>> edges = [("q", "h1"), ("q", "h2"), ("q", "a"), ("h1", "a"), ("h2", "a")]
        >>> longest_path_layers(["q", "h1", "h2", "a"], edges)
        {'q': 0, 'h1': 1, 'h2': 1, 'a': 2}
        >>> longest_path_layers(["x", "y", "z"], [("x", "y"), ("y", "x")])
        {'x': 1, 'y': 1, 'z': 0}
    """
    predecessors: dict[str, list[str]] = {name: [] for name in names}
    successors: dict[str, list[str]] = {name: [] for name in names}
    for source, target in edges:
        predecessors[target].append(source)
        successors[source].append(target)
    waiting = {name: len(predecessors[name]) for name in names}
    ready, layer = deque(name for name in names if waiting[name] == 0), dict[str, int]()
    while ready:
        name = ready.popleft()
        layer[name] = max((layer[p] + 1 for p in predecessors[name]), default=0)
        for target in successors[name]:
            waiting[target] -= 1
            if waiting[target] == 0:
                ready.append(target)
    bottom = max(layer.values(), default=-1) + 1
    return {name: layer.get(name, bottom) for name in names}


def _positions(shape: GraphShape) -> tuple[dict[str, tuple[float, float]], float, float]:
    """Top-left corner of every node's box, and the picture's width and height."""
    layers = longest_path_layers([n[0] for n in shape.nodes], shape.edges)
    rows: dict[int, list[str]] = {}
    for name, depth in layers.items():
        rows.setdefault(depth, []).append(name)
    widest = max((len(row) for row in rows.values()), default=1)
    width = max(2 * _MARGIN + widest * (_BOX_W + _H_GAP) - _H_GAP, 2 * _MARGIN + len(_KINDS) * _LEGEND_STEP)
    where: dict[str, tuple[float, float]] = {}
    for depth, row in rows.items():
        left = (width - (len(row) * (_BOX_W + _H_GAP) - _H_GAP)) / 2
        for slot, name in enumerate(row):
            where[name] = (left + slot * (_BOX_W + _H_GAP), _LEGEND_H + _MARGIN + depth * (_BOX_H + _V_GAP))
    height = _LEGEND_H + 2 * _MARGIN + len(rows) * (_BOX_H + _V_GAP) - _V_GAP
    return where, width, height


def _shape(kind: str, x: float, y: float, width: float = _BOX_W, height: float = _BOX_H) -> str:
    """The outline of a node of `kind` (a fixed set of shapes; unknown kinds get a plain box)."""
    if kind == "function":
        skew = height / 4
        corners = ((x + skew, y), (x + width, y), (x + width - skew, y + height), (x, y + height))
        return '<polygon class="node-function" points="' + " ".join(f"{a:.1f},{b:.1f}" for a, b in corners) + '"/>'
    rounding = {"input": height / 2, "llm": height / 5}.get(kind, 2)
    css = f"node-{kind}" if kind in _KINDS else "node-other"
    return (
        f'<rect class="{css}" x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" rx="{rounding:.1f}"/>'
    )


def _label(name: str) -> str:
    return name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "\u2026"


def _node(node: tuple[str, str, str], x: float, y: float, *, is_output: bool) -> str:
    name, kind, role = node
    tip = f"{name} ({kind})" + (f": {role}" if role else "")
    ring = (
        (
            f'<rect class="output-ring" x="{x - 4:.1f}" y="{y - 4:.1f}" width="{_BOX_W + 8}" '
            f'height="{_BOX_H + 8}" rx="10"/>'
        )
        if is_output
        else ""
    )
    text = (
        f'<text class="node-label" x="{x + _BOX_W / 2:.1f}" y="{y + _BOX_H / 2 + 4:.1f}" '
        f'text-anchor="middle">{esc(_label(name))}</text>'
    )
    return f'<g class="node"><title>{esc(tip)}</title>{ring}{_shape(kind, x, y)}{text}</g>'


def _edge(source: tuple[float, float], target: tuple[float, float], title: str, marker: str) -> str:
    x1, y1 = source[0] + _BOX_W / 2, source[1] + _BOX_H
    x2, y2 = target[0] + _BOX_W / 2, target[1] - 2
    middle = (y1 + y2) / 2
    path = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{middle:.1f} {x2:.1f},{middle:.1f} {x2:.1f},{y2:.1f}"
    return f'<path class="edge" d="{path}" marker-end="url(#{marker})"><title>{esc(title)}</title></path>'


def _legend() -> str:
    parts = []
    for i, kind in enumerate(_KINDS):
        x = _MARGIN + i * _LEGEND_STEP
        parts.append(f'{_shape(kind, x, 6, 26, 16)}<text class="legend" x="{x + 32}" y="19">{kind}</text>')
    return "".join(parts)


def graph_svg(graph: Any, *, element_id: str) -> str:
    """The ``graph`` entry of a results task drawn as an ``<svg>`` element.

    Args:
        graph: ``{"nodes": [{"name", "kind", "role"}, ...], "edges": [[a, b], ...], "output": name}``,
            or a `GraphShape` read from one.
        element_id: The svg element's id (the caller's own identifier, never data).

    Examples:
        >>> svg = graph_svg({"nodes": [{"name": "q", "kind": "input"}, {"name": "<a>", "kind": "llm"}],
        ...                  "edges": [["q", "<a>"]], "output": "<a>"}, element_id="graph-picture")
        >>> svg.startswith('<svg id="graph-picture"'), svg.count('class="edge"'), "&lt;a&gt;" in svg, "<a>" in svg
        (True, 1, True, False)
    """
    shape = graph if isinstance(graph, GraphShape) else graph_shape(graph)
    if len(shape.nodes) > _MAX_NODES or not shape.nodes:
        note = f"graph too large to draw ({len(shape.nodes)} nodes)" if shape.nodes else "no graph recorded"
        return (
            f'<svg id="{element_id}" class="graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 40" '
            f'width="400" height="40" role="img">'
            f'<text class="empty" x="200" y="24" text-anchor="middle">{note}</text></svg>'
        )
    where, width, height = _positions(shape)
    marker = f"{element_id}-arrow"
    edges = [_edge(where[s], where[t], f"{s} \u2192 {t}", marker) for s, t in shape.edges]
    nodes = [_node(n, *where[n[0]], is_output=n[0] == shape.output) for n in shape.nodes]
    defs = (
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
        f'orient="auto-start-reverse"><path class="arrow" d="M0,0 L10,5 L0,10 z"/></marker></defs>'
    )
    return (
        f'<svg id="{element_id}" class="graph" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}" role="img" aria-labelledby="{element_id}-title">'
        f'<title id="{element_id}-title">the optimized graph</title>{defs}{_legend()}'
        + "".join(edges)
        + "".join(nodes)
        + "</svg>"
    )
