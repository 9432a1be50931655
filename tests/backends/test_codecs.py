"""The providers' codecs without a server: encode and decode are pure, decode never raises, replies round trip."""

from __future__ import annotations

import json

from hypothesis import assume, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from semgrad.backends._anthropic import AnthropicCodec
from semgrad.backends._codec import KEY, HttpRequest
from semgrad.backends._openai import OpenAICodec
from semgrad.core import LLMRequest, Message

from .conftest import _anthropic_reply, _openai_reply

CODECS = st.sampled_from([OpenAICodec("m"), AnthropicCodec("m"), OpenAICodec("m", max_tokens_field="x")])
TEXT = st.text(min_size=1).filter(lambda t: not t.isspace())
MESSAGES = st.lists(
    st.builds(Message, st.sampled_from(["system", "user", "assistant"]), st.text(max_size=20)), min_size=1, max_size=4
).map(tuple)
REQUESTS = st.builds(
    LLMRequest,
    MESSAGES,
    engine=st.sampled_from(["forward", "backward"]),
    options=st.sampled_from([{}, {"temperature": 0.5}, {"max_tokens": 7}, {"stop": ("\n",)}]),
)
KINDS = {401: "auth", 403: "auth", 408: "timeout", 409: "conflict", 429: "rate_limit"}


def _reply(codec, body, text):
    return _openai_reply(body, text) if isinstance(codec, OpenAICodec) else _anthropic_reply(body, text)


@given(CODECS, REQUESTS, TEXT)
def test_a_reply_to_an_encoded_request_decodes_to_its_text_usage_and_model(codec, request, text):
    """Encoding a request and decoding the server's reply to that very body gives the reply's text, its usage as
    input/output tokens and the model the body named (the engine's)."""
    sent = codec.encode(request)
    assert (
        isinstance(sent, HttpRequest)
        and sent.method == "POST"
        and sent.body == json.dumps(sent.json(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    )
    reply = _reply(codec, sent.json(), text)
    decoded = codec.decode(200, {"content-type": "application/json"}, json.dumps(reply).encode())
    assert isinstance(decoded, Success)
    response = decoded.unwrap()
    assert (response.text, response.model) == (text, codec.model_for(request))
    assert dict(response.usage) == {
        "input_tokens": reply["usage"].get("prompt_tokens", reply["usage"].get("input_tokens")),
        "output_tokens": reply["usage"].get("completion_tokens", reply["usage"].get("output_tokens")),
    }


@given(CODECS, st.booleans(), REQUESTS)
def test_an_encoded_request_holds_the_key_only_as_its_stand_in(codec, keyed, request):
    """A codec never sees the key: with one, a single header holds the stand-in KEY; without one, no header does."""
    import attrs

    sent = attrs.evolve(codec, keyed=keyed).encode(request)
    holding = [name for name, value in sent.headers.items() if KEY in value]
    assert len(holding) == (1 if keyed else 0)
    assert KEY.encode() not in sent.body or any(KEY in m.content for m in request.messages)


@given(
    CODECS,
    st.integers(0, 999),
    st.dictionaries(st.text(max_size=12), st.text(max_size=40), max_size=4),
    st.one_of(st.binary(max_size=300), st.recursive(st.none() | st.integers() | st.text(max_size=8), lambda c: (
        st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
            ["error", "choices", "content", "message", "code", "model", "usage", "text", "type"]), c, max_size=4)),
        max_leaves=12).map(lambda v: json.dumps(v).encode())),
)  # fmt: skip
def test_decode_never_raises_whatever_the_status_headers_and_body(codec, status, headers, body):
    """Any status, any headers and any body (bytes, or JSON shaped like a reply) decode to a Success or a Failure
    with a message; an error status is a Failure of its documented kind."""
    decoded = codec.decode(status, headers, body)
    assert isinstance(decoded, (Success, Failure))
    if isinstance(decoded, Failure):
        assert decoded.failure().message
    if 300 <= status < 400:
        assert decoded.failure().kind == "bad_request"
    elif status >= 400:
        expected = KINDS.get(status, "server" if status >= 500 else "bad_request")
        assert decoded.failure().kind == expected


@given(CODECS, st.integers(400, 599), st.integers(0, 10**6))
def test_an_error_status_keeps_its_kind_and_retry_after_whatever_its_body(codec, status, seconds):
    """An error status's kind comes from the status, a 429's or 5xx's Retry-After (seconds) becomes retry_after,
    and x-should-retry decides retryability."""
    headers = {"Retry-After": str(seconds), "x-should-retry": "false"}
    error = codec.decode(status, headers, b"[" * 5000).failure()
    assert error.kind == KINDS.get(status, "server" if status >= 500 else "bad_request")
    assert error.retryable is False
    if status == 429 or status >= 500:
        assert error.retry_after == seconds


SECRETS = st.text(min_size=8, max_size=40).filter(
    lambda k: k.strip() == k and len(set(k)) > 4 and not {"x", "y"} & set(k)
)


@given(CODECS, SECRETS)
def test_decode_quotes_a_server_s_message_only_through_scrub_before_cutting_it(codec, secret):
    """What a server says reaches a message only through the scrub decode is given, before any cut: a secret echoed
    anywhere in a long JSON-escaped message never shows, not even cut short."""
    fixed = codec.decode(401, {}, json.dumps({"error": {"message": "x"}}).encode()).failure().message
    assume(secret[:8] not in fixed)  # a "secret" that is a piece of our own words (OPENAI_A) is no leak
    message = "x" * 480 + secret + "y" * 100
    body = json.dumps({"error": {"message": message}}, ensure_ascii=True).encode()
    error = codec.decode(401, {}, body, scrub=lambda text: text.replace(secret, "***")).failure()
    assert secret[:8] not in error.message and "***" in error.message
