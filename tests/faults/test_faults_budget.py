"""Budgets are caps: no request past --max-calls / --max-tokens in any phase (preflight, fit, evaluation) or sweep."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import FunctionLLM, HashLLM
from semgrad.cli import EXIT_BUDGET
from semgrad.core import LLMFailure, LLMRequest, LLMResponse, Message
from semgrad.effects import budgeted, fit
from semgrad.effects._limit import estimate_tokens
from semgrad.experiments import RunConfig, run_experiment

from ._servers import DATA, error_lines, results, run_args, semgrad, server  # noqa: F401

SIZES = {"train": 4, "validation": 4, "test": 4, "iterations": 2}


class Counting:
    """A sync LLM that answers like `HashLLM` and counts the calls (and tokens) that reach it."""

    def __init__(self, tokens: int = 0) -> None:
        self.inner, self.calls, self.tokens, self.per_call = HashLLM(), 0, 0, tokens

    def __call__(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        used = min(self.per_call, estimate_tokens(request)) if self.per_call else 0
        self.tokens += used
        return LLMResponse(self.inner(request), {"input_tokens": used, "output_tokens": 0}, "m")


@settings(max_examples=12, deadline=None)
@given(max_calls=st.integers(1, 400), concurrency=st.integers(1, 8))
def test_no_call_of_any_phase_passes_max_calls(tmp_path_factory, max_calls, concurrency):
    """Whatever the cap and the concurrency, the calls reaching the LLM over the whole run (training and the
    final evaluation) never pass max_calls, and a run that needed more says it stopped for the budget."""
    llm = Counting()
    config = RunConfig("bbh:navigate", data_dir=str(DATA), max_calls=max_calls, concurrency=concurrency, **SIZES)
    summary = run_experiment(config, tmp_path_factory.mktemp("run"), llm=llm)
    assert llm.calls <= max_calls
    refused = summary["errors_by_kind"].get("budget", 0) > 0
    assert (summary["stopped"] == "budget") == (llm.calls == max_calls and refused)
    if summary["stopped"] == "budget":
        assert "max-calls" in summary["stopped_detail"]


@settings(max_examples=8, deadline=None)
@given(max_tokens=st.integers(50, 20_000))
def test_no_token_passes_max_tokens_with_calls_in_flight(tmp_path_factory, max_tokens):
    """With 8 calls in flight and replies within their estimate, the tokens used never pass max_tokens."""
    llm = Counting(tokens=10_000)
    config = RunConfig("bbh:navigate", data_dir=str(DATA), max_tokens=max_tokens, concurrency=8, **SIZES)
    run_experiment(config, tmp_path_factory.mktemp("run"), llm=llm)
    assert llm.tokens <= max_tokens


@given(n=st.integers(1, 40), max_tokens=st.integers(1, 400), size=st.integers(1, 200))
async def test_concurrent_calls_never_overshoot_the_token_budget(n, max_tokens, size):
    """n concurrent calls of `size` characters, each using its estimate, spend at most max_tokens."""
    spent = []

    async def slow(request: LLMRequest) -> LLMResponse:
        await anyio.sleep(0.001)
        spent.append(estimate_tokens(request))
        return LLMResponse("ok", {"input_tokens": estimate_tokens(request), "output_tokens": 0}, "m")

    llm = budgeted(slow, max_tokens=max_tokens)

    async def one() -> None:
        try:
            await llm(LLMRequest((Message("user", "x" * size),)))
        except LLMFailure:
            pass

    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one)
    assert sum(spent) <= max_tokens and llm.tokens == sum(spent)


async def test_a_budget_layer_inside_the_llm_stops_fit_cleanly():
    """fit over an LLM whose own `budgeted` layer is spent ends with stopped='budget', keeping its params."""
    from semgrad.core import GraphBuilder, optim

    b = GraphBuilder()
    q = b.input("question")
    b.llm("answer", inputs=[q], instruction="Solve.")
    graph, params = b.build(output="answer")
    train = [{"inputs": {"question": f"q{i}"}, "target": "x"} for i in range(4)]
    llm = budgeted(FunctionLLM(HashLLM()), max_calls=6)
    result = await fit(graph, params, optim.neighbor_sgd(k=2), train=train, validation=train, llm=llm, iterations=3)
    assert result.stopped == "budget" and result.params == params
    assert llm.calls == 6


@settings(max_examples=10, deadline=None)
@given(max_tokens=st.integers(1, 3000))
async def test_fits_own_token_budget_holds_with_calls_in_flight(max_tokens):
    """fit(budget={"max_tokens": ...}) with many concurrent calls, each using its estimate, never passes it."""
    from semgrad.core import GraphBuilder, optim

    b = GraphBuilder()
    q = b.input("question")
    h = [b.llm(f"hint_{i}", inputs=[q], instruction="Work out a step.") for i in range(3)]
    b.llm("answer", inputs=[q, *h], instruction="Solve.")
    graph, params = b.build(output="answer")
    train = [{"inputs": {"question": f"question {i}"}, "target": "x"} for i in range(8)]
    hashed, used = HashLLM(), []

    async def slow(request: LLMRequest) -> LLMResponse:
        await anyio.sleep(0.001)
        used.append(estimate_tokens(request))
        return LLMResponse(hashed(request), {"input_tokens": used[-1], "output_tokens": 0}, "m")

    await fit(
        graph, params, optim.neighbor_sgd(k=2), train=train, validation=train, llm=FunctionLLM(slow),
        iterations=2, budget={"max_tokens": max_tokens},
    )  # fmt: skip
    assert sum(used) <= max_tokens


def test_max_calls_caps_what_reaches_a_real_server(tmp_path, server):  # noqa: F811
    """`semgrad run --max-calls 20` against a server on 127.0.0.1: at most 20 requests arrive (preflight,
    retries and evaluation included), and the run says it stopped, keeps its results and exits with 3."""
    out = tmp_path / "run"
    result = semgrad(*run_args(server.url, out, "--max-calls", "20"))
    assert server.count <= 20
    assert result.returncode == EXIT_BUDGET, result.stderr
    (line,) = error_lines(result)
    assert "stopped" in line and "--max-calls 20" in line and "--resume" in line
    saved = results(out)
    assert saved["stopped"] == "budget" and saved["tasks"][0]["accuracy"]["test"] is None
    refused = saved["errors_by_kind"].get("budget", 0)
    assert (
        refused > 0
        and f"{refused} of them refused by the run's budget or stop, never sent" in (out / "report.html").read_text()
    )  # the report's call counts include them: it says so


@pytest.mark.parametrize("max_calls", [1, 2])
def test_a_budget_spent_in_the_preflight_is_a_budget_stop_not_an_unusable_backend(tmp_path, server, max_calls):  # noqa: F811
    """--max-calls below the preflight's calls (3 on the paper's graph) stops on the budget (exit 3, resumable),
    not with 'the backend cannot be used' (exit 1): the calls that were sent were answered."""
    out = tmp_path / "run"
    result = semgrad(*run_args(server.url, out, "--max-calls", str(max_calls)))
    assert server.count == max_calls
    assert result.returncode == EXIT_BUDGET, result.stderr
    (line,) = error_lines(result)
    assert "stopped" in line and f"--max-calls {max_calls}" in line and "cannot be used" not in line
    assert results(out)["stopped"] == "budget"


def test_a_sweep_run_never_passes_its_max_calls(tmp_path):
    """Every run of a sweep with max_calls = 30 makes at most 30 calls to its LLM, evaluation included."""
    from semgrad.sweeps import run_sweep
    from tests.sweeps._helpers import CallLog, grid_spec, logged_calls, sweep_json

    grid = {"tasks": ["bbh:navigate"], "seeds": [0, 1], "optimizers": ["neighbor-sgd"]}
    spec = grid_spec(tmp_path / "s.toml", grid, max_calls=30)
    result = run_sweep(spec, tmp_path / "out", local=True, instrument=CallLog())
    assert not result.failed, result.failed
    for row in sweep_json(tmp_path / "out")["runs"]:
        assert 0 < len(logged_calls(tmp_path / "out" / row["name"])) <= 30
        assert row["stopped"] == "budget"
    assert {o.stopped for o in result.outcomes} == {"budget"}


def test_a_sweep_says_which_runs_stopped_for_their_budget(tmp_path, capsys):
    """`semgrad sweep --local` prints 'stopped: budget' on the line of each run that spent its max_calls, and
    exits 3 as `semgrad run` and `semgrad compare` do."""
    from semgrad.cli import main
    from tests.sweeps._helpers import grid_spec

    grid = {"tasks": ["bbh:navigate"], "seeds": [0], "optimizers": ["tgd"]}
    spec = grid_spec(tmp_path / "s.toml", grid, max_calls=10)
    assert main(["sweep", str(spec), "--local", "--out", str(tmp_path / "out")]) == 3
    assert "stopped: budget" in capsys.readouterr().err


def test_a_sweep_run_again_with_a_larger_max_calls_goes_on_from_where_its_budget_stopped(tmp_path):
    """A sweep run again with a larger max_calls resumes the runs that spent their budget, never skips them."""
    from semgrad.sweeps import run_sweep
    from tests.sweeps._helpers import grid_spec, sweep_json

    grid = {"tasks": ["bbh:navigate"], "seeds": [0], "optimizers": ["tgd"]}
    first = run_sweep(grid_spec(tmp_path / "s.toml", grid, max_calls=40), tmp_path / "out", local=True)
    assert [o.stopped for o in first.outcomes] == ["budget"]
    again = run_sweep(grid_spec(tmp_path / "s.toml", grid, max_calls=40), tmp_path / "out", local=True)
    assert [(o.status, o.stopped) for o in again.outcomes] == [("skipped", "budget")]  # the same budget: nothing new
    raised = run_sweep(grid_spec(tmp_path / "s.toml", grid, max_calls=100_000), tmp_path / "out", local=True)
    assert [(o.status, o.stopped) for o in raised.outcomes] == [("resumed", None)]
    (row,) = sweep_json(tmp_path / "out")["runs"]
    assert row["stopped"] is None and row["accuracy"]["test"] is not None and row["iterations"] == 2


def test_sweep_html_says_which_runs_stopped_for_their_budget(tmp_path):
    """sweep.html marks the row of a run that spent its budget as stopped early, its figures partial."""
    from semgrad.sweeps import run_sweep
    from tests.sweeps._helpers import grid_spec

    grid = {"tasks": ["bbh:navigate"], "seeds": [0], "optimizers": ["tgd"]}
    result = run_sweep(grid_spec(tmp_path / "s.toml", grid, max_calls=10), tmp_path / "out", local=True)
    assert [o.stopped for o in result.outcomes] == ["budget"]
    assert '<td class="error">stopped early (budget): partial</td>' in (tmp_path / "out" / "sweep.html").read_text()


def test_a_run_stopped_before_all_its_tasks_shows_no_average_for_a_group_it_did_not_finish(tmp_path, capsys):
    """bbh:all stopped by its budget after a few tasks has no item-weighted or unweighted average for a group with
    an unscored task (never one over the finished tasks beside the paper's), and its report and output say why."""
    config = RunConfig("bbh:all", data_dir=str(DATA), max_calls=90, **SIZES)
    summary = run_experiment(config, tmp_path / "run", llm=Counting())
    assert summary["stopped"] == "budget" and 1 <= len(summary["tasks"]) < 27
    assert all(v is None for v in (*summary["averages"].values(), *summary["averages_unweighted"].values()))
    scored = [t["task"] for t in summary["tasks"] if t["accuracy"]["test"] is not None]
    assert len(summary["unscored_tasks"]) == 27 - len(scored) and not set(scored) & set(summary["unscored_tasks"])
    assert "Tasks without a test score" in (tmp_path / "run" / "report.html").read_text("utf-8")
