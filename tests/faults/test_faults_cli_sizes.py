"""Fault injection, command-line sizes (engineer 15-files): `semgrad graph layered` with huge sizes.

What it tries, and the figure it holds -- *no silent failure, no endless run*: ``--width 100000 --depth 1000``
and other sizes past the bounds stop at once with exit 1 and one line giving the bounds; the largest allowed
graph is still drawn.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from semgrad.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_a_huge_layered_graph_is_refused_at_once_in_one_line():
    """`semgrad graph layered --width 100000 --depth 1000` exits 1 within the timeout, naming the bounds."""
    result = subprocess.run(
        [sys.executable, "-m", "semgrad", "graph", "layered", "--width", "100000", "--depth", "1000"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "at most" in result.stderr


@pytest.mark.parametrize(("width", "depth"), [(0, 1), (101, 1), (1, 101), (1, -1), (40, 40)])
def test_sizes_past_the_bounds_are_refused(capsys, width, depth):
    """Each side and the node count are bounded; nothing is printed to stdout when refused."""
    assert main(["graph", "layered", "--width", str(width), "--depth", str(depth)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "--width" in err


def test_the_largest_allowed_layered_graph_is_drawn(capsys):
    """width x depth = the node bound is still drawn as Mermaid."""
    from semgrad.cli import MAX_LAYERED_NODES

    assert (
        main(["graph", "layered", "--width", "10", "--depth", str(MAX_LAYERED_NODES // 10), "--format", "mermaid"]) == 0
    )
    assert capsys.readouterr().out.startswith("flowchart")
