"""The Anthropic Messages backend against a real local HTTP server: bodies, headers, replies, faults."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends import anthropic
from semgrad.backends._anthropic import merge_turns
from semgrad.core import LLMFailure, LLMRequest, Message

from .conftest import DEEP_JSON

REQUEST = LLMRequest(
    (Message("system", "Be brief."), Message("user", "a"), Message("user", "b"), Message("assistant", "c")),
    node="answer",
)


def backend(provider, **config):
    config.setdefault("api_key", "sk-ant-test")
    config.setdefault("timeout", 5.0)
    return anthropic("claude-small", base_url=provider.base_url, **config)


async def test_a_message_gives_text_usage_and_model(provider):
    """A Messages reply becomes an LLMResponse with its text blocks, input/output tokens and model."""
    provider.responder = lambda body: "4"
    response = await backend(provider)(REQUEST)
    assert (response.text, response.model) == ("4", "claude-small")
    assert set(response.usage) == {"input_tokens", "output_tokens"}


async def test_system_goes_top_level_and_same_role_turns_merge(provider):
    """System text is the top-level 'system' field and consecutive user messages become one turn."""
    await backend(provider)(REQUEST)
    path, headers, body = provider.requests[0]
    assert path == "/v1/messages"
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": "a\n\nb"}, {"role": "assistant", "content": "c"}]
    assert body["max_tokens"] == 1024


async def test_headers_carry_the_key_and_api_version(provider):
    """The request has x-api-key and anthropic-version: 2023-06-01, and no Authorization header."""
    await backend(provider)(REQUEST)
    headers = provider.requests[0][1]
    assert headers["x-api-key"] == "sk-ant-test"
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers


async def test_options_map_to_the_messages_api(provider):
    """temperature/top_p pass through, stop becomes stop_sequences, max_tokens overrides, seed is left out."""
    options = {"temperature": 0.2, "top_p": 0.5, "stop": "END", "max_tokens": 99, "seed": 3}
    await backend(provider)(LLMRequest(REQUEST.messages, options=options))
    body = provider.requests[0][2]
    assert (body["temperature"], body["top_p"], body["stop_sequences"], body["max_tokens"]) == (0.2, 0.5, ["END"], 99)
    assert "seed" not in body and "stop" not in body


async def test_configuration_comes_from_the_environment(provider, monkeypatch):
    """ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY configure a backend built with just a model."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    await anthropic("claude-small")(REQUEST)
    assert provider.requests[0][1]["x-api-key"] == "sk-ant-env"


async def test_the_model_is_chosen_per_engine(provider):
    """models= picks the model by request.engine, falling back to the main model."""
    llm = backend(provider, models={"optimizer": "claude-large"})
    await llm(LLMRequest(REQUEST.messages, engine="optimizer"))
    await llm(LLMRequest(REQUEST.messages, engine="forward"))
    assert [body["model"] for _, _, body in provider.requests] == ["claude-large", "claude-small"]


@pytest.mark.parametrize(
    ("fault", "kind", "retryable"),
    [
        (
            (401, {}, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
            "auth",
            False,
        ),
        ((429, {"retry-after": "5"}, {}), "rate_limit", True),
        ((529, {}, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}), "server", True),
        ((400, {}, {"error": {"message": "prompt is too long"}}), "bad_request", False),
        ("truncated", "malformed", True),
        ("hang", "timeout", True),
        ((200, {}, DEEP_JSON), "malformed", True),
        ((529, {}, DEEP_JSON), "server", True),
    ],
    ids=["401", "429", "529", "400", "truncated", "hang", "deep-200", "deep-529"],
)
async def test_each_fault_becomes_its_documented_error(provider, fault, kind, retryable):
    """Every scripted fault surfaces as LLMFailure with the documented kind and retryability."""
    provider.script(fault)
    with pytest.raises(LLMFailure) as caught:
        await backend(provider, timeout=0.5)(REQUEST)
    assert (caught.value.error.kind, caught.value.error.retryable) == (kind, retryable)


async def test_an_auth_error_names_the_anthropic_variable(provider):
    """A 401 says to set ANTHROPIC_API_KEY."""
    provider.script((401, {}, {}))
    with pytest.raises(LLMFailure, match="ANTHROPIC_API_KEY"):
        await backend(provider)(REQUEST)


async def test_a_reply_without_content_blocks_is_malformed(provider):
    """A 200 whose content is not a list of blocks is a retryable 'malformed' error."""
    provider.script((200, {}, {"type": "message", "content": "oops"}))
    with pytest.raises(LLMFailure) as caught:
        await backend(provider)(REQUEST)
    assert caught.value.error.kind == "malformed"


roles = st.sampled_from(["system", "user", "assistant"])


@given(st.lists(st.tuples(roles, st.text(max_size=5)), max_size=8))
def test_merged_turns_alternate_and_keep_all_text(pairs):
    """merge_turns yields alternating roles, no system turn, and every message's text in order."""
    messages = tuple(Message(role, text) for role, text in pairs)
    system, turns = merge_turns(messages)
    assert all(a["role"] != b["role"] for a, b in zip(turns, turns[1:]))
    assert all(t["role"] != "system" for t in turns)
    assert system == "\n\n".join(m.content for m in messages if m.role == "system")
    joined = "\n\n".join(t["content"] for t in turns)
    assert joined == "\n\n".join(m.content for m in messages if m.role != "system")


def _cut(content):
    usage = {"input_tokens": 10, "output_tokens": 64}
    return (
        200,
        {},
        {"type": "message", "model": "claude-small", "content": content, "stop_reason": "max_tokens", "usage": usage},
    )


async def test_a_message_cut_at_max_tokens_before_any_text_is_a_truncated_failure(provider):
    """stop_reason 'max_tokens' with no text (only thinking) is a non-retryable 'truncated' failure, not a reply."""
    provider.script(_cut([{"type": "thinking", "thinking": "Let me see", "signature": "s"}]))
    with pytest.raises(LLMFailure) as caught:
        await backend(provider)(REQUEST)
    assert (caught.value.error.kind, caught.value.error.retryable) == ("truncated", False)
    assert "claude-small" in caught.value.error.message


async def test_a_message_cut_at_max_tokens_after_some_text_keeps_the_text(provider):
    """stop_reason 'max_tokens' after some text is a reply with that text."""
    provider.script(_cut([{"type": "text", "text": "The answer is"}]))
    assert (await backend(provider)(REQUEST)).text == "The answer is"


@pytest.mark.parametrize(
    ("content", "stop", "kind"),
    [
        ([{"type": "text", "text": "I will not"}], "refusal", "refused"),
        ([], "refusal", "refused"),
        ([], "end_turn", "malformed"),
        ([{"type": "text", "text": "   \n  "}], "end_turn", "malformed"),
        ([{"type": "text", "text": " "}, {"type": "text", "text": "\n"}], "max_tokens", "truncated"),
    ],
)
async def test_a_refusal_or_a_message_without_text_is_a_failure(provider, content, stop, kind):
    """stop_reason 'refusal' (with or without text) is a non-retryable 'refused'; no text at all, or whitespace
    alone, is 'malformed' (or 'truncated' at the cap)."""
    usage = {"input_tokens": 10, "output_tokens": 3}
    provider.script(
        (200, {}, {"type": "message", "model": "claude-small", "content": content, "stop_reason": stop, "usage": usage})
    )
    with pytest.raises(LLMFailure) as caught:
        await backend(provider)(REQUEST)
    assert (caught.value.error.kind, caught.value.error.retryable) == (kind, kind == "malformed")
