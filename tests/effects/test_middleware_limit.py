"""limited and its Bucket: concurrency caps, even request spacing, token budgets corrected by usage."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import LLMRequest, LLMResponse, Message
from semgrad.effects import limited
from semgrad.effects._limit import Bucket, estimate_tokens


class FakeTime:
    """A clock that only moves when the fake sleep is awaited."""

    def __init__(self):
        self.now = 0.0
        self.starts = []

    def clock(self):
        return self.now

    async def sleep(self, seconds):
        self.now += seconds


def request(chars=40, **options):
    return LLMRequest((Message("user", "x" * chars),), options=options)


@given(st.floats(0.1, 100), st.integers(1, 30))
def test_a_capacity_one_bucket_spaces_reservations_evenly(rate, n):
    """Back-to-back reservations on a capacity-1 bucket wait 0, 1/rate, 2/rate, ..."""
    bucket = Bucket(rate, 1, clock=lambda: 0.0)
    waits = [bucket.reserve(1) for _ in range(n)]
    assert waits == pytest.approx([i / rate for i in range(n)])


@given(st.lists(st.tuples(st.floats(0, 5), st.integers(1, 50)), max_size=20))
def test_a_bucket_never_lets_more_than_capacity_plus_rate_times_time(steps):
    """Tokens granted by any time t never exceed capacity + rate * t (the bucket's promise)."""
    now = [0.0]
    bucket = Bucket(10.0, 20, clock=lambda: now[0])
    granted = []
    for advance, n in steps:
        now[0] += advance
        wait = bucket.reserve(n)
        granted.append((now[0] + wait, min(n, 20)))
    for t, _ in granted:
        assert sum(n for when, n in granted if when <= t) <= 20 + 10.0 * t + 1e-6


def test_estimate_counts_four_characters_a_token_plus_max_tokens():
    """The estimate is ceil(chars / 4) plus the output cap: max_tokens, or OpenAI's max_completion_tokens (the
    larger when both are set); a cap that is no positive whole number adds nothing."""
    assert estimate_tokens(request(41)) == 11
    assert estimate_tokens(request(40, max_tokens=100)) == 110
    assert estimate_tokens(request(40, max_completion_tokens=4096)) == 4106
    assert estimate_tokens(request(40, max_tokens=100, max_completion_tokens=50)) == 110
    assert estimate_tokens(request(40, max_tokens=True)) == estimate_tokens(request(40, max_tokens=-5)) == 10


async def test_concurrency_never_exceeds_the_limit():
    """With max_concurrency=3, at most 3 calls of a slow fake run at once, and 3 do."""
    state = {"now": 0, "peak": 0}

    async def slow(request):
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await anyio.sleep(0.01)
        state["now"] -= 1
        return "ok"

    llm = limited(slow, max_concurrency=3)
    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(llm, request())
    assert state["peak"] == 3


async def test_requests_per_minute_start_calls_at_even_intervals():
    """With requests_per_minute=60 and a fake clock, calls start at t = 0, 1, 2, ... seconds."""
    time = FakeTime()

    def answer(req):
        time.starts.append(time.now)
        return "ok"

    llm = limited(answer, requests_per_minute=60, clock=time.clock, sleep=time.sleep)
    for _ in range(4):
        await llm(request())
    assert time.starts == [0.0, 1.0, 2.0, 3.0]


async def test_tokens_per_minute_waits_for_the_debt_and_learns_from_usage():
    """A request beyond the token budget waits for the refill; reported usage below the estimate gives tokens back."""
    time = FakeTime()
    usage = {"input_tokens": 1, "output_tokens": 0}
    llm = limited(lambda r: LLMResponse("ok", usage), tokens_per_minute=600, clock=time.clock, sleep=time.sleep)
    await llm(request(chars=2400))  # ~600 tokens estimated, 1 used: 599 given back
    assert time.now == 0.0
    await llm(request(chars=2400))
    assert time.now == pytest.approx(0.1)  # owes 1 token at 10 tokens/s


async def test_a_cancelled_wait_gives_its_reservation_back():
    """A call cancelled while waiting for its turn returns its request slot to the bucket."""
    time = FakeTime()

    async def never(seconds):
        await anyio.sleep_forever()

    llm = limited(lambda r: "ok", requests_per_minute=60, clock=time.clock, sleep=never)
    await llm(request())
    with anyio.move_on_after(0.01):
        await llm(request())
    bucket = llm._requests
    assert bucket.reserve(1) == pytest.approx(1.0)


class VirtualTime:
    """A clock moved by hand; sleepers wake when it passes their due time."""

    def __init__(self):
        self.now = 0.0
        self.sleepers = []

    def clock(self):
        return self.now

    async def sleep(self, seconds):
        woken = anyio.Event()
        self.sleepers.append((self.now + seconds, woken))
        await woken.wait()

    async def advance_to(self, now):
        self.now = now
        for due, woken in [s for s in self.sleepers if s[0] <= now]:
            self.sleepers.remove((due, woken))
            woken.set()
        await anyio.wait_all_tasks_blocked()


async def test_a_cancelled_wait_never_lets_two_calls_take_one_turn():
    """A call cancelled in the queue with callers behind it gives no slot back that a new caller could share."""
    time = VirtualTime()
    starts = []
    llm = limited(lambda r: starts.append(time.now) or "ok", requests_per_minute=1, clock=time.clock, sleep=time.sleep)
    async with anyio.create_task_group() as group:
        group.start_soon(llm, request())  # starts at 0
        await anyio.wait_all_tasks_blocked()
        queued = anyio.CancelScope()
        group.start_soon(_in_scope, queued, llm)  # due at 60, cancelled below
        await anyio.wait_all_tasks_blocked()
        group.start_soon(llm, request())  # due at 120
        await anyio.wait_all_tasks_blocked()
        queued.cancel()
        await anyio.wait_all_tasks_blocked()
        group.start_soon(llm, request())  # must not share 120
        await anyio.wait_all_tasks_blocked()
        for now in (60.0, 120.0, 180.0, 240.0):
            await time.advance_to(now)
    assert starts == [0.0, 120.0, 180.0]


async def _in_scope(scope, llm):
    with scope:
        await llm(request())


def test_limits_must_be_positive():
    """Zero or negative limits raise ValueError naming the argument."""
    for kwargs in ({"max_concurrency": 0}, {"requests_per_minute": -1}, {"tokens_per_minute": 0}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            limited(lambda r: "ok", **kwargs)


def test_limited_passes_identity_through():
    """limited(llm).identity is llm.identity."""
    backend = type("Backend", (), {"identity": "backend-2", "__call__": lambda self, r: "ok"})()
    assert limited(backend, 2).identity == "backend-2"
