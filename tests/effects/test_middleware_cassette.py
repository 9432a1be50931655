"""recorded and replayed: cassettes round-trip runs, and say clearly what they lack."""

from __future__ import annotations

import json

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM
from semgrad.core import LLMError, LLMFailure, LLMRequest, LLMResponse, Message, forward, gather, request_key
from semgrad.effects import recorded, replayed, run_sync
from semgrad.testing import graphs, inputs_for, pure_llms


def run_sync_one(llm, request):
    return anyio.run(llm, request)


@settings(max_examples=20)
@given(graphs(), st.data(), pure_llms())
def test_a_recorded_run_replays_to_equal_traces(tmp_path_factory, gp, data, llm):
    """For random DAGs, replaying a recorded batch gives traces equal to the recorded ones."""
    graph, params = gp
    path = tmp_path_factory.mktemp("cassette") / "run.jsonl"
    samples = [data.draw(inputs_for(graph)) for _ in range(2)]
    program = lambda: gather(*(forward(graph, params, x, sample=i) for i, x in enumerate(samples)))  # noqa: E731
    live = run_sync(program(), recorded(llm, path))
    assert run_sync(program(), replayed(path)) == live


def test_records_hold_the_key_the_canonical_request_and_the_response(tmp_path):
    """Each line has key, the full canonical request (with draw, targets, options) and text/usage/model."""
    path = tmp_path / "run.jsonl"
    request = LLMRequest(
        (Message("user", "hi"),),
        purpose="backward",
        node="n",
        sample=3,
        draw=1,
        targets=("a",),
        options={"temperature": 0.5},
    )
    run_sync_one(recorded(lambda r: LLMResponse("x", {"input_tokens": 1}, "m"), path), request)
    (record,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert record["key"] == request_key(request)
    assert record["request"]["draw"] == 1 and record["request"]["targets"] == ["a"]
    assert record["request"]["options"] == {"temperature": 0.5}
    assert record["response"] == {"text": "x", "usage": {"input_tokens": 1}, "model": "m"}


def test_failed_calls_are_not_recorded(tmp_path):
    """A call that fails writes nothing to the cassette."""
    path = tmp_path / "run.jsonl"

    def failing(request):
        raise LLMFailure(LLMError("server", "boom", retryable=True))

    with pytest.raises(LLMFailure):
        run_sync_one(recorded(failing, path), LLMRequest((Message("user", "hi"),)))
    assert path.read_text() == ""


def test_an_unknown_request_names_itself(tmp_path):
    """Replaying a request the cassette lacks fails with kind 'not_recorded' naming purpose, node, sample and key."""
    path = tmp_path / "run.jsonl"
    run_sync_one(recorded(HashLLM(), path), LLMRequest((Message("user", "hi"),)))
    request = LLMRequest((Message("user", "other"),), node="answer", sample=7)
    with pytest.raises(LLMFailure) as caught:
        replayed(path)(request)
    error = caught.value.error
    assert error.kind == "not_recorded" and not error.retryable
    for part in ("'forward'", "'answer'", "sample=7", request_key(request)[:12]):
        assert part in error.message


def test_a_missing_or_broken_cassette_says_so(tmp_path):
    """A missing file raises FileNotFoundError, a non-record line ValueError with its line number."""
    with pytest.raises(FileNotFoundError, match="recorded"):
        replayed(tmp_path / "nope.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"key": "k", "response": {"text": "x"}}\n\nnot json\n')
    with pytest.raises(ValueError, match=r"broken.jsonl:3"):
        replayed(broken)


def test_the_last_recording_of_a_request_wins(tmp_path):
    """When a request was recorded twice, replay answers with the later reply."""
    path = tmp_path / "run.jsonl"
    request = LLMRequest((Message("user", "hi"),))
    run_sync_one(recorded(lambda r: "first", path), request)
    run_sync_one(recorded(lambda r: "second", path), request)
    assert replayed(path)(request).text == "second"


@given(st.text(max_size=40))
def test_any_reply_text_round_trips_lone_surrogates_included(tmp_path_factory, text):
    """Any str a reply holds (a lone surrogate from a JSON \\ud83d escape too) is recorded and replayed as it was."""
    path = tmp_path_factory.mktemp("cassette") / "run.jsonl"
    request = LLMRequest((Message("user", "hi"),))
    reply = anyio.run(recorded(lambda r: LLMResponse(text + "\ud83d", {"output_tokens": 1}, "m"), path), request)
    assert replayed(path)(request) == reply
