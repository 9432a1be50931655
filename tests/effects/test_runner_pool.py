"""The runner's worker pool: few tasks at zero latency, the full width at real latency, limits, no leftovers."""

from __future__ import annotations

import asyncio
import weakref
import zlib

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import FunctionLLM, HashLLM
from semgrad.core import GraphBuilder, LLMRequest, Message, Program, ProtocolError, forward, gather
from semgrad.core.programs import Done, ask, bind
from semgrad.effects import Runner, limited, run, run_loop, run_sync
from semgrad.testing import graphs, inputs_for, pure_llms

from ._graphs import chain_graph

pytestmark = pytest.mark.usefixtures("worker_tasks")  # each test on both kinds of worker task (conftest)


def batch(graph, params, size):
    return gather(*(forward(graph, params, {"q": str(i)}, sample=i) for i in range(size)))


@settings(max_examples=15, deadline=None)
@given(size=st.integers(1, 300), depth=st.integers(1, 3))
async def test_an_llm_that_never_suspends_is_answered_by_at_most_two_workers(size, depth):
    """An async LLM that returns without suspending is served by at most two worker tasks, whatever the batch."""
    graph, params = chain_graph(depth)
    hash_llm = HashLLM()
    workers: set = set()
    tasks = {"before": len(anyio.get_running_tasks()), "most": 0}

    async def llm(request):
        workers.add(anyio.get_current_task().id)
        tasks["most"] = max(tasks["most"], len(anyio.get_running_tasks()))
        return hash_llm(request)

    runner = Runner(FunctionLLM(llm))
    await runner.run(batch(graph, params, size))
    assert runner.statistics().calls == size * depth
    assert len(workers) <= 2
    assert tasks["most"] - tasks["before"] <= 2


@settings(max_examples=10, deadline=None)
@given(width=st.integers(1, 80), limit=st.one_of(st.none(), st.integers(1, 12)))
async def test_a_wave_of_slow_calls_gets_the_full_width_in_flight_within_the_limit(width, limit):
    """W requests whose calls wait for each other get min(W, max_concurrency) in flight together, never more."""
    graph, params = chain_graph(1)
    target = width if limit is None else min(width, limit)
    live = {"now": 0, "peak": 0}
    everyone = anyio.Event()

    async def llm(request):
        live["now"] += 1
        live["peak"] = max(live["peak"], live["now"])
        if live["now"] >= target:
            everyone.set()
        try:
            with anyio.fail_after(5):  # a runner that never reaches the width fails here, not hangs
                await everyone.wait()
        finally:
            live["now"] -= 1
        return "ok"

    runner = Runner(FunctionLLM(llm), max_concurrency=limit)
    traces = await runner.run(batch(graph, params, width))
    assert all(trace.ok for trace in traces)
    assert live["peak"] == runner.statistics().peak_in_flight == target


@settings(max_examples=25, deadline=None)
@given(graphs(), st.data(), pure_llms(), st.one_of(st.none(), st.integers(1, 4)), st.integers(1, 4))
async def test_calls_that_suspend_only_sometimes_give_run_syncs_traces(gp, data, llm, limit, every):
    """When only some calls suspend, the async runner gives run_sync's traces and calls, within the limit."""
    graph, params = gp
    samples = [data.draw(inputs_for(graph)) for _ in range(3)]
    program = lambda: gather(*(forward(graph, params, x, sample=i) for i, x in enumerate(samples)))  # noqa: E731
    live = {"now": 0, "peak": 0}

    async def sometimes_slow(request):
        live["now"] += 1
        live["peak"] = max(live["peak"], live["now"])
        try:
            if zlib.crc32(request.prompt.encode()) % every == 0:
                await anyio.sleep(0.001)
            return llm(request)
        finally:
            live["now"] -= 1

    expected = Runner(llm)
    want = expected.run_sync(program())
    runner = Runner(FunctionLLM(sometimes_slow), max_concurrency=limit)
    assert await runner.run(program()) == want
    assert runner.statistics().calls_by_purpose == expected.statistics().calls_by_purpose
    assert live["peak"] == runner.statistics().peak_in_flight <= (limit or live["peak"])


async def test_no_worker_task_outlives_its_run():
    """After run returns, at zero latency and at real latency alike, no worker task is left."""
    graph, params = chain_graph(2)
    before = len(anyio.get_running_tasks())

    async def instant(request):
        return "ok"

    async def slow(request):
        await anyio.sleep(0.01)
        return "ok"

    for llm in (instant, slow):
        await Runner(FunctionLLM(llm)).run(batch(graph, params, 20))
        assert len(anyio.get_running_tasks()) == before


async def test_cancelling_a_run_whose_own_task_waits_for_its_workers_cancels_every_call():
    """Cancelled from outside after its own task has left the pool (to wait for the others), a run still
    cancels every call in flight and leaves no worker task behind."""
    graph, params = chain_graph(1)
    before = len(anyio.get_running_tasks())
    # Sample 0 (the run's own task) ends after sample 1, whose worker parks; then, with one call
    # in flight and one worker parked, the run's task has no call to wait for and leaves the pool.
    delays = {0: 0.05, 1: 0.001, 2: 10.0}
    host = anyio.get_current_task().id
    calls = {"open": 0, "host": 0}

    async def llm(request):
        calls["open"] += 1
        calls["host"] += anyio.get_current_task().id == host
        try:
            await anyio.sleep(delays[int(request.sample)])
        finally:
            calls["open"] -= 1
        return "ok"

    with anyio.move_on_after(0.2) as scope:
        await Runner(FunctionLLM(llm)).run(batch(graph, params, 3))
    assert scope.cancelled_caught
    assert calls == {"open": 0, "host": 1}
    assert len(anyio.get_running_tasks()) == before


class _Abort(BaseException):
    """Not an `Exception`: the runner does not turn it into an error reply."""


def _waiting(open_calls, special, misbehave):
    """An LLM whose call for sample `special` runs `misbehave()` after 10 ms, and whose other calls wait 10 s,
    listed in `open_calls` while they do."""

    async def llm(request):
        i = int(request.sample)
        if i == special:
            await anyio.sleep(0.01)
            await misbehave()
        open_calls.append(i)
        try:
            await anyio.sleep(10)
        finally:
            open_calls.remove(i)
        return "ok"

    return FunctionLLM(llm)


def _aborting(open_calls):
    """An LLM whose call for sample 2 raises `_Abort` after 10 ms (sample 0 goes to the run's own task) and
    whose other calls wait 10 s, listed in `open_calls` while they do."""

    async def abort():
        raise _Abort("stop")

    return _waiting(open_calls, 2, abort)


def _alone(exc):
    """`exc`, or the one exception inside a group of one (how a task group raises it)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def test_a_base_exception_from_a_call_ends_the_run_cancels_the_rest_and_leaves_no_task():
    """A BaseException that is not an Exception, raised in any worker's call, ends the run with it (alone,
    or in a group), cancels the calls still in flight and leaves no worker task behind."""
    graph, params = chain_graph(1)
    before = len(anyio.get_running_tasks())
    open_calls = []
    with anyio.fail_after(5), pytest.raises(BaseException) as caught:
        await Runner(_aborting(open_calls)).run(batch(graph, params, 4))
    assert isinstance(_alone(caught.value), _Abort)
    assert open_calls == []
    assert len(anyio.get_running_tasks()) == before


async def test_a_task_factory_the_user_installed_makes_every_worker_task():
    """With a task factory installed on the loop, every worker task the run starts is made by it."""
    graph, params = chain_graph(1)
    loop = asyncio.get_running_loop()
    made = []

    def factory(loop, coro, **kwargs):
        made.append(coro)
        return asyncio.Task(coro, loop=loop, **kwargs)

    async def llm(request):
        await anyio.sleep(0.01)
        return "ok"

    previous = loop.get_task_factory()
    loop.set_task_factory(factory)
    try:
        await Runner(FunctionLLM(llm)).run(batch(graph, params, 8))
    finally:
        loop.set_task_factory(previous)
    assert len(made) == 7  # the run's own task takes the first call; every other call gets a worker


async def test_a_one_request_program_is_answered_by_the_task_that_runs_it():
    """The task that calls run makes the first call itself: a one-request program starts no task."""
    graph, params = chain_graph(1)
    host = anyio.get_current_task().id
    before = len(anyio.get_running_tasks())
    seen = []

    async def llm(request):
        seen.append((anyio.get_current_task().id, len(anyio.get_running_tasks())))
        await anyio.sleep(0.001)
        return "ok"

    await Runner(FunctionLLM(llm)).run(forward(graph, params, {"q": "x"}))
    assert seen == [(host, before)]


async def test_parked_workers_never_outnumber_the_calls_in_flight():
    """As a wave of calls ends one by one, parked workers are released so that they never outnumber the calls
    still in flight: when the last call ends, at most one other worker is left to wake."""
    width = 20
    b = GraphBuilder()
    q = b.input("q")
    b.llm("root", inputs=[q], instruction="Start.")
    for i in range(width):  # root's reply makes all of them ready at once: workers may park from then on
        b.llm(f"n{i}", inputs=["root"], instruction=f"Part {i}.")
    b.llm("out", inputs=[f"n{i}" for i in range(width)], instruction="Join.")
    graph, params = b.build(output="out")
    before = len(anyio.get_running_tasks())
    alive_at_last = []

    async def llm(request):
        if request.node in ("root", "out"):
            return "ok"
        i = int(request.node[1:])
        # The calls end in order, the last well after the others (time for released workers to return).
        await anyio.sleep(0.002 * (i + 1) + (0.03 if i == width - 1 else 0))
        if i == width - 1:
            alive_at_last.append(len(anyio.get_running_tasks()) - before)
        return "ok"

    await Runner(FunctionLLM(llm)).run(forward(graph, params, {"q": "go"}))
    # Parking every idle worker would leave all `width` workers; parking only while fewer are
    # parked than calling, about half; releasing the surplus as calls end, the last call's
    # worker and at most one parked (the run's own task is one of the two).
    assert alive_at_last and alive_at_last[0] <= 2


@pytest.mark.parametrize("fan_out", [None, "program", "batch child"])
async def test_workers_park_only_once_a_reply_has_made_several_requests_ready(fan_out):
    """Until a reply makes more than one request ready, a worker with nothing to do returns at once:
    worker tasks never outnumber the calls in flight. After such a reply, some park."""
    graph, params = chain_graph(1)
    width = 8
    in_flight = {"now": 0}
    idle_workers = []  # at each call's end: worker tasks alive beyond those in a call

    async def llm(request):
        if request.node == "root":
            return "ok"
        in_flight["now"] += 1
        await anyio.sleep(0.002 * (int(request.sample) + 1))  # the calls end one by one
        workers = sum(1 for task in anyio.get_running_tasks() if task.name == "semgrad-llm-worker")
        idle_workers.append(workers - in_flight["now"])
        in_flight["now"] -= 1
        return "ok"

    samples = [forward(graph, params, {"q": str(i)}, sample=i) for i in range(width)]
    if fan_out is None:
        program = gather(*samples)
    else:  # a first reply that makes every sample's request ready at once
        root = ask(LLMRequest((Message("user", "root"),), node="root"))
        program = bind(root, lambda _: gather(*samples))
        if fan_out == "batch child":  # a batch's child (fed child by child), not the program
            program = gather(program)
    await Runner(FunctionLLM(llm)).run(program)
    assert len(idle_workers) == width
    assert (max(idle_workers) > 0) == bool(fan_out)


async def test_a_timeout_the_llm_raises_itself_keeps_its_message():
    """Without a runner timeout, a TimeoutError from the LLM is a retryable timeout error with its own message."""
    graph, params = chain_graph(1)

    async def llm(request):
        raise TimeoutError("the provider gave up")

    (trace,) = await Runner(FunctionLLM(llm)).run(batch(graph, params, 1))
    error = trace["n0"].error
    assert (error.kind, error.message, error.retryable) == ("timeout", "the provider gave up", True)


def test_run_sync_gives_the_same_traces_for_an_async_llm_as_for_its_sync_twin():
    """On a wide two-level batch, run_sync of a never-suspending async LLM equals run_sync of the sync one."""
    graph, params = chain_graph(2)

    async def llm(request):
        return HashLLM()(request)

    program = lambda: batch(graph, params, 50)  # noqa: E731
    assert run_sync(program(), FunctionLLM(llm)) == run_sync(program(), HashLLM())


def test_on_uvloop_a_cancelled_or_failed_run_cancels_every_call_and_leaves_no_task():
    """On uvloop's loop too, an outside cancellation and a BaseException from a worker's call each end the run,
    cancel every call in flight and leave no worker task behind."""
    pytest.importorskip("uvloop")  # the test extra installs it
    graph, params = chain_graph(1)
    seen = {}

    async def body():
        assert type(asyncio.get_running_loop()).__module__.startswith("uvloop")
        before = len(anyio.get_running_tasks())
        open_calls = []
        with anyio.move_on_after(0.1) as scope:
            await Runner(_aborting(open_calls)).run(batch(graph, params, 2))
        seen["cancelled"] = (scope.cancelled_caught, list(open_calls), len(anyio.get_running_tasks()) - before)
        try:
            with anyio.fail_after(5):
                await Runner(_aborting(open_calls)).run(batch(graph, params, 4))
        except BaseException as exc:
            seen["failed"] = (type(_alone(exc)), list(open_calls), len(anyio.get_running_tasks()) - before)

    run_loop(body, use_uvloop=True)
    assert seen == {"cancelled": (True, [], 0), "failed": (_Abort, [], 0)}


def _stray_cancelling(stray, open_calls):
    """An LLM whose call for sample `stray` awaits, after 10 ms, a future that another party cancelled (a
    CancelledError that no cancel scope raised), and whose other calls wait 10 s, listed in `open_calls`."""

    async def await_a_cancelled_future():
        cancelled = asyncio.get_running_loop().create_future()
        cancelled.cancel()
        await cancelled

    return _waiting(open_calls, stray, await_a_cancelled_future)


async def _stray_run(stray):
    """Run a batch of 4 over `_stray_cancelling(stray)`: (the exception, calls left open, tasks left)."""
    graph, params = chain_graph(1)
    before = len(anyio.get_running_tasks())
    open_calls = []
    with anyio.fail_after(5):
        try:
            await Runner(_stray_cancelling(stray, open_calls)).run(batch(graph, params, 4))
        except ProtocolError as exc:
            return exc, list(open_calls), len(anyio.get_running_tasks()) - before
    pytest.fail("the run ended without an error")


@pytest.mark.parametrize("stray", [0, 2], ids=["the run's own task", "a worker task"])
async def test_a_call_cancelled_outside_the_run_ends_it_with_an_error_naming_the_call(stray):
    """A call that ends in a CancelledError the run did not cause (on its own task or a worker's) ends the run
    with a ProtocolError naming the call, cancels the calls still in flight and leaves no task behind."""
    error, open_calls, left = await _stray_run(stray)
    assert f"forward call for node 'n0', sample {stray} was cancelled outside the run" in str(error)
    assert (open_calls, left) == ([], 0)


async def test_a_worker_task_cancelled_by_another_task_ends_the_run_with_an_error():
    """A semgrad-llm-worker task that another task cancels with task.cancel() ends the run with a ProtocolError
    (not a hang, not an unrelated error later), cancels the other calls and leaves no task behind."""
    graph, params = chain_graph(1)
    before = len(anyio.get_running_tasks())
    open_calls = []

    async def llm(request):
        open_calls.append(request.sample)
        try:
            await anyio.sleep(10)
        finally:
            open_calls.remove(request.sample)
        return "ok"

    async def cancel_a_worker():
        await anyio.sleep(0.05)
        next(t for t in asyncio.all_tasks() if t.get_name() == "semgrad-llm-worker").cancel()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_a_worker)
            with pytest.raises(ProtocolError, match="was cancelled outside the run"):
                await Runner(FunctionLLM(llm)).run(batch(graph, params, 3))
    assert open_calls == []
    assert len(anyio.get_running_tasks()) == before


async def test_an_asyncio_timeout_around_a_run_still_cancels_it_as_a_timeout():
    """A cancellation asked for from outside (asyncio.timeout's task.cancel()) is not taken for a stray one:
    the run is cancelled and the timeout raises TimeoutError."""
    graph, params = chain_graph(1)
    before = len(anyio.get_running_tasks())

    async def llm(request):
        await anyio.sleep(10)
        return "ok"

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await Runner(FunctionLLM(llm)).run(batch(graph, params, 3))
    assert len(anyio.get_running_tasks()) == before


def test_on_uvloop_a_call_cancelled_outside_the_run_ends_it_with_an_error():
    """On uvloop's loop too, a call cancelled outside the run (on the run's own task or a worker's) ends the run
    with a ProtocolError naming it, and leaves no call open and no task behind."""
    pytest.importorskip("uvloop")  # the test extra installs it
    seen = []

    async def body():
        assert type(asyncio.get_running_loop()).__module__.startswith("uvloop")
        for stray in (0, 2):
            error, open_calls, left = await _stray_run(stray)
            seen.append((f"node 'n0', sample {stray} was cancelled outside" in str(error), open_calls, left))

    run_loop(body, use_uvloop=True)
    assert seen == [(True, [], 0), (True, [], 0)]


def _logged(log):
    """A str type whose formatting (how prompts show a value) is logged in `log`."""

    class Logged(str):
        def __format__(self, spec):
            if self == "unprintable":
                raise ValueError("no text for this value")
            log.append(str(self))
            return str.__format__(self, spec)

    return Logged


@settings(max_examples=10, deadline=None)
@given(size=st.integers(2, 40), depth=st.integers(1, 3), latency=st.sampled_from([0.0, 0.002]))
async def test_a_batch_s_first_call_goes_out_before_the_next_sample_is_rendered(size, depth, latency):
    """The pool asks a gather's forward passes for their requests one at a time: the first call goes
    out when only the first sample's prompt is rendered, and every sample's is rendered once in all."""
    graph, params = chain_graph(depth)
    log: list[str] = []
    logged = _logged(log)
    seen = []

    async def llm(request):
        seen.append(len(log))
        await anyio.sleep(latency)
        return "ok"

    program = gather(*(forward(graph, params, {"q": logged(str(i))}, sample=i) for i in range(size)))
    traces = await Runner(FunctionLLM(llm)).run(program)
    assert all(trace.ok for trace in traces)
    assert seen[0] == 1
    assert sorted(log) == sorted(str(i) for i in range(size))


@pytest.mark.parametrize("size", [1, 8])
@pytest.mark.parametrize("latency", [0.0, 0.01])
async def test_a_prompt_that_cannot_be_rendered_ends_the_run_with_its_exception_and_no_task_left(latency, size):
    """A sample whose first prompt cannot be rendered ends the run with that exception, unwrapped, while
    other samples' calls are out (or alone); no worker task is left."""
    graph, params = chain_graph(2)
    logged = _logged([])
    before = len(anyio.get_running_tasks())

    async def llm(request):
        await anyio.sleep(latency)
        return "ok"

    samples = [logged("unprintable" if i == size // 2 else str(i)) for i in range(size)]
    passes = [forward(graph, params, {"q": q}, sample=i) for i, q in enumerate(samples)]
    program = gather(*passes) if size > 1 else passes[0]
    with anyio.fail_after(5), pytest.raises(ValueError, match="no text for this value"):
        await Runner(FunctionLLM(llm)).run(program)
    assert len(anyio.get_running_tasks()) == before


class _Steps(Program[int]):
    """A program of `left` calls one after another; its states can be weakly referenced."""

    __slots__ = ("left", "request", "__weakref__")

    def __init__(self, left: int, request: LLMRequest) -> None:
        self.left = left
        self.request = request

    @property
    def emitted(self):
        return (((), self.request),)

    def feed(self, token, reply):
        return Done(self.left) if self.left == 1 else _Steps(self.left - 1, self.request)


class _FirstStates:
    """`size` programs of three calls each (a gather of them, or one), and a check, made on each
    call after a program's first, that the run no longer holds that program's first state."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.firsts: list[weakref.ref] = []
        self.calls = [0] * size
        self.freed_when_asked_again: list[bool] = []

    def program(self):
        def steps(i):
            first = _Steps(3, LLMRequest((Message("user", f"sample {i}"),), sample=i))
            self.firsts.append(weakref.ref(first))
            return first

        return gather(*(steps(i) for i in range(self.size))) if self.size > 1 else steps(0)

    def check(self, request) -> None:
        self.calls[request.sample] += 1
        if self.calls[request.sample] > 1:  # (freed when its last reference goes: no cycle holds it)
            self.freed_when_asked_again.append(self.firsts[request.sample]() is None)

    def value(self):
        return (1,) * self.size if self.size > 1 else 1


@pytest.mark.parametrize("size", [1, 6])
@pytest.mark.parametrize("latency", [0.0, 0.002])
@pytest.mark.parametrize("entry", ["Runner.run", "run"])
async def test_a_run_holds_each_program_s_current_state_only(size, latency, entry):
    """Once a reply is fed, the run holds neither the state it was fed to nor the program it was
    given (a batch's gather, which holds every sample's first state): only current states."""
    states = _FirstStates(size)

    async def llm(request):
        states.check(request)
        await anyio.sleep(latency)
        return "ok"

    program = states.program()
    running = Runner(FunctionLLM(llm)).run(program) if entry == "Runner.run" else run(program, FunctionLLM(llm))
    del program
    assert await running == states.value()
    assert states.freed_when_asked_again == [True] * (2 * size)


@pytest.mark.parametrize("size", [1, 6])
@pytest.mark.parametrize("entry", ["Runner.run_sync", "run_sync"])
@pytest.mark.parametrize("sync_llm", [True, False])
def test_a_sync_run_holds_each_program_s_current_state_only(size, entry, sync_llm):
    """run_sync, with a sync LLM (depth first) or an async one, holds only current states too."""
    states = _FirstStates(size)

    def call(request):
        states.check(request)
        return "ok"

    async def async_call(request):
        return call(request)

    llm = FunctionLLM(call if sync_llm else async_call)
    # (Not inside an `assert`, whose rewriting keeps the program for its message.)
    value = Runner(llm).run_sync(states.program()) if entry == "Runner.run_sync" else run_sync(states.program(), llm)
    assert value == states.value()
    assert states.freed_when_asked_again == [True] * (2 * size)


async def test_a_run_that_fails_while_a_worker_is_parked_ends_with_its_exception_and_no_task_left():
    """A run that fails while a worker is parked (its wait cancelled with the rest) raises its own
    exception, and no task is left."""
    before = len(anyio.get_running_tasks())
    latency = {"root": 0.0, "fast": 0.001, "boom": 0.03, "slow": 5.0}
    parked_at_boom = []

    async def llm(request):
        await anyio.sleep(latency[request.node])
        if request.node == "boom":
            workers = sum(1 for task in anyio.get_running_tasks() if task.name == "semgrad-llm-worker")
            parked_at_boom.append(workers - 1)  # beyond boom's (slow's is the run's own task, not named)
        return "ok"

    def on_reply(request, reply):
        if request.node == "boom":
            raise ZeroDivisionError("from on_reply")

    def call(node):
        return ask(LLMRequest((Message("user", node),), node=node))

    # root's reply makes the three others ready at once (so workers park from then on); the run's own
    # task takes slow, the first, and fast's worker parks when it is done.
    program = bind(call("root"), lambda _: gather(call("slow"), call("boom"), call("fast")))
    runner = Runner(FunctionLLM(llm), on_reply=on_reply)
    with anyio.fail_after(2), pytest.raises(ZeroDivisionError, match="from on_reply"):
        await runner.run(program)
    assert len(anyio.get_running_tasks()) == before
    assert parked_at_boom == [1]


async def test_max_concurrency_bounds_each_run_and_a_shared_limited_llm_bounds_them_all():
    """Runner(max_concurrency=2) bounds each run (three runs at once on one Runner have 6 calls in flight), as
    documented; one limited(llm, max_concurrency=2) under them holds all three runs to 2."""
    graph, params = chain_graph(1)
    live = {"now": 0, "peak": 0}

    async def llm(request):
        live["now"] += 1
        live["peak"] = max(live["peak"], live["now"])
        await anyio.sleep(0.02)
        live["now"] -= 1
        return "ok"

    peaks = []
    for shared in (llm, limited(llm, max_concurrency=2)):
        live["peak"] = 0
        runner = Runner(shared, max_concurrency=2)
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(runner.run, batch(graph, params, 4))
        peaks.append(live["peak"])
    assert peaks == [6, 2]
