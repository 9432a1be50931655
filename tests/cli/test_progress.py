"""Live progress: every call counted against the plan, a line per phase off a terminal, a bar on one."""

from __future__ import annotations

import io
import json
import re
import sys

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from semgrad.cli import EXIT_BUDGET
from semgrad.core import LLMError, LLMRequest, LLMResponse, Message
from semgrad.effects import FitProgress, fit_sync, limited, retrying
from semgrad.experiments._progress import RunProgress, find_retries

from .conftest import semgrad

REQUEST = LLMRequest((Message("user", "hi"),))
replies = st.one_of(
    st.builds(
        lambda i, o, m: Success(LLMResponse("ok", {"input_tokens": i, "output_tokens": o}, m)),
        st.integers(0, 10_000),
        st.integers(0, 10_000),
        st.sampled_from(["m", "m-2024", "other"]),
    ),
    st.builds(lambda kind: Failure(LLMError(kind, "failed")), st.sampled_from(["server", "timeout", "malformed"])),
)


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@given(st.lists(replies), st.booleans())
def test_counts_equal_the_replies_seen(sequence, fancy):
    """Calls, errors, tokens and the cost so far are exactly the sums over the replies, on a terminal or not."""
    progress = RunProgress(Terminal() if fancy else io.StringIO(), planned=50, prices={"m": (1.0, 2.0)})
    for reply in sequence:
        progress(REQUEST, reply)
    ok = [r.unwrap() for r in sequence if isinstance(r, Success)]
    assert progress.calls == len(sequence) and progress.errors == len(sequence) - len(ok)
    assert progress.tokens_in == sum(r.usage["input_tokens"] for r in ok)
    priced = [r for r in ok if r.model.startswith("m")]
    expected = sum(r.usage["input_tokens"] * 1.0 + r.usage["output_tokens"] * 2.0 for r in priced) / 1e6
    assert abs(progress.cost - expected) < 1e-9
    assert progress.unpriced == any(
        r.model == "other" and r.usage["input_tokens"] + r.usage["output_tokens"] for r in ok
    )


def test_off_a_terminal_each_phase_is_one_plain_line_with_calls_against_the_plan():
    """Not on a terminal: one line per phase naming the phase, iteration, calls done/planned, elapsed and ETA."""
    out = io.StringIO()
    clock = iter(range(0, 1000, 10)).__next__
    progress = RunProgress(out, planned=40, clock=clock)
    progress.on_progress("gsm8k", FitProgress(1, 4, "forward", 0))
    for _ in range(10):
        progress(REQUEST, Success(LLMResponse("ok", {}, "m")))
    progress.on_progress("gsm8k", FitProgress(1, 4, "optimize", 10, 0.5))
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in out.getvalue()
    assert lines[0].startswith("gsm8k iteration 1/4 forward: 0/40 calls")
    assert lines[1].startswith("gsm8k iteration 1/4 optimize (train 0.50): 10/40 calls")
    assert "10/40 calls, 00:20 elapsed, ETA 01:00, 0+0 tokens, 0 errors, 0 retries" in lines[1]  # 2 s a call


def test_on_a_terminal_a_tqdm_bar_shows_the_planned_total():
    """On a terminal the bar (tqdm) counts calls against the planned total and shows the phase."""
    out = Terminal()
    progress = RunProgress(out, planned=123)
    assert progress._bar is not None
    progress.on_progress("bbh:navigate", FitProgress(2, 4, "forward", 0))
    progress(REQUEST, Success(LLMResponse("ok", {}, "m")))
    progress.close()
    text = out.getvalue()
    assert "/123 calls" in text and "bbh:navigate iteration 2/4 forward" in text


def test_without_tqdm_the_terminal_line_is_rewritten_in_place(monkeypatch):
    """Without the progress extra, a terminal still gets a live line (carriage return), not a crash."""
    monkeypatch.setitem(sys.modules, "tqdm", None)  # makes `from tqdm import tqdm` raise ImportError
    out = Terminal()
    progress = RunProgress(out, planned=3)
    assert progress._bar is None
    progress.on_progress("liar", FitProgress(1, 1, "forward", 0))
    assert "\r\x1b[2Kliar iteration 1/1 forward: 0/3 calls" in out.getvalue()


def test_stopping_early_is_said_with_the_reason():
    """close(reason) writes why the run stopped early, even when quiet."""
    out = io.StringIO()
    RunProgress(out, quiet=True).close("the budget is spent")
    assert out.getvalue().startswith("semgrad: the run stopped early: the budget is spent")


def test_the_retrying_wrapper_is_found_through_middleware():
    """The retry count is read from the `retrying` wrapper inside other middleware."""
    inner = retrying(lambda request: "ok")
    assert find_retries(limited(inner, max_concurrency=2)) is inner
    assert find_retries(lambda request: "ok") is None


def test_retries_and_errors_of_a_run_stack_are_counted():
    """Watching a run's stack, the progress counts the retries the stack made and the calls that still failed."""
    import anyio

    from semgrad.core import LLMFailure
    from semgrad.experiments import RunStack

    seen: list[str] = []

    def flaky(request):
        seen.append(request.prompt)
        if request.prompt == "down" or seen.count(request.prompt) == 1:
            raise LLMFailure(LLMError("server", "HTTP 503", retryable=request.prompt != "down"))
        return "ok"

    stack = RunStack(flaky, real=True)
    progress = RunProgress(io.StringIO())
    progress.watch(stack.llm)

    async def both():
        from semgrad.core import gather
        from semgrad.core.programs import ask
        from semgrad.effects import Runner

        runner = Runner(stack.llm, on_reply=progress)
        up, down = LLMRequest((Message("user", "up"),)), LLMRequest((Message("user", "down"),))
        await runner.run(gather(ask(up), ask(down)))

    anyio.run(both)
    assert (progress.calls, progress.errors, progress.retries) == (2, 1, 1)


def test_a_resumed_run_counts_from_the_calls_already_made():
    """With calls already made, done/planned starts there and the ETA follows this process's pace."""
    out = io.StringIO()
    progress = RunProgress(out, planned=40, already=30, clock=iter(range(0, 1000, 10)).__next__)
    for _ in range(5):
        progress(REQUEST, Success(LLMResponse("ok", {}, "m")))
    progress.on_progress("gsm8k", FitProgress(4, 4, "forward", 5))
    assert "35/40 calls, 00:10 elapsed, ETA 00:10" in out.getvalue()  # 5 calls in 10 s, 5 to go


def test_fit_calls_on_reply_once_per_call():
    """fit's on_reply hook sees every call the run makes, once."""
    from semgrad.backends import fake
    from semgrad.core import GraphBuilder, optim

    b = GraphBuilder()
    q = b.input("question")
    b.llm("answer", inputs=[q], instruction="Answer.")
    graph, params = b.build(output="answer")
    seen = []
    items = [{"inputs": {"question": f"{i}?"}, "target": str(i), "id": i} for i in range(4)]
    result = fit_sync(
        graph, params, optim.neighbor_sgd(k=2), train=items[:2], validation=items[2:], llm=fake.HashLLM(),
        iterations=2, on_reply=lambda request, reply: seen.append(request.purpose),
    )  # fmt: skip
    assert len(seen) == result.statistics.calls and dict(result.statistics.calls_by_purpose) == {
        p: seen.count(p) for p in set(seen)
    }


def test_the_cli_shows_progress_per_phase_and_says_why_it_stopped(tmp_path, system_file, items_file):
    """`semgrad run` off a terminal prints a line per phase with calls against the plan, and says when and why a
    budget stopped the run early."""
    out = tmp_path / "run"
    result = semgrad("run", str(system_file), "--data", str(items_file), "--iterations", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    made = sum(json.loads((out / "results.json").read_text())["calls"]["by_purpose"].values())
    assert "my_system.py:build iteration 1/2 forward: " in result.stderr
    # Calls are shown against the plan, an upper bound: the official protocol's memo answers some requests free.
    planned = {int(n.replace(",", "")) for n in re.findall(r"/([\d,]+) calls", result.stderr)}
    assert len(planned) == 1 and planned.pop() >= made, result.stderr
    assert f"finished: {made:,}/" in result.stderr and "ETA" in result.stderr
    stopped = semgrad(
        "run", str(system_file), "--data", str(items_file), "--max-calls", "5", "--out", str(tmp_path / "cut")
    )
    assert stopped.returncode == EXIT_BUDGET, stopped.stderr
    assert "semgrad: stopped: the budget is spent (5 of --max-calls 5 calls)" in stopped.stderr
    assert "finished:" not in stopped.stderr
