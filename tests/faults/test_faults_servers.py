"""No silent failure: failing and misbehaving servers on 127.0.0.1, a missing extra, a broken LLM function.

Each run either finishes with its failed calls counted by kind (terminal, results.json, report) or stops with one
line and a non-zero exit: never exit 0 with accuracy 0.000 and a normal report.
"""

from __future__ import annotations

import hashlib
import json
import sys

import pytest

from semgrad.backends.fake import FunctionLLM, HashLLM
from semgrad.core import GraphBuilder, LLMError, LLMFailure, optim
from semgrad.effects import fit
from semgrad.experiments import (
    FAIL_FAST_CALLS,
    MAX_ERROR_SHARE,
    RunConfig,
    RunFailed,
    SetupError,
    build_llm,
    load_run_tasks,
    run_experiment,
)

from ._servers import (  # noqa: F401
    BAD_REQUEST,
    DATA,
    ROOT,
    SERVER_ERROR,
    error_lines,
    results,
    run_args,
    semgrad,
    server,
)


def _one_line(result, *fragments: str) -> str:
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    (line,) = error_lines(result)
    for fragment in fragments:
        assert fragment in line, line
    return line


def test_an_all_500_server_stops_at_the_preflight(tmp_path, server):  # noqa: F811
    """A server that answers 500 to everything: one line naming the kind, exit 1, no run directory left behind."""
    server.chooser = lambda body: SERVER_ERROR
    result = semgrad(*run_args(server.url, tmp_path / "run"))
    _one_line(result, "cannot be used", "server")
    assert server.count <= 4 * 3  # the preflight's three calls, each tried 4 times
    assert not (tmp_path / "run" / "results.json").exists()


def test_a_server_that_fails_after_the_preflight_halts_after_the_first_calls(tmp_path, server):  # noqa: F811
    """The preflight passes, then every call fails: the run stops after its first N calls with one line and exit 1,
    and the results it wrote count the failures by kind."""
    server.script(None, None, None)  # the preflight's three calls
    server.chooser = lambda body: BAD_REQUEST
    result = semgrad(*run_args(server.url, tmp_path / "run"))
    _one_line(result, f"first {FAIL_FAST_CALLS} calls all failed", "bad_request")
    assert server.count <= 3 + FAIL_FAST_CALLS + 8  # the calls in flight when it tripped finish
    saved = results(tmp_path / "run")
    (task,) = saved["tasks"]
    assert task["errors"] >= FAIL_FAST_CALLS and task["errors_by_kind"]["bad_request"] >= FAIL_FAST_CALLS
    assert saved["stopped"] == "halted"
    assert "calls without a reply" in (tmp_path / "run" / "report.html").read_text()


def _every_third(body: dict) -> object:
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
    return BAD_REQUEST if digest[0] % 3 == 0 else None


def test_a_run_that_loses_a_third_of_its_calls_exits_non_zero_with_counts(tmp_path, server):  # noqa: F811
    """A third of the requests fail (chosen by body): the run finishes, results.json and the report count the
    errors by kind, and the exit is 1 because more than the documented share failed."""
    server.chooser = _every_third
    server.script(None, None, None)
    result = semgrad(*run_args(server.url, tmp_path / "run"))
    _one_line(result, "calls failed", "bad_request", f"{MAX_ERROR_SHARE:.0%}")
    saved = results(tmp_path / "run")
    assert saved["errors"] == saved["tasks"][0]["errors"] + 0 > 0
    assert set(saved["errors_by_kind"]) == {"bad_request"}
    assert saved["errors"] / sum(saved["calls"]["by_purpose"].values()) > MAX_ERROR_SHARE
    page = (tmp_path / "run" / "report.html").read_text()
    assert "errors-notice" in page and "failed-notice" in page and "not to be trusted" in page
    assert "calls failed" in saved["failed"] and f"{MAX_ERROR_SHARE:.0%}" in saved["failed"]


def test_storms_hangs_slow_and_malformed_bodies_that_retries_absorb_leave_no_error(tmp_path, server):  # noqa: F811
    """429 storms (with Retry-After), hangs and slow bodies past the timeout, and truncated JSON, each once per
    request at first: the retries absorb them, the run exits 0 and counts no error."""
    rate_limited = (429, {"Retry-After": "0"}, {"error": {"message": "slow down"}})
    server.slow_seconds = 3.0
    server.script(None, None, None, rate_limited, rate_limited, rate_limited, "hang", "truncated", "slow", rate_limited)
    result = semgrad(*run_args(server.url, tmp_path / "run", "--timeout", "1", "--iterations", "1"))
    assert result.returncode == 0, result.stderr
    saved = results(tmp_path / "run")
    assert saved["errors"] == 0 and saved["errors_by_kind"] == {}


def test_errors_are_counted_by_kind_in_the_terminal(tmp_path, server):  # noqa: F811
    """A run with a few failed calls (under the share) prints them by kind beside its scores and exits 0."""
    failing = {"n": 0}

    def few(body: dict) -> object:
        failing["n"] += 1
        return BAD_REQUEST if failing["n"] in (40, 41) else None

    server.chooser = few
    result = semgrad(*run_args(server.url, tmp_path / "run", "--iterations", "1"))
    assert result.returncode == 0, result.stderr
    assert "2 calls without a reply (bad_request 2)" in result.stdout
    saved = results(tmp_path / "run")
    assert saved["tasks"][0]["errors_by_kind"] == {"bad_request": 2}


def test_a_missing_httpx_is_named_at_start(monkeypatch):
    """Without httpx, building an HTTP backend fails at once with one line naming the extra to install."""
    monkeypatch.setitem(sys.modules, "httpx", None)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = RunConfig("bbh:navigate", data_dir=str(DATA), backend="openai-compatible", base_url="http://127.0.0.1:9")
    with pytest.raises(SetupError, match=r"needs httpx.*pip install httpx"):
        build_llm(config, load_run_tasks(config))


def test_a_bug_in_the_llm_function_stops_the_run(tmp_path):
    """An LLM function that raises on every call: the run stops after its first calls with RunFailed naming the
    exception, having written results that count the errors by kind."""

    def broken(request):
        return {}["oops"]

    config = RunConfig("bbh:navigate", data_dir=str(DATA), train=4, validation=4, test=4, iterations=2)
    with pytest.raises(RunFailed, match="KeyError") as caught:
        run_experiment(config, tmp_path / "run", llm=FunctionLLM(broken))
    summary = caught.value.summary
    assert summary["errors_by_kind"]["exception"] >= FAIL_FAST_CALLS
    assert set(summary["errors_by_kind"]) <= {"exception", "halted"}  # later calls are refused, not made
    assert summary["tasks"][0]["accuracy"]["test"] is None
    assert results(tmp_path / "run")["errors"] == summary["errors"]


async def test_fit_result_counts_errors_by_kind():
    """FitResult.errors and .errors_by_kind count the failed calls of a fit by kind."""
    b = GraphBuilder()
    q = b.input("question")
    b.llm("answer", inputs=[q], instruction="Solve.")
    graph, params = b.build(output="answer")
    hashed = HashLLM()

    def flaky(request):
        if request.sample in ("q0", "q1"):
            raise LLMFailure(LLMError("server", "HTTP 500"))
        return hashed(request)

    train = [{"inputs": {"question": f"q{i}"}, "target": "x", "id": f"q{i}"} for i in range(4)]
    result = await fit(
        graph, params, optim.neighbor_sgd(k=2), train=train, validation=train, llm=FunctionLLM(flaky), iterations=1
    )
    assert result.errors == result.statistics.errors > 0
    assert dict(result.errors_by_kind) == {"server": result.errors}


def test_the_help_and_the_readme_document_the_failure_rules():
    """`semgrad run --help` and the README state N (fail fast), the error share and the budget's exit code."""
    from semgrad.cli import EXIT_BUDGET, build_parser

    run = build_parser()._subparsers._group_actions[0].choices["run"]
    text = " ".join(run.format_help().split())
    assert f"first {FAIL_FAST_CALLS} calls all failed" in text and f"more than {MAX_ERROR_SHARE:.0%}" in text
    assert f"{EXIT_BUDGET} the budget" in text
    readme = " ".join((ROOT / "README.md").read_text("utf-8").split())
    assert f"first **{FAIL_FAST_CALLS}** calls all fail" in readme
    assert f"more than **{MAX_ERROR_SHARE * 100:.0f} %**" in readme


def test_calls_the_runner_times_out_are_counted_as_timeouts(tmp_path):
    """Calls that hang past the run's timeout are counted in results.json as errors of kind 'timeout'."""
    import anyio

    config = RunConfig("bbh:navigate", data_dir=str(DATA), train=4, validation=4, test=4, iterations=1, timeout=0.2)
    stuck = load_run_tasks(config)[0].split.test[0].id
    hashed = HashLLM()

    async def hangs_on_one_item(request):
        if request.sample == stuck:
            await anyio.sleep(30)
        return hashed(request)

    summary = run_experiment(config, tmp_path / "run", llm=FunctionLLM(hangs_on_one_item))
    assert summary["errors_by_kind"].get("timeout", 0) >= 2  # the item's hints, in the test and initial_test splits
    assert summary["tasks"][0]["errors_by_kind"] == summary["errors_by_kind"]


def test_an_evaluation_that_lost_calls_to_an_outage_is_asked_again_on_resume(tmp_path):
    """A split whose calls failed in a way a later attempt may not (an outage) is no finished score: --resume
    evaluates it again, and reaches the uninterrupted run's accuracy once the outage is over."""
    config = RunConfig("bbh:navigate", data_dir=str(DATA), train=4, validation=4, test=8, iterations=1)
    down = {load_run_tasks(config)[0].split.test[0].id}
    hashed = HashLLM()

    def outage(request):
        if request.sample in down:
            raise LLMFailure(LLMError("server", "HTTP 503", retryable=True))
        return hashed(request)

    clean = run_experiment(config, tmp_path / "clean", llm=FunctionLLM(hashed))
    try:
        run_experiment(config, tmp_path / "run", llm=FunctionLLM(outage))
    except RunFailed:
        pass  # the outage's share of the calls may be above the limit: the run keeps what it has either way
    down.clear()  # the outage is over
    try:
        resumed = run_experiment(config, tmp_path / "run", llm=FunctionLLM(outage), resume=True)
    except RunFailed as failed:
        resumed = failed.summary
    (task,) = resumed["tasks"]
    assert "test" not in task["carried_over"] and "initial_test" not in task["carried_over"]
    assert "train" in task["carried_over"]  # no call of it failed: kept
    assert task["accuracy"]["test"] == clean["tasks"][0]["accuracy"]["test"]


def test_the_fail_fast_line_counts_the_failures_it_judged(tmp_path):
    """The fail-fast line's kinds add up to the N calls it says all failed, though the run's counters restart at
    each checkpoint on the way."""
    config = RunConfig("bbh:navigate", data_dir=str(DATA), train=2, validation=2, test=2, iterations=5)

    def down(request):
        raise LLMFailure(LLMError("server", "HTTP 500", retryable=True))

    with pytest.raises(RunFailed) as caught:
        run_experiment(config, tmp_path / "run", llm=FunctionLLM(down))
    assert f"the first {FAIL_FAST_CALLS} calls all failed (server {FAIL_FAST_CALLS})" in str(caught.value)


def test_the_preflight_gives_each_attempt_the_runs_timeout(tmp_path):
    """The preflight's calls get the run's --timeout per attempt, as its training calls do: no 60 s cap of its own."""
    import anyio

    config = RunConfig(
        "bbh:navigate", data_dir=str(DATA), backend="openai-compatible", base_url="http://127.0.0.1:9/v1",
        model="m", train=2, validation=2, test=2, iterations=1, timeout=300,
    )  # fmt: skip
    hashed = HashLLM()
    left: list[float] = []

    async def measured(request):
        left.append(anyio.current_effective_deadline() - anyio.current_time())
        return hashed(request)

    run_experiment(config, tmp_path / "run", llm=FunctionLLM(measured))
    assert len(left) > 3 and min(left) > 250  # the preflight's three calls first
