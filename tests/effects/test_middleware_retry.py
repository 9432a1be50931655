"""retrying and RetryPolicy: the backoff schedule, what is retried, and recovery on random graphs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.core import LLMError, LLMFailure, LLMRequest, Message, forward, gather, request_key
from semgrad.effects import RetryPolicy, retrying, run_sync
from semgrad.testing import flaky_llms, graphs, inputs_for

REQUEST = LLMRequest((Message("user", "hi"),))

policies = st.builds(
    RetryPolicy,
    max_attempts=st.integers(1, 8),
    base_delay=st.floats(0, 5),
    max_delay=st.floats(0, 60),
    jitter=st.booleans(),
    seed=st.integers(0, 100),
)


class Waits:
    """A fake sleep that records the waits instead of waiting."""

    def __init__(self):
        self.waits = []

    async def __call__(self, seconds):
        self.waits.append(seconds)


class Failing:
    """Fails with the given errors in turn, then answers 'ok'."""

    def __init__(self, *errors):
        self.errors = list(errors)
        self.calls = 0

    def __call__(self, request):
        self.calls += 1
        if self.errors:
            error = self.errors.pop(0)
            raise error if isinstance(error, BaseException) else LLMFailure(error)
        return "ok"


def retryable(kind="server", retry_after=None):
    return LLMError(kind, "transient", retryable=True, retry_after=retry_after)


@given(policies, st.text(max_size=5))
def test_the_schedule_has_one_bounded_delay_per_retry(policy, salt):
    """delays() has max_attempts - 1 entries, each within [0, max_delay] and at least half the un-jittered backoff."""
    delays = policy.delays(salt)
    assert len(delays) == policy.max_attempts - 1
    for i, delay in enumerate(delays):
        backoff = min(policy.max_delay, policy.base_delay * 2**i)
        assert 0 <= delay <= policy.max_delay
        assert backoff * 0.5 <= delay <= backoff


@given(policies, st.text(max_size=5))
def test_a_seeded_schedule_is_pure(policy, salt):
    """With a seed, delays() is the same on every call; without jitter it never decreases."""
    assert policy.delays(salt) == policy.delays(salt)
    if not policy.jitter:
        delays = policy.delays(salt)
        assert list(delays) == sorted(delays)


def test_invalid_policies_are_refused():
    """A policy with no attempt or a negative delay raises ValueError naming the field."""
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="base_delay"):
        RetryPolicy(base_delay=-1)


async def test_retryable_failures_are_retried_until_success():
    """Retryable LLMFailures and TimeoutError are retried, with the schedule's waits, until the call succeeds."""
    inner = Failing(retryable(), TimeoutError("slow"), retryable("rate_limit"))
    sleep = Waits()
    policy = RetryPolicy(base_delay=1, jitter=False)
    llm = retrying(inner, policy, sleep=sleep)
    assert (await llm(REQUEST)).text == "ok"
    assert inner.calls == 4 and llm.retries == 3
    assert sleep.waits == [1.0, 2.0, 4.0]


async def test_non_retryable_failures_and_other_exceptions_are_raised_at_once():
    """A non-retryable LLMError or a plain exception is raised after one call."""
    for error in (LLMError("auth", "no"), ValueError("bug")):
        inner = Failing(error)
        with pytest.raises((LLMFailure, ValueError)):
            await retrying(inner, sleep=Waits())(REQUEST)
        assert inner.calls == 1


async def test_the_last_error_is_raised_when_attempts_run_out():
    """After max_attempts failures the last LLMFailure is raised unchanged."""
    inner = Failing(*[retryable(kind=f"server{i}") for i in range(5)])
    with pytest.raises(LLMFailure) as caught:
        await retrying(inner, RetryPolicy(max_attempts=3), sleep=Waits())(REQUEST)
    assert inner.calls == 3 and caught.value.error.kind == "server2"


async def test_retry_after_is_honoured_and_an_absurd_one_gives_up():
    """The wait is at least retry_after; a retry_after above max_retry_after is not waited for."""
    sleep = Waits()
    inner = Failing(retryable("rate_limit", retry_after=7.5))
    await retrying(inner, RetryPolicy(base_delay=0.1), sleep=sleep)(REQUEST)
    assert sleep.waits == [7.5]
    inner = Failing(retryable("rate_limit", retry_after=3600))
    with pytest.raises(LLMFailure):
        await retrying(inner, RetryPolicy(max_retry_after=60), sleep=sleep)(REQUEST)
    assert inner.calls == 1


@given(
    st.floats(0, 50),
    st.lists(st.one_of(st.none(), st.floats(0, 60), st.sampled_from([0.0, 30.0, 60.0, 61.0])), min_size=1, max_size=5),
)
async def test_each_wait_is_the_longer_of_the_backoff_and_retry_after_up_to_the_cap(base, retry_afters):
    """Each wait is the longer of the (unjittered) backoff and the error's retry_after; the first retry_after above
    max_retry_after (one equal to it is waited for) ends the retries, raising that error."""
    policy = RetryPolicy(max_attempts=6, base_delay=base, max_delay=1000, jitter=False, max_retry_after=60)
    delays = policy.delays(request_key(REQUEST))
    sleep, inner = Waits(), Failing(*[retryable("rate_limit", retry_after=r) for r in retry_afters])
    expected = []
    for delay, retry_after in zip(delays, retry_afters):
        if retry_after is not None and retry_after > 60:
            break
        expected.append(max(delay, retry_after or 0.0))
    if len(expected) < len(retry_afters):
        with pytest.raises(LLMFailure):
            await retrying(inner, policy, sleep=sleep)(REQUEST)
    else:
        await retrying(inner, policy, sleep=sleep)(REQUEST)
    assert sleep.waits == expected


async def test_a_kind_cap_limits_its_attempts():
    """max_attempts_by_kind caps one kind (by default a malformed reply is retried once), never above max_attempts."""
    inner = Failing(*[retryable("malformed")] * 3)
    with pytest.raises(LLMFailure):
        await retrying(inner, sleep=Waits())(REQUEST)
    assert inner.calls == 2
    inner = Failing(*[retryable("server")] * 5)  # a cap above max_attempts: max_attempts (4) still bounds it
    with pytest.raises(LLMFailure):
        await retrying(inner, RetryPolicy(max_attempts_by_kind={"server": 5}), sleep=Waits())(REQUEST)
    assert inner.calls == 4


def test_retrying_passes_identity_through():
    """retrying(llm).identity is llm.identity."""

    class Backend:
        identity = "backend-1"

        def __call__(self, request):
            return "ok"

    assert retrying(Backend()).identity == "backend-1"


NO_WAIT = RetryPolicy(max_attempts=12, base_delay=0, jitter=False)


@settings(max_examples=30)
@given(graphs(), st.data(), flaky_llms(0.2))
def test_forward_under_flaky_llm_with_retries_equals_a_clean_run(gp, data, flaky):
    """With 20 % of calls failing retryably and retrying on, forward over a random DAG gives the clean run's traces."""
    graph, params = gp
    samples = [data.draw(inputs_for(graph)) for _ in range(2)]
    program = lambda: gather(*(forward(graph, params, x, sample=i) for i, x in enumerate(samples)))  # noqa: E731
    clean = run_sync(program(), flaky.inner)
    recovered = run_sync(program(), retrying(flaky, NO_WAIT))
    assert recovered == clean
    assert all(trace.ok for trace in recovered)


@settings(max_examples=30)
@given(graphs(), st.data(), flaky_llms(0.2))
def test_backward_under_flaky_llm_with_retries_equals_a_clean_run(gp, data, flaky):
    """With 20 % of calls failing retryably and retrying on, backward over a random DAG gives the clean run's
    gradients, with no failure recorded."""
    from semgrad.core import backward

    graph, params = gp
    samples = [data.draw(inputs_for(graph)) for _ in range(2)]
    traces = run_sync(gather(*(forward(graph, params, x, sample=i) for i, x in enumerate(samples))), flaky.inner)
    program = lambda: gather(*(backward(graph, params, t, "The output is wrong.") for t in traces))  # noqa: E731
    clean = run_sync(program(), flaky.inner)
    recovered = run_sync(program(), retrying(flaky, NO_WAIT))
    assert recovered == clean
    assert all(g.ok for g in recovered)


@settings(max_examples=30)
@given(graphs(), st.data(), flaky_llms(0.3))
def test_a_flaky_llm_fails_the_same_calls_in_a_second_run_on_the_same_instance(gp, data, flaky):
    """Reused for a second run retried to success, a FlakyLLM fails the same calls, with the same kinds, as before."""
    from semgrad.core import request_key

    graph, params = gp
    samples = [data.draw(inputs_for(graph)) for _ in range(2)]
    log = []

    def observed(request):
        try:
            reply = flaky(request)
        except LLMFailure as failure:
            log.append((request_key(request), failure.error.kind))
            raise
        log.append((request_key(request), None))
        return reply

    def one_run():
        log.clear()
        run_sync(
            gather(*(forward(graph, params, x, sample=i) for i, x in enumerate(samples))), retrying(observed, NO_WAIT)
        )
        return list(log)

    first = one_run()
    assert one_run() == first


def test_a_flaky_llm_around_an_async_llm_is_async_and_answers_as_it():
    """FlakyLLM(async inner) is async, so its calls are awaited: at rate 0 a forward is the inner LLM's own."""
    from semgrad.backends.fake import HashLLM, LatencyLLM
    from semgrad.testing import FlakyLLM
    from semgrad.topologies import paper_graph

    graph, params = paper_graph()
    inner = LatencyLLM(HashLLM(), 0.001)
    flaky = FlakyLLM(inner, 0.0)
    assert flaky.is_async and not FlakyLLM(HashLLM(), 0.0).is_async
    program = lambda: forward(graph, params, {"question": "What is 3 + 4?"})  # noqa: E731
    assert run_sync(program(), flaky) == run_sync(program(), inner)
