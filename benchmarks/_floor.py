"""The anyio floor: how close to the critical-path limit a minimal anyio program gets.

For a latency workload's recorded requests, `anyio_floor` builds the same calls and
dependencies the limit is computed from (`benchmarks._critical.request_calls`: a
forward call waits for its inputs' calls, the output's backward call for the
sample's whole forward, a stepping node's backward call for the backward calls of
the stepping successors that target it), gives each call the same latency
(``LatencyLLM.latency_for``), and runs them in one event loop doing as little as
possible: one task per call, started with ``TaskGroup.start_soon`` the moment the
last call it waits for ends, which sleeps its latency and then starts whichever
waiting calls it was the last to hold up. No requests are built, hashed or
answered; the latencies and the dependents of each call are worked out before the
clock starts.

Its ``wall / limit`` is what the event loop alone costs on this machine for that
shape of work; semgrad's ratio above it is the library's share of the gap.

`measure_parked_floor` is lower still: every call's task is started *before* the
clock, parked on an event, and woken when its last dependency ends -- no task is
started while the clock runs, so what is left is waking tasks and the timers.

Examples:
    >>> from semgrad.backends.fake import HashLLM, RecordingLLM
    >>> from semgrad.core import forward, gather
    >>> from semgrad.effects import run_sync
    >>> from semgrad.topologies import paper_graph
    >>> graph, params = paper_graph()
    >>> rec = RecordingLLM(HashLLM())
    >>> _ = run_sync(gather(*(forward(graph, params, {"question": str(i)}, sample=i) for i in range(2))), rec)
    >>> anyio_floor(graph, params, rec.requests, lambda request: 0.005) >= 0.010
    True
"""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence

import anyio

from semgrad.core import Graph, LLMRequest, Params
from semgrad.effects import run_loop

from ._critical import Call, request_calls

__all__ = ["anyio_floor", "measure_floor", "measure_parked_floor"]

#: how a call waits out its latency: ``anyio.sleep`` unless one is given (`benchmarks._wake`).
Sleep = Callable[[float], Awaitable[None]]


def _dependencies(calls: Sequence[Call]) -> tuple[list[list[int]], list[int], list[int]]:
    """Each call's dependents, how many calls each waits for, and the calls that wait for none."""
    dependents: list[list[int]] = [[] for _ in calls]
    for i, call in enumerate(calls):
        for j in call.after:
            dependents[j].append(i)
    waiting = [len(call.after) for call in calls]
    return dependents, waiting, [i for i, n in enumerate(waiting) if n == 0]


def measure_floor(
    calls: Sequence[Call], delays: Sequence[float], *, uvloop: bool = False, sleep: Sleep | None = None
) -> tuple[float, float]:
    """One run of `calls` (from `request_calls`) under `anyio.run`, call i sleeping ``delays[i]``
    (on uvloop's event loop with `uvloop`, else asyncio's own).

    Returns ``(wall, cpu)`` seconds: `time.perf_counter` and `time.process_time`
    inside the event loop, from just before the first ``start_soon`` to the task
    group's exit (every call done).
    """
    dependents, waiting, roots = _dependencies(calls)
    delays = list(delays)
    sleep = sleep or anyio.sleep

    async def body() -> tuple[float, float]:
        gc.collect()
        async with anyio.create_task_group() as tg:
            start_soon = tg.start_soon

            async def call(i: int) -> None:
                await sleep(delays[i])
                for j in dependents[i]:
                    waiting[j] -= 1
                    if not waiting[j]:
                        start_soon(call, j)

            t0, c0 = time.perf_counter(), time.process_time()
            for i in roots:
                start_soon(call, i)
        return time.perf_counter() - t0, time.process_time() - c0

    return run_loop(body, use_uvloop=uvloop)


def measure_parked_floor(
    calls: Sequence[Call], delays: Sequence[float], *, uvloop: bool = False, sleep: Sleep | None = None
) -> tuple[float, float]:
    """Like `measure_floor`, with every call's task started and parked before the clock starts.

    Each task waits on its own `anyio.Event`, set when the last call it depends on
    ends; the clock starts just before the roots' events are set.
    """
    dependents, waiting, roots = _dependencies(calls)
    delays = list(delays)
    sleep = sleep or anyio.sleep

    async def body() -> tuple[float, float]:
        events = [anyio.Event() for _ in calls]
        parked = 0
        all_parked = anyio.Event()

        async def call(i: int) -> None:
            nonlocal parked
            parked += 1
            if parked == len(calls):
                all_parked.set()
            await events[i].wait()
            await sleep(delays[i])
            for j in dependents[i]:
                waiting[j] -= 1
                if not waiting[j]:
                    events[j].set()

        async with anyio.create_task_group() as tg:
            for i in range(len(calls)):
                tg.start_soon(call, i)
            await all_parked.wait()
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            for i in roots:
                events[i].set()
        return time.perf_counter() - t0, time.process_time() - c0

    return run_loop(body, use_uvloop=uvloop)


def anyio_floor(
    graph: Graph,
    params: Params,
    requests: Iterable[LLMRequest],
    latency: Callable[[LLMRequest], float],
    *,
    with_backward: bool = False,
    parked: bool = False,
    uvloop: bool = False,
) -> float:
    """Wall seconds of one minimal anyio run of a recorded run's calls (see the module docstring).

    Args:
        graph, params: The system the program ran.
        requests: Every request of one run of the program (from a `RecordingLLM`).
        latency: Each request's latency in seconds (``LatencyLLM.latency_for``).
        with_backward: The program is ``bind(forward, backward)`` per sample.
        parked: Time `measure_parked_floor` instead of `measure_floor`.
        uvloop: On uvloop's event loop instead of asyncio's own.
    """
    calls = request_calls(graph, params, requests, with_backward=with_backward)
    measure = measure_parked_floor if parked else measure_floor
    return measure(calls, [latency(call.request) for call in calls], uvloop=uvloop)[0]
