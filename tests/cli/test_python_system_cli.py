"""`semgrad run`, compare and the dry run on a system whose graph is recorded per item (issue #35, points 2 and 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import semgrad

#: A system recorded per item: the classify -> [lookup, one item in three] -> answer stand-in.
AGENT = """
from tests._graph_systems import GraphSystem, branching

support = GraphSystem("support", branching(3))
"""


#: A ReAct-style agent written with @semgrad.system: a tool, a bounded loop, an answering node named "reply".
REACT = """
import semgrad


def search(query):
    \"\"\"Look the question up in the help centre.\"\"\"
    return "Articles about: " + query


@semgrad.system
async def agent(ctx, question):
    notes = ""
    thought = ""
    for step in range(2):
        thought = await ctx.llm(
            "act", instruction="Think about the next step.", inputs={"question": question, "notes": notes}
        )
        if step == 0:
            notes = await ctx.tool("search", search, query=thought, deterministic=True)
    return await ctx.llm("reply", instruction="Reply to the question.", inputs={"question": question, "notes": notes})
"""


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    """The user's agent, a system recorded per item."""
    path = tmp_path / "my_agent.py"
    path.write_text(AGENT)
    return path


def test_run_trains_a_recorded_system_and_the_report_draws_each_samples_graph(tmp_path, agent_file, items_file):
    """`semgrad run my_agent.py:support --data items.jsonl` trains it (scores rise), and each test prediction
    carries the graph its run recorded, which the report draws."""
    result = semgrad("run", "my_agent.py:support", "--data", "items.jsonl", "--iterations", "2", "--out", "run",
                     cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    task = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"][0]
    assert task["accuracy"]["test"] > task["accuracy"]["initial_test"]
    assert task["graph"]["recorded"] is True and task["graph"]["system"] == "support"
    graphs = [p["graph"] for p in task["predictions"]]
    names = [{n["name"] for n in g["nodes"]} for g in graphs]
    assert {"classify", "answer"} <= set.intersection(*names)
    assert any("lookup" in n for n in names) and not all("lookup" in n for n in names)
    assert "lookup.instruction" in task["params"]["final"]
    html = (tmp_path / "run" / "report.html").read_text()
    assert "Recorded graphs" in html and html.count('<svg id="task-0-recorded-') == len(graphs)


def test_a_recorded_systems_run_resumes_to_the_uninterrupted_result(tmp_path, agent_file, items_file):
    """A run stopped by --max-calls and resumed ends with the params and scores of one never stopped."""
    common = ("--data", "items.jsonl", "--iterations", "2")
    whole = semgrad("run", "my_agent.py:support", *common, "--out", "whole", cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    cut = semgrad("run", "my_agent.py:support", *common, "--out", "cut", "--max-calls", "30", cwd=tmp_path)
    assert cut.returncode != 0 and "budget" in cut.stderr
    resumed = semgrad("run", "my_agent.py:support", "--resume", "--out", "cut", "--max-calls", "500", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    a, b = (json.loads((tmp_path / d / "results.json").read_text())["tasks"][0] for d in ("whole", "cut"))
    assert a["params"] == b["params"] and a["accuracy"] == b["accuracy"]


def test_the_dry_run_of_a_recorded_system_says_it_is_an_estimate(tmp_path, agent_file, items_file):
    """--dry-run of a system written as Python labels its counts an estimate and keeps --max-calls a hard cap."""
    result = semgrad("run", "my_agent.py:support", "--data", "items.jsonl", "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "an estimate" in result.stdout and "--max-calls stays a hard cap" in result.stdout
    graph = semgrad("run", "my_system.py:build", "--data", "items.jsonl", "--dry-run", cwd=tmp_path)
    assert "an estimate" not in graph.stdout


def test_compare_runs_every_optimizer_on_a_recorded_system(tmp_path, agent_file, items_file):
    """`semgrad compare` trains the recorded system with neighbor-sgd and the baselines on the same splits."""
    result = semgrad("compare", "my_agent.py:support", "--data", "items.jsonl", "--optimizers",
                     "neighbor-sgd,tgd,optoprime", "--iterations", "1", "--out", "cmp", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    saved = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [m["optimizer"] for m in saved["methods"]] == ["neighbor-sgd", "tgd", "optoprime"]


def test_a_react_agent_file_trains_in_the_simulated_world_and_sweeps(tmp_path, items_file):
    """`semgrad run react.py:agent` trains a @semgrad.system agent with a tool offline (its answering node, named
    by its recorded run, gets the simulated answers: scores rise), and a sweep spec runs it too."""
    (tmp_path / "react.py").write_text(REACT)
    result = semgrad("run", "react.py:agent", "--data", "items.jsonl", "--iterations", "3", "--out", "run",
                     cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    task = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"][0]
    assert task["accuracy"]["test"] > task["accuracy"]["initial_test"]
    kinds = {n["kind"] for p in task["predictions"] for n in p["graph"]["nodes"]}
    assert kinds == {"input", "llm", "tool"}
    (tmp_path / "sweep.toml").write_text(
        'system = "react.py:agent"\ndata = "items.jsonl"\nseeds = [0]\noptimizers = ["neighbor-sgd"]\n'
        "[settings]\niterations = 1\n"
    )
    swept = semgrad("sweep", "sweep.toml", "--local", "--out", "sw", cwd=tmp_path)
    assert swept.returncode == 0, swept.stderr
    (folder,) = [p for p in (tmp_path / "sw").iterdir() if (p / "results.json").exists()]
    assert json.loads((folder / "results.json").read_text())["tasks"][0]["graph"]["recorded"] is True


def test_run_trains_a_python_agent_with_a_tool_under_gepa_and_pareto_sgd(tmp_path, items_file):
    """`semgrad run react.py:agent --optimizer gepa` (and pareto-sgd) trains a @semgrad.system agent with a tool
    offline: the run ends, its instruction is rewritten and the test score rises."""
    (tmp_path / "react.py").write_text(REACT)
    for optimizer in ("gepa", "pareto-sgd"):
        result = semgrad("run", "react.py:agent", "--data", "items.jsonl", "--optimizer", optimizer,
                         "--iterations", "3", "--out", optimizer, cwd=tmp_path)  # fmt: skip
        assert result.returncode == 0, result.stderr
        task = json.loads((tmp_path / optimizer / "results.json").read_text())["tasks"][0]
        assert task["accuracy"]["test"] > task["accuracy"]["initial_test"], optimizer
        assert task["params"]["final"] != task["params"]["initial"]


def test_a_runs_tool_calls_are_in_its_results_ledger_line_and_report_never_as_llm_calls(tmp_path, items_file):
    """`semgrad run` of an agent that calls a tool counts the tool calls in results.json's counters, the ledger,
    the live line and the report's calls table, apart from the LLM calls."""
    (tmp_path / "react.py").write_text(REACT)
    result = semgrad("run", "react.py:agent", "--data", "items.jsonl", "--iterations", "1", "--out", "run",
                     cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    counters = saved["counters"]
    assert counters["tool_calls"] > 0 and counters["tool_errors"] == 0
    assert "tool" not in counters["calls_by_purpose"] and counters["calls"] == sum(
        counters["calls_by_purpose"].values()
    )
    assert f"{counters['tool_calls']} tool calls" in result.stdout + result.stderr
    ledger = (tmp_path / "run" / "ledger.json").read_text()
    assert f'["tool_calls", {counters["tool_calls"]}]' in ledger.replace(" ", "").replace(",", ", ")
    html = (tmp_path / "run" / "report.html").read_text()
    assert f"Tool calls</th><td>{counters['tool_calls']} (not LLM calls)" in html
