"""The benchmarks' timerfd sleep (`benchmarks._wake`) and `LatencyLLM`'s injected sleep.

Properties: an `FdSleep` never ends before its deadline, concurrent sleeps end in
the order of their deadlines, a cancelled one leaves the others on time, and each
event loop (asyncio's and uvloop's, one after another) gets a timer of its own.
`LatencyLLM` waits with the sleep it is given, for the request's latency.
"""

from __future__ import annotations

import time

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks._wake import precise_sleep
from semgrad.backends.fake import LatencyLLM
from semgrad.core import LLMRequest, Message
from semgrad.effects import run_loop, uvloop_available

LOOPS = ["asyncio", *(["uvloop"] if uvloop_available() else [])]
needs_fd = pytest.mark.skipif(precise_sleep() is None, reason="no Linux timerfd here")


async def _sleep_all(sleep, delays: list[float]) -> list[tuple[float, float, int]]:
    """Start one sleep per delay at once (``sleep.until`` a deadline the task reads from the clock);
    each task's (deadline, woke, index), in the order they woke."""
    woke: list[tuple[float, float, int]] = []

    async def one(i: int, delay: float) -> None:
        deadline = time.monotonic() + delay
        await sleep.until(deadline)
        woke.append((deadline, time.monotonic(), i))

    async with anyio.create_task_group() as tg:
        for i, delay in enumerate(delays):
            tg.start_soon(one, i, delay)
    return woke


@needs_fd
@pytest.mark.parametrize("loop", LOOPS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(delays=st.lists(st.integers(0, 40).map(lambda n: n / 10_000), min_size=1, max_size=12))
def test_fd_sleeps_end_after_their_deadlines_in_deadline_order(loop: str, delays: list[float]) -> None:
    """Every FdSleep ends at or after its deadline, and concurrent ones end in the order of their deadlines."""
    sleep = precise_sleep()
    woke = run_loop(lambda: _sleep_all(sleep, delays), use_uvloop=loop == "uvloop")
    assert sorted(i for *_, i in woke) == list(range(len(delays)))
    assert all(at >= deadline for deadline, at, _ in woke)
    deadlines = [deadline for deadline, _, _ in woke]
    assert deadlines == sorted(deadlines)


@needs_fd
@pytest.mark.parametrize("loop", LOOPS)
def test_a_cancelled_fd_sleep_leaves_the_others_on_time(loop: str) -> None:
    """Cancelling the earliest sleep ends it at once; the later ones still end, after their deadlines."""
    sleep = precise_sleep()

    async def main() -> tuple[float, list[tuple[float, float, int]]]:
        t0 = time.monotonic()
        with anyio.move_on_after(0.001):
            await sleep(5.0)
        cut = time.monotonic() - t0
        with anyio.CancelScope() as scope:
            scope.cancel()
            await sleep(0.001)  # cancelled before it waits: its entry stays behind in the heap
        return cut, await _sleep_all(sleep, [0.05, 0.002])

    cut, woke = run_loop(main, use_uvloop=loop == "uvloop")
    assert cut < 1.0
    assert [i for *_, i in woke] == [1, 0] and all(at >= deadline for deadline, at, _ in woke)


@needs_fd
def test_each_event_loop_gets_a_timer_of_its_own() -> None:
    """One FdSleep serves loop after loop: each run's sleeps end, on asyncio's loop and on uvloop's."""
    sleep = precise_sleep()
    for loop in LOOPS * 2:
        woke = run_loop(lambda: _sleep_all(sleep, [0.02, 0.001]), use_uvloop=loop == "uvloop")
        assert [i for *_, i in woke] == [1, 0] and all(at >= deadline for deadline, at, _ in woke)


def test_latency_llm_waits_with_the_sleep_it_is_given() -> None:
    """LatencyLLM awaits its injected sleep with each request's latency, then answers as its inner LLM."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    llm = LatencyLLM(lambda request: "ok", latency=0.25, sleep=sleep)
    request = LLMRequest((Message("user", "x"),))
    assert anyio.run(llm, request) == "ok"
    assert slept == [0.25]
    with pytest.raises(TypeError, match="sleep"):
        LatencyLLM(lambda request: "ok", sleep=0.1)  # type: ignore[arg-type]
