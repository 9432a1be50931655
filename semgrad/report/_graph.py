"""The graph as a picture: an inline SVG laid out here, without Graphviz or script.

Theory of operation: nodes are put in layers by the longest path from a node with
no inputs (so every edge points down). An edge that skips layers gets a lane (a
narrow gap between boxes) in each layer it passes, so it is never drawn across a
box it does not connect. Within a layer, boxes and lanes are ordered by the mean
slot of their neighbours in the layer above, then in a few sweeps up and down by
those below and above, to untangle edges (ties keep the listed order); each layer
is centred.
Edges run from the bottom of the source to the top of the target: a curve within
each band between two layers, a straight run down each lane, and an arrow. Node kinds have the shapes and
colours of `semgrad.diagrams`: inputs are stadiums, params dashed notes, LLM
nodes rounded boxes, functions parallelograms; the output has a second border.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from typing import Any

import attrs

from ._format import as_list, as_mapping, as_text, esc

__all__ = ["GraphShape", "graph_shape", "graph_svg", "longest_path_layers"]

_BOX_W, _BOX_H, _H_GAP, _V_GAP, _MARGIN, _LEGEND_H = 168, 40, 28, 56, 20, 34
_MAX_NODES = 400
#: A lane: the gap an edge takes through a layer it skips, and the space between two lanes.
_LANE_W, _LANE_GAP = 16, 6
#: At most this many boxes and lanes are drawn (a huge graph says so instead).
_MAX_ITEMS = 4 * _MAX_NODES
#: Rounds of reordering the layers (up, then down) after the first placement, to untangle edges.
_SWEEPS = 2
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


@attrs.frozen
class _Layout:
    """Where everything goes: each box's top-left corner, each edge's path, the picture's size."""

    boxes: dict[str, tuple[float, float]]
    paths: tuple[str, ...]
    width: float
    height: float


def _ordered(
    row: list[tuple[Any, ...]],
    fixed: list[tuple[Any, ...]],
    neighbours: dict[tuple[Any, ...], list[tuple[Any, ...]]],
    *,
    lanes_in_middle: bool,
) -> list[tuple[Any, ...]]:
    """`row` sorted by the mean slot of each item's neighbours in the `fixed` row beside it.

    An item without neighbours there keeps its slot as its key. Ties keep their order, except
    that with `lanes_in_middle` the lanes of a tie go between its boxes (a first placement).
    """
    slot = {item: i for i, item in enumerate(fixed)}
    keys: dict[tuple[Any, ...], float] = {}
    for i, item in enumerate(row):
        found = [slot[u] for u in neighbours.get(item, ()) if u in slot]
        keys[item] = sum(found) / len(found) if found else float(i)
    boxes: dict[float, int] = {}
    for item in row:
        if item[0] == "n":
            boxes[keys[item]] = boxes.get(keys[item], 0) + 1
    rank: dict[tuple[Any, ...], float] = {}
    seen: dict[float, int] = {}
    for i, item in enumerate(row):
        key = keys[item]
        if not lanes_in_middle:
            rank[item] = i
        elif item[0] == "n":
            rank[item] = 2.0 * seen.get(key, 0)
            seen[key] = seen.get(key, 0) + 1
        else:
            rank[item] = boxes.get(key, 0) - 0.5
    return sorted(row, key=lambda item: (keys[item], rank[item]))


def _rows(shape: GraphShape) -> tuple[dict[str, int], list[list[tuple[Any, ...]]]]:
    """The layers' items in drawing order: nodes ``("n", name)`` and lanes ``("e", edge, layer)``.

    An edge from layer a to layer b > a + 1 gets a lane in every layer between (a gap
    where no box is), so that it passes between boxes, never through one. Items are
    first ordered by the mean slot of their neighbours in the layer above (ties keep
    the listed order, with the lanes of a tie in its middle), then `_SWEEPS` times by
    their neighbours below (bottom up) and above (top down).
    """
    layers = longest_path_layers([n[0] for n in shape.nodes], shape.edges)
    rows: list[list[tuple[Any, ...]]] = [[] for _ in range(max(layers.values(), default=0) + 1)]
    for name in layers:
        rows[layers[name]].append(("n", name))
    above: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for index, (source, target) in enumerate(shape.edges):
        first, last = layers[source], layers[target]
        if last <= first:
            continue  # only on a cycle, which a valid graph never has
        chain = [("n", source), *(("e", index, k) for k in range(first + 1, last)), ("n", target)]
        for k in range(first + 1, last):
            rows[k].append(("e", index, k))
        for upper, lower in itertools.pairwise(chain):
            above.setdefault(lower, []).append(upper)
    below: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for lower, uppers in above.items():
        for upper in uppers:
            below.setdefault(upper, []).append(lower)
    for k in range(1, len(rows)):
        rows[k] = _ordered(rows[k], rows[k - 1], above, lanes_in_middle=True)
    for _ in range(_SWEEPS):
        for k in range(len(rows) - 2, -1, -1):
            rows[k] = _ordered(rows[k], rows[k + 1], below, lanes_in_middle=False)
        for k in range(1, len(rows)):
            rows[k] = _ordered(rows[k], rows[k - 1], above, lanes_in_middle=False)
    return layers, rows


def _gap(left: tuple[Any, ...], right: tuple[Any, ...]) -> float:
    return _LANE_GAP if left[0] == right[0] == "e" else _H_GAP


def _row_width(row: list[tuple[Any, ...]]) -> float:
    widths = sum(_BOX_W if item[0] == "n" else _LANE_W for item in row)
    return widths + sum(_gap(a, b) for a, b in itertools.pairwise(row))


def _band(x1: float, y1: float, x2: float, y2: float) -> str:
    """A curve from (x1, y1) down to (x2, y2) that stays between the two heights (its control points do)."""
    middle = (y1 + y2) / 2
    return f" C{x1:.1f},{middle:.1f} {x2:.1f},{middle:.1f} {x2:.1f},{y2:.1f}"


def _layout(shape: GraphShape) -> _Layout | None:
    """Boxes in layers and edges routed between them; None when the drawing would be too large.

    Every edge runs from the bottom middle of its source to the top middle of its
    target. Between two layers it is a curve inside the band between them (where no
    box is); through a layer it skips it runs straight down its own lane. So no edge
    touches a box other than its two ends.
    """
    layers, rows = _rows(shape)
    if sum(len(row) for row in rows) > _MAX_ITEMS:
        return None
    widest = max((_row_width(row) for row in rows), default=_BOX_W)
    width = max(2 * _MARGIN + widest, 2 * _MARGIN + len(_KINDS) * _LEGEND_STEP)
    top = [_LEGEND_H + _MARGIN + k * (_BOX_H + _V_GAP) for k in range(len(rows))]
    boxes: dict[str, tuple[float, float]] = {}
    lanes: dict[tuple[Any, ...], float] = {}
    for k, row in enumerate(rows):
        x = (width - _row_width(row)) / 2
        for i, item in enumerate(row):
            if i:
                x += _gap(row[i - 1], item)
            if item[0] == "n":
                boxes[item[1]] = (x, top[k])
                x += _BOX_W
            else:
                lanes[item] = x + _LANE_W / 2
                x += _LANE_W
    paths = []
    for index, (source, target) in enumerate(shape.edges):
        (sx, sy), (tx, ty) = boxes[source], boxes[target]
        x, y = sx + _BOX_W / 2, sy + _BOX_H
        path = f"M{x:.1f},{y:.1f}"
        for k in range(layers[source] + 1, layers[target]):
            lane = lanes[("e", index, k)]
            path += _band(x, y, lane, top[k]) + f" L{lane:.1f},{top[k] + _BOX_H:.1f}"
            x, y = lane, top[k] + _BOX_H
        paths.append(path + _band(x, y, tx + _BOX_W / 2, ty - 2))
    height = _LEGEND_H + 2 * _MARGIN + len(rows) * (_BOX_H + _V_GAP) - _V_GAP
    return _Layout(boxes, tuple(paths), width, height)


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
    return f'<g class="node" data-node="{esc(name)}"><title>{esc(tip)}</title>{ring}{_shape(kind, x, y)}{text}</g>'


def _edge(path: str, source: str, target: str, marker: str) -> str:
    title = esc(f"{source} \u2192 {target}")
    return (
        f'<path class="edge" d="{path}" marker-end="url(#{marker})" data-source="{esc(source)}" '
        f'data-target="{esc(target)}"><title>{title}</title></path>'
    )


def _legend() -> str:
    parts = []
    for i, kind in enumerate(_KINDS):
        x = _MARGIN + i * _LEGEND_STEP
        parts.append(f'{_shape(kind, x, 6, 26, 16)}<text class="legend" x="{x + 32}" y="19">{kind}</text>')
    return "".join(parts)


def _note(note: str, element_id: str) -> str:
    return (
        f'<svg id="{element_id}" class="graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 400 40" '
        f'width="400" height="40" role="img">'
        f'<text class="empty" x="200" y="24" text-anchor="middle">{note}</text></svg>'
    )


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
        return _note(note, element_id)
    layout = _layout(shape)
    if layout is None:
        return _note(f"graph too large to draw ({len(shape.nodes)} nodes)", element_id)
    width, height = layout.width, layout.height
    marker = f"{element_id}-arrow"
    edges = [_edge(path, s, t, marker) for path, (s, t) in zip(layout.paths, shape.edges, strict=True)]
    nodes = [_node(n, *layout.boxes[n[0]], is_output=n[0] == shape.output) for n in shape.nodes]
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
