"""docs/your-own-system.md works as written: its files, written into a fresh folder, and its commands, run there
in order, offline, do what the page says."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from .conftest import ROOT, semgrad

PAGE = ROOT / "docs" / "your-own-system.md"
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def page_parts(text: str) -> tuple[dict[str, str], list[list[str]]]:
    """The files the page shows (a block with ``title="NAME"``) and its commands (``$ ...`` lines of its
    console blocks), in page order."""
    files, commands = {}, []
    for match in _FENCE.finditer(text):
        info, body = match.group(1), match.group(2)
        title = re.search(r'title="([^"]+)"', info)
        if title:
            files[title.group(1)] = body
        elif info.strip() == "console":
            commands += [shlex.split(line[2:]) for line in body.splitlines() if line.startswith("$ ")]
    return files, commands


def test_the_page_shows_each_piece_of_the_newcomers_path():
    """The page has the system, items, metric, LLM and sweep files, and the graph, run, resume, compare, sweep
    and report commands."""
    files, commands = page_parts(PAGE.read_text("utf-8"))
    assert sorted(files) == ["items.json", "my_llm.py", "my_metric.py", "my_sweep.toml", "my_system.py"]
    assert [c[:2] for c in commands] == [
        ["semgrad", "graph"], ["semgrad", "run"], ["semgrad", "run"], ["semgrad", "run"],
        ["semgrad", "compare"], ["semgrad", "sweep"], ["semgrad", "report"],
    ]  # fmt: skip
    assert "--resume" in commands[3] and "--llm" in commands[3] and "--metric" in commands[3]


def test_every_command_of_the_page_runs_in_a_folder_of_its_files(tmp_path):
    """Each command exits 0 in order; the own LLM and metric lift the test score from 0 to 1, the sweep writes
    a run per seed and optimizer, and the run prints the split the page names."""
    files, commands = page_parts(PAGE.read_text("utf-8"))
    for name, text in files.items():
        Path(tmp_path, name).write_text(text, "utf-8")
    outputs = []
    for command in commands:
        assert command[0] == "semgrad"
        result = semgrad(*command[1:], cwd=tmp_path)
        assert result.returncode == 0, (command, result.stderr)
        outputs.append(result.stdout)
    assert (
        "Split: train 5, validation 0, test 11" in outputs[1]
        and "Split: train 5, validation 0, test 11" in PAGE.read_text()
    )
    mine = json.loads((tmp_path / "runs" / "mine" / "results.json").read_text())["tasks"][0]
    assert mine["accuracy"]["initial_test"] == 0.0 and mine["accuracy"]["test"] == 1.0
    assert len(mine["iterations"]) == 6  # resumed up to --iterations 6
    compared = json.loads((tmp_path / "runs" / "compare" / "compare.json").read_text())
    assert [m["optimizer"] for m in compared["methods"]] == ["neighbor-sgd", "no-gradients", "textgrad"]
    swept = sorted(p.parent.name for p in (tmp_path / "runs" / "sweep").glob("*/results.json"))
    assert swept == [f"my_system-build__seed{s}__{o}" for s in (0, 1) for o in ("neighbor-sgd", "no-gradients")]
