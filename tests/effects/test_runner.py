"""The anyio runner: equivalence with run_sync, event-driven starts, limits, failures, cancellation."""

from __future__ import annotations

import zlib
from collections import Counter

import anyio
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import FunctionLLM, HashLLM, LatencyLLM, ScriptedLLM
from semgrad.core import GraphBuilder, LLMError, LLMRequest, Message, Program, ProtocolError, forward, gather
from semgrad.core.programs import ask, bind, map_
from semgrad.effects import Runner, run, run_sync
from semgrad.testing import graphs, inputs_for, pure_llms

from ._graphs import chain_graph
from .test_runner_sync_order import _ask, _feed_depth_first, _programs

pytestmark = pytest.mark.usefixtures("worker_tasks")  # each test on both kinds of worker task (conftest)


@settings(max_examples=25)
@given(graphs(), st.data(), pure_llms())
def test_run_and_run_sync_give_equal_traces(gp, data, llm):
    """For random DAGs and a pure fake, the async runner and run_sync give equal traces."""
    graph, params = gp
    samples = [data.draw(inputs_for(graph)) for _ in range(2)]
    program = lambda: gather(*(forward(graph, params, x, sample=i) for i, x in enumerate(samples)))  # noqa: E731

    async def async_llm(request):
        await anyio.sleep(0)
        return llm(request)

    expected = run_sync(program(), llm)
    assert run_sync(program(), FunctionLLM(async_llm)) == expected
    assert anyio.run(lambda: run(program(), FunctionLLM(async_llm), max_concurrency=3)) == expected


class Clock:
    """Records when each node's call starts and ends (monotonic seconds)."""

    def __init__(self, latencies):
        self.latencies, self.starts, self.ends = latencies, {}, {}

    async def __call__(self, request):
        self.starts[request.node] = anyio.current_time()
        await anyio.sleep(self.latencies.get(request.node, 0.0))
        self.ends[request.node] = anyio.current_time()
        return f"{request.node} done"


async def test_a_nodes_call_starts_as_soon_as_its_inputs_exist():
    """On a graph with a slow and a fast branch, the fast branch's successor starts before the slow branch ends."""
    b = GraphBuilder()
    q = b.input("q")
    slow = b.llm("slow", inputs=[q], instruction="Think for long.")
    fast = b.llm("fast", inputs=[q], instruction="Think briefly.")
    after_fast = b.llm("after_fast", inputs=[fast], instruction="Continue.")
    b.llm("answer", inputs=[slow, after_fast], instruction="Answer.")
    graph, params = b.build(output="answer")
    clock = Clock({"slow": 0.5, "fast": 0.01, "after_fast": 0.01})
    trace = await run(forward(graph, params, {"q": "?"}), FunctionLLM(clock))
    assert trace.ok
    assert clock.starts["after_fast"] < clock.ends["slow"]
    assert clock.ends["after_fast"] < clock.ends["slow"]
    assert clock.starts["answer"] >= clock.ends["slow"]


async def test_requests_start_across_samples_without_waiting_for_a_batch():
    """A fast sample's second node starts while a slow sample's first node is still running."""
    graph, params = chain_graph(2)
    starts: dict = {}

    async def llm(request):
        starts[(request.sample, request.node)] = anyio.current_time()
        await anyio.sleep(0.4 if request.sample == "slow" else 0.01)
        return "ok"

    program = gather(
        forward(graph, params, {"q": "a"}, sample="slow"), forward(graph, params, {"q": "b"}, sample="fast")
    )
    t0 = anyio.current_time()
    await run(program, FunctionLLM(llm))
    assert starts[("fast", "n1")] - t0 < 0.3


@pytest.mark.parametrize("limit", [1, 2, 5])
async def test_the_concurrency_limit_holds(limit):
    """With max_concurrency=C, never more than C calls are in flight, and C are used when available."""
    b = GraphBuilder()
    q = b.input("q")
    for i in range(4):
        b.llm(f"n{i}", inputs=[q], instruction="x")
    b.llm("out", inputs=[f"n{i}" for i in range(4)], instruction="x")
    graph, params = b.build(output="out")
    live = {"now": 0, "peak": 0}

    async def llm(request):
        live["now"] += 1
        live["peak"] = max(live["peak"], live["now"])
        await anyio.sleep(0.01)
        live["now"] -= 1
        return "ok"

    runner = Runner(FunctionLLM(llm), max_concurrency=limit)
    await runner.run(gather(*(forward(graph, params, {"q": str(i)}, sample=i) for i in range(3))))
    assert live["peak"] == min(limit, 12)
    assert runner.statistics().peak_in_flight == live["peak"]


async def test_backend_exceptions_become_error_replies_and_spare_siblings():
    """An exception in one call becomes an LLMError in the trace; sibling calls still complete."""
    b = GraphBuilder()
    q = b.input("q")
    b.llm("bad", inputs=[q], instruction="x")
    b.llm("good", inputs=[q], instruction="x")
    b.llm("out", inputs=["bad", "good"], instruction="x")
    graph, params = b.build(output="out")

    async def llm(request):
        if request.node == "bad":
            raise RuntimeError("backend exploded")
        await anyio.sleep(0.01)
        return "fine"

    runner = Runner(FunctionLLM(llm))
    trace = await runner.run(forward(graph, params, {"q": "?"}))
    assert trace["bad"].error == LLMError("exception", "RuntimeError: backend exploded")
    assert trace.value("good") == "fine"
    stats = runner.statistics()
    assert (stats.calls, stats.errors, dict(stats.errors_by_kind)) == (2, 1, {"exception": 1})


async def test_a_call_past_the_timeout_becomes_a_retryable_timeout_error():
    """A call slower than the runner's timeout yields LLMError(kind='timeout', retryable=True)."""
    b = GraphBuilder()
    q = b.input("q")
    b.llm("out", inputs=[q], instruction="x")
    graph, params = b.build(output="out")
    trace = await run(forward(graph, params, {"q": "?"}), LatencyLLM(HashLLM(), 5.0), timeout=0.05)
    assert trace["out"].error.kind == "timeout" and trace["out"].error.retryable


async def test_cancellation_is_clean():
    """Cancelling a run cancels every call in flight; none is left running."""
    b = GraphBuilder()
    q = b.input("q")
    for i in range(5):
        b.llm(f"n{i}", inputs=[q], instruction="x")
    graph, params = b.build(output="n0")
    live = {"now": 0, "started": 0}

    async def llm(request):
        live["now"] += 1
        live["started"] += 1
        try:
            await anyio.sleep(10)
        finally:
            live["now"] -= 1
        return "never"

    with anyio.move_on_after(0.1) as scope:
        await run(forward(graph, params, {"q": "?"}), FunctionLLM(llm))
    assert scope.cancelled_caught
    assert live == {"now": 0, "started": 5}


def test_sync_llm_statistics_count_calls_by_purpose_and_tokens():
    """Statistics count calls per purpose, errors per kind and reported tokens."""
    from semgrad.core import LLMResponse

    b = GraphBuilder()
    q = b.input("q")
    b.llm("a", inputs=[q], instruction="x")
    b.llm("b", inputs=[q], instruction="x")
    graph, params = b.build(output="a")
    llm = ScriptedLLM(
        [
            ({"node": "a"}, LLMResponse("<result>A</result>", {"input_tokens": 7, "output_tokens": 2})),
            ({"node": "b"}, LLMError("rate_limit", "slow down", True)),
        ]
    )
    runner = Runner(llm)
    runner.run_sync(forward(graph, params, {"q": "?"}))
    stats = runner.statistics()
    assert (stats.calls, dict(stats.calls_by_purpose), stats.errors) == (2, {"forward": 2}, 1)
    assert (stats.input_tokens, stats.output_tokens, stats.peak_in_flight) == (7, 2, 1)


async def test_a_reply_makes_its_successor_start_before_the_rest_of_its_event_loop_pass_is_fed():
    """When two samples' replies arrive in one loop pass, the first's next call starts before the other is fed."""
    graph, params = chain_graph(2)
    gate, events = anyio.Event(), []

    async def llm(request):
        events.append(("call", request.node, request.sample))
        if request.node == "n0":
            await gate.wait()  # both first calls wake in the same pass
        return "ok"

    def on_reply(request, reply):
        events.append(("reply", request.node, request.sample))

    program = gather(*(forward(graph, params, {"q": str(i)}, sample=i) for i in range(2)))
    async with anyio.create_task_group() as tg:
        tg.start_soon(Runner(FunctionLLM(llm), on_reply=on_reply).run, program)
        while len(events) < 2:
            await anyio.sleep(0.001)
        gate.set()
    assert events.index(("call", "n1", 0)) < events.index(("reply", "n0", 1))


@pytest.mark.parametrize("where", ["program", "on_reply"])
async def test_an_exception_while_feeding_a_reply_ends_the_run_as_itself(where):
    """An exception from the program's code or from on_reply leaves run unwrapped and cancels the other calls."""
    cancelled = []

    async def llm(request):
        if request.node == "slow":
            try:
                await anyio.sleep(10)
            except BaseException:
                cancelled.append(request.node)
                raise
        await anyio.sleep(0.01)  # the slow call is in flight by the time this one is fed
        return "ok"

    def boom(*_):
        raise ZeroDivisionError("from " + where)

    fast = ask(LLMRequest((Message("user", "fast"),), node="fast"))
    slow = ask(LLMRequest((Message("user", "slow"),), node="slow"))
    program = gather(map_(fast, boom) if where == "program" else fast, slow)
    runner = Runner(FunctionLLM(llm), on_reply=boom if where == "on_reply" else None)
    with anyio.fail_after(5), pytest.raises(ZeroDivisionError, match=where):
        await runner.run(program)
    assert cancelled == ["slow"]


class _Stuck(Program):
    """A program that waits for replies without asking for any (a broken program)."""

    emitted = ()

    def __init__(self, after_first: bool) -> None:
        if after_first:  # ask once, then get stuck
            self.emitted = (((), LLMRequest((Message("user", "once"),))),)

    def feed(self, token, reply):
        return _Stuck(False)


@pytest.mark.parametrize("after_first", [False, True])
def test_a_program_that_waits_without_asking_is_a_protocol_error_on_both_runners(after_first):
    """A program that is not done and has nothing in flight raises ProtocolError, sync and async alike."""

    async def async_llm(request):
        await anyio.sleep(0)
        return "ok"

    for llm in (FunctionLLM(lambda request: "ok"), FunctionLLM(async_llm)):
        with pytest.raises(ProtocolError, match="asked for none"):
            run_sync(_Stuck(after_first), llm)


async def test_running_what_is_not_a_program_is_a_type_error_naming_it():
    """run, run_sync and a Runner's run refuse forward left uncalled (or any non-program) with a TypeError."""

    async def async_llm(request):
        return "ok"

    match = r"run needs a Program, such as forward\(graph, params, inputs\), got function \(a function that builds"
    for llm in (FunctionLLM(lambda request: "ok"), FunctionLLM(async_llm)):
        with pytest.raises(TypeError, match=match):
            run_sync(forward, llm)
        with pytest.raises(TypeError, match=match):
            Runner(llm).run_sync(forward)
        with pytest.raises(TypeError, match=match):
            await run(forward, llm)
    with pytest.raises(TypeError, match="got tuple$"):
        await Runner(async_llm).run((1, 2))


@settings(max_examples=30, deadline=None)
@given(
    st.one_of(_programs(), st.lists(_programs(), min_size=2, max_size=4).map(lambda ps: gather(*ps))),
    st.text(max_size=4),
    st.integers(1, 3),
)
@example(
    gather(
        bind(bind(_ask("a"), lambda reply: _ask("b " + reply.unwrap().text)), lambda reply: _ask(reply.unwrap().text)),
        _ask("c"),
    ),
    "",
    1,
)
async def test_the_async_runner_gives_the_value_and_calls_of_feeding_the_whole_program(program, salt, every):
    """On random nests of gather, bind and map_ (the runner feeds a gather's children and their binds apart),
    the async runner returns the value of feeding every reply to the whole program, after the same calls."""
    llm = HashLLM(salt=salt)
    want_value, want_requests = _feed_depth_first(program, llm)
    seen = []

    async def sometimes_slow(request):
        seen.append(request)
        if zlib.crc32(request.prompt.encode()) % every == 0:
            await anyio.sleep(0.001)
        return llm(request)

    assert await run(program, FunctionLLM(sometimes_slow)) == want_value
    assert Counter(seen) == Counter(want_requests)
