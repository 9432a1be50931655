"""The README's promises and the command line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _first_code_block() -> list[str]:
    text = (ROOT / "README.md").read_text("utf-8")
    block = re.search(r"```[^\n]*\n(.*?)```", text, re.DOTALL)
    assert block, "README.md has no code block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_opens_with_exactly_the_demo_and_test_commands():
    """The README's first code block is exactly two commands: the demo, then the tests."""
    assert _first_code_block() == ["python3 dev.py demo", "python3 dev.py test"]


def test_ci_runs_the_readme_test_command_verbatim():
    """.ci/run runs the README's test command, exactly as written."""
    script = (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    assert _first_code_block()[1] in [line.strip() for line in script]


def test_demo_runs_offline_optimises_and_says_the_llm_is_simulated():
    """`semgrad demo` succeeds offline, labels the LLM as simulated, prints every node's output, a score per
    iteration for 3 iterations, and the final instructions."""
    result = subprocess.run([sys.executable, "-m", "semgrad", "demo"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "SIMULATED" in result.stdout
    for node in ("hint_1", "hint_2", "answer"):
        assert f"{node}:" in result.stdout
    for i in (1, 2, 3):
        assert re.search(rf"iteration {i}: train \d\.\d\d, candidate validation \d\.\d\d", result.stdout)
    assert "Final instructions:" in result.stdout and "answer.instruction:" in result.stdout


def test_unknown_command_exits_non_zero_with_usage():
    """An unknown subcommand exits non-zero and says how to use the command."""
    result = subprocess.run([sys.executable, "-m", "semgrad", "frobnicate"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "usage:" in result.stderr


def test_the_readme_tour_runs_as_written():
    """The README's Python tour runs offline exactly as written and prints what the README shows after it."""
    from ._markdown import run_page

    namespace = run_page(ROOT / "README.md")
    assert namespace["trace"].ok and namespace["grads"].for_node("hint_1")[0].source == "answer"
    assert len(namespace["result"].history) == 2
