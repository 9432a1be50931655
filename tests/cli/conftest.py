"""Fixtures for the command-line tests: a user's own system file, its items, and a subprocess runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SYSTEM = """
from semgrad.core import GraphBuilder


def build():
    b = GraphBuilder()
    q = b.input("question")
    plan = b.llm("plan", inputs=[q], instruction="Plan how to solve the problem.")
    check = b.llm("check", inputs=[q], instruction="Say what to watch out for.")
    b.llm("respond", inputs=[q, plan, check], instruction="Answer the question.")
    return b.build(output="respond")
"""


def items(n: int = 12) -> list[dict]:
    """`n` arithmetic items in the documented JSON Lines shape."""
    return [{"inputs": {"question": f"What is {i} plus {i}?"}, "target": str(2 * i)} for i in range(n)]


@pytest.fixture
def system_file(tmp_path: Path) -> Path:
    """A user's system: a Python file with build() -> (graph, params)."""
    path = tmp_path / "my_system.py"
    path.write_text(SYSTEM)
    return path


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    """Twelve items as JSON Lines."""
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items()))
    return path


def semgrad(*args: str, cwd: Path = ROOT, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the command line in a subprocess (stdout and stderr are pipes, not terminals)."""
    return subprocess.run(
        [sys.executable, "-m", "semgrad", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def one_line_error(result: subprocess.CompletedProcess, fragment: str) -> str:
    """Assert `result` failed with exactly one ``semgrad: error:`` line containing `fragment`; return it."""
    assert result.returncode != 0, result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("semgrad: error: ") and fragment in lines[0], lines[0]
    return lines[0]
