"""Graphs the runner tests share."""

from __future__ import annotations

from typing import Any

from semgrad.core import GraphBuilder


def chain_graph(depth: int) -> tuple[Any, Any]:
    """``q -> n0 -> n1 -> ...``: one request per sample and level."""
    b = GraphBuilder()
    previous = b.input("q")
    for i in range(depth):
        previous = b.llm(f"n{i}", inputs=[previous], instruction="x")
    return b.build(output=f"n{depth - 1}")
