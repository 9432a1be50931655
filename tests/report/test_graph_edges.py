"""The graph picture routes every edge around the boxes it does not connect, and shows each node's output."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.report import render_report
from semgrad.report._graph import graph_svg

from .conftest import make_results, make_task, parse

SVG = "{http://www.w3.org/2000/svg}"

#: The review -> extract -> judge -> answer pipeline of issue 33, with a review -> judge shortcut.
SHORTCUT = {
    "nodes": [
        {"name": "review", "kind": "input"},
        {"name": "extract", "kind": "llm"},
        {"name": "judge", "kind": "llm"},
        {"name": "answer", "kind": "function"},
    ],
    "edges": [["review", "extract"], ["extract", "judge"], ["review", "judge"], ["judge", "answer"]],
    "output": "answer",
}

Box = tuple[float, float, float, float]


def boxes_and_pieces(svg: str) -> tuple[dict[str, Box], list[tuple[str, str, list[list[tuple[float, float]]]]]]:
    """Each node's box (x0, y0, x1, y1) and each edge's pieces (a line's or a cubic curve's control points)."""
    root = ET.fromstring(svg)
    boxes: dict[str, Box] = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") != "node":
            continue
        shape = next(e for e in group if e.tag in (f"{SVG}rect", f"{SVG}polygon") and e.get("class") != "output-ring")
        if shape.tag == f"{SVG}rect":
            x, y, w, h = (float(shape.get(a)) for a in ("x", "y", "width", "height"))
            boxes[group.get("data-node")] = (x, y, x + w, y + h)
        else:
            points = [tuple(map(float, p.split(","))) for p in shape.get("points").split()]
            xs, ys = [p[0] for p in points], [p[1] for p in points]
            boxes[group.get("data-node")] = (min(xs), min(ys), max(xs), max(ys))
    edges = []
    for path in root.iter(f"{SVG}path"):
        if path.get("class") != "edge":
            continue
        pieces, here = [], None
        for command, numbers in re.findall(r"([MLC])([^MLC]*)", path.get("d")):
            points = [tuple(map(float, p.split(","))) for p in numbers.split()]
            if command != "M":
                pieces.append([here, *points])
            here = points[-1]
        edges.append((path.get("data-source"), path.get("data-target"), pieces))
    return boxes, edges


def crossings(svg: str) -> list[tuple[str, str, str]]:
    """``(source, target, box)`` for every edge piece whose control points' hull may enter a box it does not connect.

    A line or cubic curve lies inside the convex hull of its control points, so a hull's bounding
    rectangle that does not meet a box's interior proves the piece does not cross it.
    """
    boxes, edges = boxes_and_pieces(svg)
    found = []
    for source, target, pieces in edges:
        for piece in pieces:
            xs, ys = [p[0] for p in piece], [p[1] for p in piece]
            for name, (x0, y0, x1, y1) in boxes.items():
                if name in (source, target):
                    continue
                if min(xs) < x1 and max(xs) > x0 and min(ys) < y1 and max(ys) > y0:
                    found.append((source, target, name))
    return found


@st.composite
def dags(draw: st.DrawFn) -> dict:
    """A valid graph: nodes in a topological order, each edge from an earlier node to a later one."""
    n = draw(st.integers(2, 12))
    names = [f"n{i}" for i in range(n)]
    order = draw(st.permutations(names))
    kinds = draw(st.lists(st.sampled_from(["input", "param", "llm", "function"]), min_size=n, max_size=n))
    pairs = [(a, b) for i, a in enumerate(order) for b in order[i + 1 :]]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=3 * n, unique=True)) if pairs else []
    listed = draw(st.permutations(names))
    return {
        "nodes": [{"name": name, "kind": kinds[names.index(name)]} for name in listed],
        "edges": [list(edge) for edge in edges],
        "output": order[-1],
    }


def test_the_shortcut_passes_beside_the_box_it_skips():
    """review -> judge is routed around extract, and every edge is drawn (one path per edge)."""
    svg = graph_svg(SHORTCUT, element_id="g")
    _, edges = boxes_and_pieces(svg)
    assert sorted((s, t) for s, t, _ in edges) == sorted(tuple(e) for e in SHORTCUT["edges"])
    assert crossings(svg) == []


@settings(max_examples=150, deadline=None)
@given(dags())
def test_no_edge_crosses_a_box_it_does_not_connect(graph):
    """For any valid graph, no piece of any edge's path enters the box of a node other than its two ends."""
    svg = graph_svg(graph, element_id="g")
    boxes, edges = boxes_and_pieces(svg)
    assert set(boxes) == {n["name"] for n in graph["nodes"]}
    assert len(edges) == len(graph["edges"])
    assert crossings(svg) == []


@settings(max_examples=30, deadline=None)
@given(dags())
def test_the_drawing_is_deterministic(graph):
    """The same graph gives the same picture, byte for byte."""
    assert graph_svg(graph, element_id="g") == graph_svg(graph, element_id="g")


def test_each_prediction_shows_every_node_s_output():
    """A prediction recording its nodes' values shows each, named, above the output; one without shows the output."""
    task = make_task("mine", None, 0.5)
    task["graph"] = SHORTCUT
    task["predictions"][0]["nodes"] = {"extract": "the claim: <b>x</b>", "judge": "supported"}
    page = parse(render_report(make_results([task], task="mine")))
    node_names = [a.get("data-node") for tag, a in page.tags if tag == "div" and a.get("class") == "node-output"]
    assert node_names == ["extract", "judge", "answer"]
    text = page.all_text()
    assert "the claim: <b>x</b>" in text and "supported" in text
    assert "5" in text and "(A)" in text  # the older predictions, without nodes, still show their output


def test_the_paper_graph_s_skip_edge_runs_between_the_two_hints():
    """In the paper graph, question -> answer passes between hint_1 and hint_2, which stay in their listed order."""
    from .conftest import _graph

    boxes, edges = boxes_and_pieces(graph_svg(_graph(), element_id="g"))
    (skip,) = [pieces for source, target, pieces in edges if (source, target) == ("question", "answer")]
    xs = [x for piece in skip for x, _ in piece]
    assert boxes["hint_1"][2] < min(xs) and max(xs) < boxes["hint_2"][0]
