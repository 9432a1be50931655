"""A memo hit is counted as a memo hit, never as a call: by the runner, by `fit`'s statistics and by its budget;
and a checkpoint of an official run from before feedback reuse is refused with the reason."""

from __future__ import annotations

import anyio
import pytest

from semgrad._bundled_pairs import gsm8k_sample
from semgrad.backends.fake import RecordingLLM
from semgrad.backends.simulated import SimulatedLLM
from semgrad.core import Example, LLMRequest, LLMResponse, Message, gather, optim
from semgrad.core.programs import ask
from semgrad.core.scoring import numeric_match
from semgrad.effects import Budget, CheckpointError, Runner, fit_sync, memoized
from semgrad.topologies import paper_graph


def _request(text: str) -> LLMRequest:
    return LLMRequest((Message("user", text),), options={"temperature": 0}, purpose="forward")


def test_a_runner_counts_a_memo_hit_apart_and_tells_on_reply_nothing():
    """Three identical temperature-0 requests through `memoized`: one call (its tokens once, one on_reply event)
    and two memo hits, each reply marked by `LLMResponse.memo_hit`."""
    made, told = [], []

    def llm(request):
        made.append(request)
        return LLMResponse("4", {"input_tokens": 10, "output_tokens": 2})

    runner = Runner(memoized(llm), on_reply=lambda request, reply: told.append(reply))
    replies = [anyio.run(runner.run, ask(_request("2+2?"))) for _ in range(3)]
    stats = runner.statistics()
    assert [r.unwrap().memo_hit for r in replies] == [False, True, True]
    assert (stats.calls, stats.memo_hits, len(made), len(told)) == (1, 2, 1, 1)
    assert (stats.input_tokens, stats.output_tokens, dict(stats.calls_by_purpose)) == (10, 2, {"forward": 1})
    assert replies[0].unwrap() == replies[1].unwrap()  # provenance, not content


def test_identical_requests_in_flight_together_make_one_call_and_the_rest_are_memo_hits():
    """Requests gathered together wait for the one identical call in flight: one call, the others memo hits."""
    made = []

    async def llm(request):
        made.append(request)
        await anyio.sleep(0.01)
        return "4"

    runner = Runner(memoized(llm))
    replies = anyio.run(runner.run, gather(*(ask(_request("2+2?")) for _ in range(4))))
    assert [r.unwrap().text for r in replies] == ["4"] * 4
    assert (runner.statistics().calls, runner.statistics().memo_hits, len(made)) == (1, 3, 1)


def _official_fit(llm, **options):
    samples = gsm8k_sample()
    train = [Example({"question": q}, a, id=i) for i, (q, a) in enumerate(samples)][:6]
    graph, params = paper_graph()
    optimizer = optim.neighbor_sgd(2, draw="official", fallback=False, reuse=True)
    return fit_sync(graph, params, optimizer, train=train, llm=llm, iterations=4, loss=numeric_match(), **options)


def test_fits_budget_neither_counts_nor_refuses_a_memo_hit():
    """An official-protocol fit through `memoized` whose memo answers requests: its statistics count the calls
    that reached the LLM, and a call budget of exactly those lets the whole run through to the same history."""
    samples = dict(gsm8k_sample())
    first = RecordingLLM(SimulatedLLM(samples, seed=5))
    free = _official_fit(memoized(first))
    assert free.statistics.memo_hits > 0 and free.stopped is None
    assert free.statistics.calls == len(first.requests)
    again = RecordingLLM(SimulatedLLM(samples, seed=5))
    capped = _official_fit(memoized(again), budget=Budget(max_calls=free.statistics.calls))
    assert capped.stopped is None and capped.history == free.history
    assert len(again.requests) == free.statistics.calls


def test_a_checkpoint_of_an_official_run_without_reuse_is_refused_saying_why(tmp_path):
    """A checkpoint an official-protocol run wrote before it reused feedback (the backward stage's state then
    empty) is refused on resume with one message saying its optimizer state has another shape and to start a
    new run -- not that the settings differ, which no flag could make the same."""
    samples = gsm8k_sample()
    train = [Example({"question": q}, a, id=i) for i, (q, a) in enumerate(samples)][:6]
    ckpt = tmp_path / "checkpoint.json"
    llm = SimulatedLLM(dict(samples), seed=5)
    for reuse, resume in ((False, None), (True, ckpt)):
        graph, params = paper_graph()
        optimizer = optim.neighbor_sgd(2, draw="official", fallback=False, reuse=reuse)
        run = {"train": train, "llm": llm, "iterations": 2, "loss": numeric_match(), "checkpoint": ckpt}
        if resume is None:
            fit_sync(graph, params, optimizer, **run)
            continue
        with pytest.raises(CheckpointError) as refused:
            fit_sync(graph, params, optimizer, resume=resume, **run)
    message = str(refused.value)
    assert "another shape" in message and "cannot be resumed" in message and "start a new run" in message
    assert "resume with the same ones" not in message and "\n" not in message
