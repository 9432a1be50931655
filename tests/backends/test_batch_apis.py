"""OpenAI's Batch API and Anthropic's Message Batches against a local server that implements both: a level per
batch, partial failures reported by kind, expiry and cancellation, and a batch picked up by a later process."""

from __future__ import annotations

import itertools

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends import anthropic, openai_compatible
from semgrad.core import GraphBuilder, LLMRequest, Message, forward, gather
from semgrad.effects import RetryPolicy, Runner, retrying
from semgrad.effects._batching import BatchPolicy, batched, is_batch_reply

from .batch_server import BatchProvider, batch_provider  # noqa: F401

PROVIDERS = ("openai", "anthropic")


class Clock:
    """A fake clock and the sleep that advances it (no wall-clock waits)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()


def backend(server: BatchProvider, kind: str):
    """The provider's backend on the local server."""
    if kind == "openai":
        return openai_compatible(server.url + "/v1", model="m", api_key="sk-test")
    return anthropic("m", base_url=server.url, api_key="sk-ant-test")


def two_levels():
    """A graph of two chained LLM nodes: every sample's first call, then its second."""
    b = GraphBuilder()
    q = b.input("question")
    first = b.llm("draft", inputs=[q], instruction="Draft an answer.")
    b.llm("answer", inputs=[first], instruction="Answer.")
    return b.build(output="answer")


def forwards(n: int):
    graph, params = two_levels()
    return gather(*(forward(graph, params, {"question": f"q{i}?"}) for i in range(n)))


def run(program, llm):
    async def main():
        async with llm.inner if hasattr(llm, "inner") and hasattr(llm.inner, "__aenter__") else _null():
            return await Runner(llm).run(program)

    return anyio.run(main)


class _null:
    async def __aenter__(self):
        return None

    async def __aexit__(self, *exc):
        return None


def _outputs(traces):
    return [t.output_value for t in traces]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_each_dependency_level_goes_as_one_batch_with_the_same_replies_as_plain_calls(
    batch_provider: BatchProvider,  # noqa: F811
    kind: str,
):
    """Five samples of a two-node graph make two batches (one per level) of five lines each, every line billed
    once; the outputs equal those of plain calls, and every reply is marked as a batch's."""
    clock = Clock()
    replies = []
    llm = batched(backend(batch_provider, kind), BatchPolicy(first_poll=1, settle=0), sleep=clock.sleep, clock=clock)
    runner = Runner(llm, on_reply=lambda request, reply: replies.append(reply.unwrap()))
    traces = anyio.run(runner.run, forwards(5))
    assert len(replies) == 10 and all(is_batch_reply(r) for r in replies)
    assert batch_provider.created == 2
    assert [len(b["lines"]) for b in batch_provider.batches.values()] == [5, 5]
    assert set(batch_provider.billed.values()) == {1} and len(batch_provider.billed) == 10
    assert batch_provider.calls == 0
    plain = anyio.run(Runner(backend(batch_provider, kind)).run, forwards(5))
    assert _outputs(traces) == _outputs(plain)
    assert clock.slept and all(s >= 1 for s in clock.slept)  # polled with the injected sleep, with backoff
    assert llm.created == 2


@pytest.mark.parametrize("kind", PROVIDERS)
def test_failed_lines_are_reported_by_kind_and_retried_in_a_later_batch(
    batch_provider: BatchProvider,  # noqa: F811
    kind: str,
):
    """Two of four lines fail with HTTP 500 once: the batch says '2 of 4 lines failed (server 2)', the calls fail
    as retryable server errors, and a retrying layer above sends them again in a second batch that answers."""
    clock = Clock()
    failed_once: set[str] = set()

    def fault(custom_id, body):
        text = str(body)
        if ("q1?" in text or "q3?" in text) and custom_id not in failed_once and len(failed_once) < 2:
            failed_once.add(custom_id)
            return 500
        return None

    batch_provider.line_fault = fault
    said: list[str] = []
    layer = batched(
        backend(batch_provider, kind),
        BatchPolicy(first_poll=1, settle=0),
        sleep=clock.sleep,
        clock=clock,
        say=said.append,
    )
    request = lambda i: LLMRequest((Message("user", f"q{i}?"),))  # noqa: E731

    async def main():
        plain = retrying(layer, RetryPolicy(base_delay=0.0, max_delay=0.0), sleep=clock.sleep)
        async with anyio.create_task_group() as group:
            got = {}

            async def one(i):
                got[i] = await plain(request(i))

            for i in range(4):
                group.start_soon(one, i)
        return got

    got = anyio.run(main)
    assert len(got) == 4 and all(is_batch_reply(r) for r in got.values())
    assert said[0].endswith("2 of 4 lines failed (server 2)"), said
    assert layer.failed_lines == {"server": 2}
    assert batch_provider.created == 2 and [len(b["lines"]) for b in batch_provider.batches.values()] == [4, 2]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_an_expired_batch_fails_its_unrun_lines_as_expired_and_answers_the_rest(
    batch_provider: BatchProvider,  # noqa: F811
    kind: str,
):
    """A batch that expires with half its lines run: those answer, the others fail as retryable batch_expired."""
    clock = Clock()
    batch_provider.expire_next = 1
    layer = batched(backend(batch_provider, kind), BatchPolicy(first_poll=1, settle=0), sleep=clock.sleep, clock=clock)
    outcomes = _four(layer)
    kinds = sorted(o.error.kind if isinstance(o, Exception) else "ok" for o in outcomes)
    assert kinds == ["batch_expired", "batch_expired", "ok", "ok"]
    assert all(o.error.retryable for o in outcomes if isinstance(o, Exception))


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_batch_past_give_up_is_cancelled_and_its_lines_fail_as_cancelled(
    batch_provider: BatchProvider,  # noqa: F811
    kind: str,
):
    """A batch the server holds in progress is cancelled once the injected clock passes give_up; its lines fail
    as batch_cancelled (retryable), none billed, and the cancel request reached the server."""
    clock = Clock()
    batch_provider.hold = True
    said: list[str] = []
    policy = BatchPolicy(first_poll=10, longest_poll=60, settle=0, give_up=300)
    layer = batched(backend(batch_provider, kind), policy, sleep=clock.sleep, clock=clock, say=said.append)
    outcomes = _four(layer)
    assert {o.error.kind for o in outcomes} == {"batch_cancelled"}
    assert not batch_provider.billed
    assert sum(n for route, n in batch_provider.routes.items() if route.endswith("/cancel")) == 1
    assert clock.now >= 300 and any("cancelling" in line for line in said)


def _four(layer):
    from semgrad.core import LLMFailure

    async def main():
        got: list = [None] * 4

        async def one(i):
            try:
                got[i] = await layer(LLMRequest((Message("user", f"q{i}?"),)))
            except LLMFailure as failure:
                got[i] = failure

        async with anyio.create_task_group() as group:
            for i in range(4):
                group.start_soon(one, i)
        return got

    return anyio.run(main)


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_process_cancelled_during_a_batch_is_picked_up_by_the_next_without_paying_again(
    batch_provider: BatchProvider,  # noqa: F811
    kind: str,
):
    """The first process creates a batch (told to on_created at once) and is cancelled while it runs; a second
    process given that record sends no batch for those calls: it polls the first's, and every line is billed
    once."""
    clock = Clock()
    batch_provider.hold = True
    records = []
    first = batched(
        backend(batch_provider, kind), BatchPolicy(first_poll=1, settle=0), sleep=clock.sleep, clock=clock,
        on_created=records.append,
    )  # fmt: skip

    async def cut():
        with anyio.move_on_after(5):  # wall-clock bound only as a guard: the cancel comes when the batch exists
            async with anyio.create_task_group() as group:
                group.start_soon(Runner(first).run, forwards(3))
                while not records:
                    await anyio.sleep(0.001)
                group.cancel_scope.cancel()

    anyio.run(cut)
    assert batch_provider.created == 1 and len(records) == 1 and not batch_provider.billed
    batch_provider.hold = False
    second = batched(
        backend(batch_provider, kind), BatchPolicy(first_poll=1, settle=0), sleep=clock.sleep, clock=clock,
        known=records,
    )  # fmt: skip
    traces = anyio.run(Runner(second).run, forwards(3))
    assert second.picked_up == 1 and second.created == 1  # the first level picked up, the second sent
    assert batch_provider.created == 2
    assert set(batch_provider.billed.values()) == {1} and len(batch_provider.billed) == 6
    assert all(t.output_value for t in traces)


@pytest.mark.parametrize("kind", PROVIDERS)
def test_an_id_from_the_server_that_is_not_a_plain_id_is_refused(batch_provider: BatchProvider, kind: str):  # noqa: F811
    """A server that names its batch '../../files' gets no request to that path: the calls fail as malformed."""
    batch_provider.hostile_id = "../../files"
    clock = Clock()
    layer = batched(backend(batch_provider, kind), BatchPolicy(first_poll=1, settle=0), sleep=clock.sleep, clock=clock)
    outcomes = _four(layer)
    assert {o.error.kind for o in outcomes} == {"malformed"}
    assert "not a plain id" in outcomes[0].error.message
    assert not any("files/" in route and route.startswith("GET") for route in batch_provider.routes)


@settings(max_examples=50)
@given(st.floats(0, 100), st.floats(1, 4), st.floats(0, 600))
def test_the_waits_between_polls_grow_to_their_cap(first, factor, longest):
    """The waits start at first_poll, never shrink while below the cap, and never pass longest_poll (unless the
    first is longer)."""
    waits = list(itertools.islice(BatchPolicy(first_poll=first, factor=factor, longest_poll=longest).waits(), 30))
    assert waits[0] == first
    assert all(b >= a or b == longest for a, b in itertools.pairwise(waits))
    assert all(w <= max(first, longest) for w in waits)
