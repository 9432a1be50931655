"""Numbers that agree (#33.9): a progress total never passed, after a resume too; the first line before the
slow planning; a quiet run still naming its result and its folder."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

from returns.result import Success

from semgrad.cli import EXIT_BUDGET
from semgrad.core import LLMRequest, LLMResponse, Message
from semgrad.effects import FitProgress
from semgrad.experiments._progress import RunProgress

from .conftest import ROOT, SYSTEM, semgrad

REQUEST = LLMRequest((Message("user", "hi"),))
NOTICE = "The LLM is SIMULATED"


def _done_and_totals(text: str) -> list[tuple[int, int]]:
    """Every ``done/total calls`` a progress output shows."""
    return [
        (int(a.replace(",", "")), int(b.replace(",", "")))
        for a, b in re.findall(r"([\d,]+)/([\d,]+)(?: \(\+[\d,]+ beyond the plan\))? calls", text)
    ]


def test_calls_beyond_the_plan_never_show_more_done_than_the_total():
    """Past the plan (an upper bound: repairs and a resumed forward come on top) the line shows the total as done
    and the calls beyond it apart, never 43/40."""
    out = io.StringIO()
    progress = RunProgress(out, planned=40, already=38, clock=iter(range(0, 1000, 10)).__next__)
    for _ in range(5):
        progress(REQUEST, Success(LLMResponse("ok", {}, "m")))
    progress.on_progress("gsm8k", FitProgress(4, 4, "evaluating", 5))
    progress.close()
    text = out.getvalue()
    assert "43/40" not in text and "40/40 (+3 beyond the plan) calls" in text, text
    assert all(done <= total for done, total in _done_and_totals(text))


def test_a_resumed_run_counts_the_calls_made_against_the_whole_plan(tmp_path, system_file, items_file):
    """A run cut by its budget and resumed: the second process starts from the calls the first made, counts
    against the same whole-plan total, and never shows more done than that total."""
    out = tmp_path / "run"
    common = ("--iterations", "2", "--out", str(out))
    first = semgrad("run", str(system_file), "--data", str(items_file), "--max-calls", "30", *common)
    assert first.returncode == EXIT_BUDGET, first.stderr
    totals = {total for _, total in _done_and_totals(first.stderr)}
    assert len(totals) == 1, first.stderr
    plan = totals.pop()
    resumed = semgrad("run", str(system_file), "--resume", "--out", str(out), "--max-calls", "100000")
    assert resumed.returncode == 0, resumed.stderr
    shown = _done_and_totals(resumed.stderr)
    assert shown and {total for _, total in shown} == {plan}, resumed.stderr
    assert shown[0][0] >= 30 and all(done <= total for done, total in shown), resumed.stderr


def test_the_first_line_comes_before_the_plan_loads_the_tasks(tmp_path, system_file, items_file):
    """The run's first line (its folder) is printed before the plan's slow work: before the plan builds the
    user's graph (its build() says so on stdout), and before the split line, which needs the tasks loaded."""
    system_file.write_text(
        SYSTEM + "\n_build = build\n\ndef build():\n    print('building', flush=True)\n    return _build()\n"
    )
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "semgrad", "run", str(system_file), "--data", str(items_file), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream: the lines in the order they were written
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == f"Writing the run in {out}", lines[:3]
    assert "building" in lines and any(line.startswith("Split:") for line in lines), lines[:4]


def test_quiet_still_prints_the_result_and_the_run_folder(tmp_path, system_file, items_file):
    """`-q` drops the progress, and still prints each task's scores and the files (so the folder) written."""
    out = tmp_path / "run"
    result = semgrad("run", str(system_file), "--data", str(items_file), "--iterations", "1", "-q", "--out", str(out))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any("my_system.py:build: train " in line and " test " in line for line in lines), result.stdout
    assert lines[-1].startswith(f"Wrote {out / 'results.json'}"), result.stdout
    assert "iteration" not in result.stderr and NOTICE not in result.stderr


def test_iterations_are_numbered_alike_in_the_api_the_cli_and_the_report(tmp_path, system_file, items_file):
    """One run: `IterationRecord.iteration`, the `FitProgress` of each iteration's phases, the CLI's lines and
    the report's results.json all number the iterations 1, 2, ..., n."""
    import json

    from semgrad.backends import fake
    from semgrad.core import GraphBuilder, optim
    from semgrad.effects import fit_sync
    from semgrad.report._fit import fit_results

    b = GraphBuilder()
    b.llm("answer", inputs=[b.input("question")], instruction="Answer.")
    graph, params = b.build(output="answer")
    items = [{"inputs": {"question": f"{i}?"}, "target": str(i), "id": i} for i in range(4)]
    events: list[FitProgress] = []
    result = fit_sync(
        graph, params, optim.neighbor_sgd(k=1), train=items[:2], validation=items[2:], llm=fake.HashLLM(),
        iterations=3, on_progress=events.append,
    )  # fmt: skip
    api = [r.iteration for r in result.history]
    assert api == [1, 2, 3]
    for phase in ("forward", "optimize", "done"):
        assert [e.iteration for e in events if e.phase == phase] == api, phase
    assert [e.iteration for e in events if e.phase == "scoring initial params"] == [0]
    assert [i["iteration"] for i in fit_results(result, graph=graph)["tasks"][0]["iterations"]] == api

    out = tmp_path / "run"
    run = semgrad("run", str(system_file), "--data", str(items_file), "--iterations", "2", "--out", str(out))
    assert run.returncode == 0, run.stderr
    cli = sorted({int(n) for n in re.findall(r"iteration (\d+)/2 ", run.stderr)})
    report = [i["iteration"] for i in json.loads((out / "results.json").read_text())["tasks"][0]["iterations"]]
    assert cli == report == [1, 2], (cli, report)


def test_a_simulated_run_shows_no_tokens_the_same_way_everywhere(tmp_path, system_file, items_file):
    """On the simulated LLM tokens are none, not counted nor estimated, said one way: the progress and end
    lines, results.json (null), the report, the comparison's table and page, and the sweep page."""
    import json

    from semgrad.report._tokens import SIMULATED_TOKENS
    from semgrad.sweeps._page import render_sweep

    out = tmp_path / "run"
    run = semgrad("run", str(system_file), "--data", str(items_file), "--iterations", "1", "--out", str(out))
    assert run.returncode == 0, run.stderr
    progress = [line for line in run.stderr.splitlines() if " calls, " in line]
    assert progress and all(f"tokens {SIMULATED_TOKENS}" in line for line in progress), run.stderr
    assert " tokens," not in run.stderr
    results = json.loads((out / "results.json").read_text())
    assert (results["tokens"]["input"], results["tokens"]["output"]) == (None, None)
    assert f"Tokens</th><td>{SIMULATED_TOKENS}<" in (out / "report.html").read_text()

    where = tmp_path / "cmp"
    compare = semgrad("compare", str(system_file), "--data", str(items_file), "--iterations", "1", "--out", str(where))
    assert compare.returncode == 0, compare.stderr
    assert "neighbor-sgd: my_system.py:build done 1/1 (" in compare.stderr  # named and numbered as run names it
    table = [line for line in compare.stdout.splitlines() if line.startswith("| ")]
    assert "| tokens |" in table[0] and "tokens in" not in table[0]
    assert all(SIMULATED_TOKENS in row for row in table[2:]) and len(table) > 2, compare.stdout
    page = (where / "compare.html").read_text()
    assert SIMULATED_TOKENS in page and "estimated at four characters" not in page

    row = {"name": "r", "task": "t", "seed": 0, "optimizer": "o", "calls": 3, "tokens": results["tokens"]}
    sweep = render_sweep({"sweep": {"name": "s"}, "simulated": True, "runs": [row]})
    assert f">{SIMULATED_TOKENS}</td>" in sweep


def test_a_sweep_says_each_finished_run_with_runs_and_calls_so_far(tmp_path, system_file, items_file):
    """`semgrad sweep` starts with a line at once, then prints a line per finished run with runs done / in all
    and the sweep's calls so far (each line's count is the sum of the runs' calls up to it); -q keeps only
    where the result is."""
    import json

    spec = tmp_path / "grid.toml"
    spec.write_text(
        'system = "my_system.py:build"\ndata = "items.jsonl"\nseeds = [0, 1]\noptimizers = ["neighbor-sgd"]\n'
        "[settings]\niterations = 1\n"
    )
    out = tmp_path / "sweep"
    result = semgrad("sweep", str(spec), "--local", "--out", str(out), "--max-parallel", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == f"Sweep grid: 2 runs in {out}", lines[:2]
    line = r"^\[(\d)/2\] \S+: started, test \S+, (\d+) calls.*\(sweep so far: (\d)/2 runs, ([\d,]+) calls\)$"
    done = re.findall(line, result.stderr, re.M)
    assert [(a, c) for a, _, c, _ in done] == [("1", "1"), ("2", "2")], result.stderr
    first, second = (int(calls) for _, calls, _, _ in done)
    assert [int(total.replace(",", "")) for *_, total in done] == [first, first + second]
    rows = json.loads((out / "sweep.json").read_text())["runs"]
    assert sum(row["calls"] for row in rows) == first + second
    quiet = semgrad("sweep", str(spec), "--local", "--out", str(out), "-q")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert quiet.stdout.strip() == f"Wrote {out / 'sweep.json'} and {out / 'sweep.html'}"


def test_the_compare_chart_numbers_iterations_as_the_report_and_labels_the_final_score():
    """compare.html's chart numbers a 2-iteration run's points 1 and 2, as a run's report does, and calls the
    third (the final params' score) final, not iteration 3."""
    from semgrad.report._compare import compare_chart

    svg = compare_chart({"tgd": [0.25, 0.5, 0.75]}, iterations=2)
    assert "tgd, iteration 1: 25.0 %" in svg and "tgd, iteration 2: 50.0 %" in svg
    assert "tgd, final: 75.0 %" in svg and "iteration 3" not in svg and ">final</text>" in svg
