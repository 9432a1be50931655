"""`semgrad sweep --local`: the grid in threads of this process, resumable, with one combined report."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from semgrad.cli import main
from semgrad.sweeps import SweepError, load_spec, render_sweep, run_sweep

from ._helpers import DATA, CallLog, chat_server, grid_spec, logged_calls, sweep_json, write_spec


def test_the_combined_report_lists_every_run_with_scores_and_costs(local_sweep):
    """sweep.json has 12 runs in grid order, each with accuracies, calls and tokens; averages say how many tasks
    they cover, and only the paper's figures of the same quantity (GSM8K's, not a BBH category's) are kept."""
    summary = sweep_json(local_sweep / "out")
    runs = summary["runs"]
    assert len(runs) == 12 and summary["totals"]["runs"] == 12 and summary["totals"]["failed"] == 0
    assert [r["name"] for r in runs[:2]] == ["bbh-navigate__seed0__neighbor-sgd", "bbh-navigate__seed0__tgd"]
    for run in runs:
        assert set(run["accuracy"]) == {"train", "validation", "test", "initial_test"}
        assert all(0 <= run["accuracy"][p] <= 1 for p in ("train", "validation", "test"))
        assert run["calls"] > 0 and run["iterations"] == 2 and run["error"] is None and run["test_items"] == 4
        assert run["calls"] == len(logged_calls(local_sweep / "out" / run["name"]))
    assert summary["totals"]["calls"] == sum(r["calls"] for r in runs)
    assert set(summary["averages"]) == {"neighbor-sgd", "tgd"}
    assert set(summary["averages"]["tgd"]) == {"bbh_nlp", "bbh_algorithmic", "gsm8k", "overall"}
    assert summary["averages"]["tgd"]["bbh_nlp"] is None  # both BBH tasks here are algorithmic
    assert set(summary["averages_unweighted"]) == {"neighbor-sgd", "tgd"}
    assert summary["published"] == {"gsm8k": 0.932, "textgrad_gsm8k": 0.782} and summary["simulated"] is True
    assert summary["average_tasks"]["bbh_algorithmic"] == {"tasks": 2, "of": 15}
    assert summary["average_tasks"]["overall"] == {"tasks": 3, "of": None}
    navigate = [r["accuracy"]["test"] for r in runs if r["task"] == "bbh:navigate" and r["optimizer"] == "tgd"]
    assert summary["by_task"]["bbh:navigate"]["tgd"] == pytest.approx(sum(navigate) / 2)
    assert "data_dir" not in json.dumps(summary)


def test_the_page_has_the_table_the_averages_and_a_chart(local_sweep):
    """sweep.html shows each run, the averages beside the published figures of the same quantity (an average of
    2 of 15 BBH algorithmic tasks is marked not comparable, with no figure), and an SVG chart; no script, and no
    link but one to each run's report."""
    page = (local_sweep / "out" / "sweep.html").read_text("utf-8")
    assert page.count('<td class="text"><a href="gsm8k__seed') == 4
    assert "93.2 %" in page and "78.2 %" in page and "82.5 %" not in page and "85.6 %" not in page
    assert "2 of 15 tasks" in page and "not comparable" in page and "BBH NLP" not in page
    assert "<svg" in page and "SIMULATED" in page
    assert "<script" not in page.lower() and not re.search(r"src=", page)
    names = [run["name"] for run in sweep_json(local_sweep / "out")["runs"]]
    assert re.findall(r'href="([^"]*)"', page) == [f"{name}/report.html" for name in names]
    assert all((local_sweep / "out" / name / "report.html").is_file() for name in names)


def test_a_rerun_skips_finished_runs_and_makes_no_call(local_sweep, tmp_path):
    """Running the same sweep again skips every run, makes no call, and writes an equal sweep.json."""
    before = sweep_json(local_sweep / "out")
    logs = {p.parent.name: p.read_text() for p in (local_sweep / "out").glob("*/calls.log")}
    result = run_sweep(local_sweep / "grid.toml", local_sweep / "out", local=True, instrument=CallLog())
    assert {o.status for o in result.outcomes} == {"skipped"}
    assert {p.parent.name: p.read_text() for p in (local_sweep / "out").glob("*/calls.log")} == logs
    assert sweep_json(local_sweep / "out") == before


def test_an_interrupted_run_resumes_from_its_checkpoint(tmp_path):
    """A run with checkpoints but no results resumes: the iterations it finished make no new calls."""
    grid = {"tasks": ["bbh:navigate"], "seeds": [0], "optimizers": ["tgd"]}
    fresh = run_sweep(grid_spec(tmp_path / "fresh.toml", grid), tmp_path / "fresh", local=True, instrument=CallLog())
    assert fresh.outcomes[0].status == "started"
    short = run_sweep(
        grid_spec(tmp_path / "short.toml", grid, iterations=1), tmp_path / "out", local=True, instrument=CallLog()
    )
    run = tmp_path / "out" / short.outcomes[0].name
    (run / "results.json").unlink()  # interrupted after its first checkpoint
    first = logged_calls(run)
    result = run_sweep(grid_spec(tmp_path / "long.toml", grid), tmp_path / "out", local=True, instrument=CallLog())
    assert result.outcomes[0].status == "resumed"
    results = json.loads((run / "results.json").read_text())
    history = results["tasks"][0]["iterations"]
    assert len(history) == 2
    expected = json.loads((tmp_path / "fresh" / run.name / "results.json").read_text())
    assert history == expected["tasks"][0]["iterations"]
    assert results["tasks"][0]["accuracy"] == expected["tasks"][0]["accuracy"]
    # the resumed process repeated neither the initial scoring nor iteration 1 (fit counts both in history[0]),
    # nor the evaluation of the initial params (kept in ledger.json); results.json counts both processes
    resumed_calls = len(logged_calls(run)) - len(first)
    fresh_evaluation = fresh.outcomes[0].calls - sum(sum(h["calls"].values()) for h in history)
    assert 0 <= resumed_calls - sum(history[1]["calls"].values()) < fresh_evaluation
    assert sum(results["calls"]["by_purpose"].values()) == len(logged_calls(run))


def test_a_run_that_fails_does_not_stop_the_others(tmp_path):
    """One failing run is reported (one line, in sweep.json and escaped in sweep.html); the others finish."""

    class Broken(CallLog):
        def __call__(self, llm, name, run_dir):
            if name == "gsm8k__seed0__tgd":
                raise RuntimeError("<b>boom</b>\nsecond line")
            return super().__call__(llm, name, run_dir)

    grid = {"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["neighbor-sgd", "tgd"]}
    result = run_sweep(grid_spec(tmp_path / "s.toml", grid), tmp_path / "out", local=True, instrument=Broken())
    assert [o.status for o in result.outcomes] == ["started", "failed"]
    assert result.failed[0].error == "RuntimeError: <b>boom</b> second line"
    summary = sweep_json(tmp_path / "out")
    assert summary["totals"]["failed"] == 1 and summary["runs"][1]["accuracy"]["test"] is None
    page = (tmp_path / "out" / "sweep.html").read_text()
    assert "&lt;b&gt;boom&lt;/b&gt;" in page and "<b>boom" not in page


def test_the_limit_holds_against_a_loopback_server(tmp_path, monkeypatch):
    """Four runs at once against one OpenAI-compatible server never have more than the limit of calls in flight."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    grid = {"tasks": ["bbh:navigate"], "seeds": [0, 1], "optimizers": ["neighbor-sgd", "tgd"]}
    with chat_server(delay=0.03) as server:
        spec = grid_spec(
            tmp_path / "s.toml",
            grid,
            backend="openai-compatible",
            base_url=server.base_url,
            models={"model": "m"},
            iterations=1,
            train=2,
            validation=2,
            test=2,
            max_concurrent_calls=2,
            timeout=30.0,
        )
        result = run_sweep(spec, tmp_path / "out", local=True, max_parallel=4)
    assert not result.failed, result.failed
    assert server.requests >= 4 * 20, server.requests
    assert server.peak == 2


def test_the_cli_runs_a_local_sweep_and_says_where_the_report_is(tmp_path, capsys):
    """`semgrad sweep SPEC --local --out DIR` prints one progress line per run and the report's path."""
    grid = {"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["neighbor-sgd", "tgd"]}
    spec = grid_spec(tmp_path / "s.toml", grid, iterations=1)
    assert main(["sweep", str(spec), "--local", "--out", str(tmp_path / "out"), "--max-parallel", "2"]) == 0
    captured = capsys.readouterr()
    assert "SIMULATED" in captured.err
    assert re.findall(r"^\[(\d)/2\] gsm8k__seed0__\S+: started, test", captured.err, re.M) == ["1", "2"]
    assert captured.out.strip() == f"Wrote {tmp_path / 'out' / 'sweep.json'} and {tmp_path / 'out' / 'sweep.html'}"
    assert main(["sweep", str(spec), "--local", "--out", str(tmp_path / "out"), "-q"]) == 0
    assert capsys.readouterr() == (captured.out, "")  # quiet: only where the result is


def test_the_cli_exits_non_zero_when_a_run_fails(tmp_path, capsys):
    """A sweep with a failed run writes its report and exits 1 with one line naming the run."""
    with chat_server(delay=0, status=401) as server:
        spec = grid_spec(
            tmp_path / "s.toml",
            {"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["tgd"]},
            models={"model": "m"},
            backend="openai-compatible",
            base_url=server.base_url,
            iterations=1,
            train=2,
            validation=2,
            test=2,
        )
        assert main(["sweep", str(spec), "--local", "--out", str(tmp_path / "out"), "-q"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("semgrad: error: 1 of 1 runs failed")
    assert "gsm8k__seed0__tgd: SetupError: the backend cannot be used: auth" in err
    assert (tmp_path / "out" / "sweep.json").exists()


def test_render_escapes_every_string_and_loads_nothing():
    """Hostile names, optimizers and errors reach the page only escaped; it has no script and no external URL."""
    evil = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
    row = {
        "name": evil,
        "task": evil,
        "category": None,
        "seed": 0,
        "optimizer": evil,
        "models": evil,
        "accuracy": {"train": None, "validation": None, "test": 0.5, "initial_test": None},
        "calls": 3,
        "tokens": {"input": 1, "output": 2},
        "cost_usd": None,
        "error": evil,
    }
    page = render_sweep(
        {
            "sweep": {"name": evil, "settings": {"x": evil}},
            "runs": [row],
            "backend": evil,
            "by_task": {evil: {evil: 0.5}},
            "averages": {evil: {"overall": 0.5}},
            "published": {},
        }
    )
    assert (
        "<script" not in page and "<img" not in page and "onerror=alert" not in page.replace("onerror=alert(2)&gt;", "")
    )
    assert "&lt;script&gt;" in page
    assert re.findall(r"https?://[^\s\"']+", page) == ["http://www.w3.org/2000/svg"]


def test_the_spec_name_is_the_default_sweep_directory(tmp_path, monkeypatch, capsys):
    """Without --out, the sweep goes to sweeps/<spec name> under the working directory."""
    monkeypatch.chdir(tmp_path)
    spec = write_spec(
        tmp_path / "tiny.toml",
        {"name": "tiny", "tasks": ["gsm8k"], "seeds": [0], "optimizers": ["tgd"]},
        settings={"data_dir": str(DATA), "iterations": 0, "train": 2, "validation": 2, "test": 2},
    )
    assert main(["sweep", str(spec), "--local", "-q"]) == 0
    assert (tmp_path / "sweeps" / "tiny" / "gsm8k__seed0__tgd" / "results.json").exists()
    assert load_spec(spec).name == "tiny"
    shutil.rmtree(tmp_path / "sweeps")
    with pytest.raises(SweepError, match="--max-parallel"):
        main(["--debug", "sweep", str(spec), "--local", "--max-parallel", "0"])


def test_a_run_that_failed_is_reported_failed_again_when_the_sweep_is_run_again(tmp_path):
    """A run whose calls failed past the allowed share stays failed on a re-run of the sweep, never "skipped"."""
    from semgrad.core import LLMError, LLMFailure

    class HalfDown(CallLog):
        def __call__(self, llm, name, run_dir):
            inner = super().__call__(llm, name, run_dir)
            count = [0]

            async def half(request):
                count[0] += 1
                if count[0] > 3 and count[0] % 2:
                    raise LLMFailure(LLMError("bad_request", "HTTP 400"))
                return await inner(request)

            return half

    grid = {"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["tgd"]}
    spec = grid_spec(tmp_path / "s.toml", grid)
    first = run_sweep(spec, tmp_path / "out", local=True, instrument=HalfDown())
    assert [o.status for o in first.outcomes] == ["failed"] and "calls failed" in first.failed[0].error
    again = run_sweep(spec, tmp_path / "out", local=True, instrument=CallLog())
    assert [o.status for o in again.outcomes] == ["failed"]
    assert "calls failed" in again.failed[0].error and "remove" in again.failed[0].error
    assert sweep_json(tmp_path / "out")["totals"]["failed"] == 1
