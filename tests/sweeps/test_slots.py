"""The sweep-wide call limit: CallSlots semantics, the in-process client across threads, the LLM wrapper."""

from __future__ import annotations

import asyncio
import threading

import anyio
import pytest

from semgrad.core import LLMRequest, Message
from semgrad.effects import is_async_llm
from semgrad.sweeps import CallSlots, local_call_slots, slotted

REQUEST = LLMRequest((Message("user", "hi"),))


async def test_at_most_the_limit_is_granted_and_every_waiter_gets_a_slot():
    """Many concurrent acquirers of a limit-3 key never hold more than 3 slots, and all finish."""
    slots = CallSlots({"simulated": 3})
    held = [0, 0]

    async def one(i: int) -> None:
        assert await slots.acquire("simulated", f"r|a|{i}", "r", "a")
        held[0] += 1
        held[1] = max(held[1], held[0])
        await asyncio.sleep(0.001)
        held[0] -= 1
        await slots.release(f"r|a|{i}")

    await asyncio.gather(*(one(i) for i in range(30)))
    assert held[1] == 3
    assert await slots.stats() == {"in_flight": {"simulated": 0}, "peak": {"simulated": 3}}


async def test_unlimited_keys_are_granted_at_once():
    """A backend without a limit takes no slot."""
    slots = CallSlots({"anthropic": 1})
    assert all([await slots.acquire("simulated", f"t{i}", "r", "a") for i in range(5)])
    assert await slots.stats() == {"in_flight": {"anthropic": 0}, "peak": {"anthropic": 0}}


async def test_a_release_before_the_grant_hands_the_slot_straight_back():
    """A ticket abandoned while waiting is refused when its turn comes, and its slot goes to the next waiter."""
    slots = CallSlots({"k": 1})
    assert await slots.acquire("k", "first", "r", "a")
    waiting = asyncio.ensure_future(slots.acquire("k", "abandoned", "r", "a"))
    await asyncio.sleep(0)
    await slots.release("abandoned")  # the caller was cancelled
    await slots.release("first")
    assert await waiting is False
    assert await asyncio.wait_for(slots.acquire("k", "next", "r", "a"), 1) is True
    assert (await slots.stats())["in_flight"] == {"k": 1}


async def test_a_new_attempt_frees_the_slots_of_a_dead_one_and_refuses_its_late_grants():
    """begin(run, new) frees what earlier attempts hold; their pending requests are refused when granted."""
    slots = CallSlots({"k": 2})
    assert await slots.acquire("k", "r|old|0", "r", "old")
    assert await slots.acquire("k", "other|x|0", "other", "x")
    late = asyncio.ensure_future(slots.acquire("k", "r|old|1", "r", "old"))
    await asyncio.sleep(0)
    assert await slots.begin("r", "new") == 1
    assert await late is False
    assert await slots.acquire("k", "r|new|0", "r", "new")
    assert (await slots.stats())["in_flight"] == {"k": 2}


async def test_a_silent_attempt_expires_and_a_beating_one_does_not():
    """With expire_after, the watchdog frees the slots of attempts without recent heartbeats, and only those."""
    slots = CallSlots({"k": 2}, expire_after=0.2)
    await slots.begin("dead", "a")
    await slots.begin("alive", "b")
    assert await slots.acquire("k", "dead|a|0", "dead", "a")
    assert await slots.acquire("k", "alive|b|0", "alive", "b")
    for _ in range(8):
        await asyncio.sleep(0.05)
        await slots.heartbeat("alive", "b")
    assert (await slots.stats())["in_flight"] == {"k": 1}
    assert await asyncio.wait_for(slots.acquire("k", "next|c|0", "next", "c"), 1)
    assert await slots.expire() == 0
    await slots.aclose()


async def test_without_expiry_slots_are_kept_however_long_the_call():
    """Without expire_after (in-process sweeps) nothing expires."""
    slots = CallSlots({"k": 1})
    await slots.begin("r", "a")
    assert await slots.acquire("k", "r|a|0", "r", "a")
    await asyncio.sleep(0.05)
    assert await slots.expire() == 0 and (await slots.stats())["in_flight"] == {"k": 1}


async def test_retire_frees_a_failed_runs_slots():
    """retire(run) frees every slot of the run and refuses its later requests."""
    slots = CallSlots({"k": 1})
    assert await slots.acquire("k", "r|a|0", "r", "a")
    assert await slots.retire("r") == 1
    assert await slots.acquire("k", "r|a|1", "r", "a") is False
    assert await slots.acquire("k", "s|b|0", "s", "b") is True


def test_local_slots_hold_the_limit_across_threads_and_event_loops():
    """Runs in separate threads (each its own event loop) share one limit; peak equals the limit."""
    peak = [0, 0]
    lock = threading.Lock()

    class Slow:
        is_async = True

        async def __call__(self, request: LLMRequest) -> str:
            with lock:
                peak[0] += 1
                peak[1] = max(peak[1], peak[0])
            await anyio.sleep(0.005)
            with lock:
                peak[0] -= 1
            return "ok"

    with local_call_slots({"simulated": 2}) as slots:

        def run(name: str) -> None:
            with slots.attempt(name) as attempt:
                llm = slotted(Slow(), slots, key="simulated", run=name, attempt=attempt)

                async def calls() -> None:
                    async with anyio.create_task_group() as tg:
                        for _ in range(10):
                            tg.start_soon(llm, REQUEST)

                anyio.run(calls)

        threads = [threading.Thread(target=run, args=(f"run{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stats = slots.stats()
    assert peak[1] == 2
    assert stats == {"in_flight": {"simulated": 0}, "peak": {"simulated": 2}}


def test_cancelled_callers_leak_no_slot():
    """Calls cancelled while waiting for, or holding, a slot give it back."""

    async def never(request: LLMRequest) -> str:
        await anyio.sleep_forever()
        return ""

    with local_call_slots({"k": 1}) as slots, slots.attempt("r") as attempt, slots.attempt("s") as other:
        llm = slotted(never, slots, key="k", run="r", attempt=attempt)

        async def cancel_some() -> None:
            with anyio.move_on_after(0.05):
                async with anyio.create_task_group() as tg:
                    for _ in range(5):
                        tg.start_soon(llm, REQUEST)

        anyio.run(cancel_some)
        quick = slotted(lambda request: "ok", slots, key="k", run="s", attempt=other)

        async def one_more() -> str:
            with anyio.fail_after(2):  # hangs if a cancelled call kept the only slot
                return (await quick(REQUEST)).text

        assert anyio.run(one_more) == "ok"
        for _ in range(100):  # releases are fire-and-forget: give the last one a moment
            if slots.stats()["in_flight"] == {"k": 0}:
                break
            threading.Event().wait(0.01)
        assert slots.stats()["in_flight"] == {"k": 0}


def test_the_wrapper_keeps_identity_and_is_a_no_op_without_a_limit():
    """slotted keeps the inner LLM's identity, is async, and returns an unlimited backend's LLM unchanged."""
    inner = type("B", (), {"identity": "backend-x", "__call__": lambda self, r: "ok"})()
    with local_call_slots({"k": 1}) as slots, slots.attempt("r") as attempt:
        wrapped = slotted(inner, slots, key="k", run="r", attempt=attempt)
        assert wrapped.identity == "backend-x" and is_async_llm(wrapped)
        assert slotted(inner, slots, key="other", run="r", attempt=attempt) is inner
        assert anyio.run(wrapped, REQUEST).text == "ok"


def test_the_slots_thread_stops_on_exit():
    """local_call_slots joins its thread when the block ends, even on an error."""
    before = set(threading.enumerate())
    with pytest.raises(RuntimeError), local_call_slots({"k": 1}):
        raise RuntimeError("boom")
    assert set(threading.enumerate()) <= before
