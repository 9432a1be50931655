"""The OpenAI-compatible backend against a real local HTTP server: bodies, replies, faults."""

from __future__ import annotations

import pytest

from semgrad.backends import openai_compatible
from semgrad.core import LLMFailure, LLMRequest, Message
from semgrad.effects import RetryPolicy, retrying

from .conftest import DEEP_JSON

TIMEOUT = 0.5  # the client timeout in tests with a hanging server: short, yet ample for a loaded machine
QUESTION = LLMRequest((Message("system", "Be brief."), Message("user", "2+2?")), node="answer", sample=0)


def backend(provider, **config):
    config.setdefault("model", "small-model")
    config.setdefault("timeout", 5.0)
    return openai_compatible(provider.base_url + "/v1", **config)


async def test_a_reply_gives_text_usage_and_model(provider):
    """A chat completion becomes an LLMResponse with the text, the mapped token usage and the reply's model."""
    provider.responder = lambda body: "4"
    response = await backend(provider)(QUESTION)
    assert response.text == "4"
    assert response.model == "small-model"
    assert response.usage == {"input_tokens": len("Be brief.2+2?") // 4 + 1, "output_tokens": 1}


async def test_the_body_carries_model_messages_and_options(provider):
    """The POST goes to /v1/chat/completions with the model, the messages in order and every option."""
    request = LLMRequest(
        QUESTION.messages, options={"temperature": 0.3, "max_tokens": 20, "top_p": 0.9, "stop": ("\n",), "seed": 7}
    )
    await backend(provider)(request)
    path, headers, body = provider.requests[0]
    assert path == "/v1/chat/completions"
    assert body == {
        "model": "small-model",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}],
        "temperature": 0.3,
        "max_tokens": 20,
        "top_p": 0.9,
        "stop": ["\n"],
        "seed": 7,
    }


async def test_a_key_is_sent_as_bearer_and_no_key_sends_no_authorization(provider, monkeypatch):
    """With a key the request has 'Authorization: Bearer <key>'; without one (a local server) it has none."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    await backend(provider, api_key="sk-abc")(QUESTION)
    await backend(provider)(QUESTION)
    assert provider.requests[0][1]["authorization"] == "Bearer sk-abc"
    assert "authorization" not in provider.requests[1][1]


async def test_configuration_comes_from_the_environment(provider, monkeypatch):
    """OPENAI_BASE_URL and OPENAI_API_KEY configure a backend built without arguments."""
    monkeypatch.setenv("OPENAI_BASE_URL", provider.base_url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    llm = openai_compatible(model="m")
    await llm(QUESTION)
    assert provider.requests[0][1]["authorization"] == "Bearer sk-from-env"
    assert llm.identity["endpoint"] == provider.base_url + "/v1/chat/completions"


def test_the_default_endpoint_is_openai(monkeypatch):
    """Without base_url or OPENAI_BASE_URL the backend talks to api.openai.com/v1."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert openai_compatible(model="m").identity["endpoint"] == "https://api.openai.com/v1/chat/completions"


async def test_the_model_is_chosen_per_engine(provider):
    """models= picks the model by request.engine and falls back to model= for other engines."""
    llm = backend(provider, model="default-model", models={"forward": "gpt-4o-mini", "optimizer": "gpt-4-turbo"})
    for engine in ("forward", "optimizer", "backward"):
        await llm(LLMRequest(QUESTION.messages, engine=engine))
    assert [body["model"] for _, _, body in provider.requests] == ["gpt-4o-mini", "gpt-4-turbo", "default-model"]
    assert llm.identity["models"] == {"forward": "gpt-4o-mini", "optimizer": "gpt-4-turbo"}


async def test_options_the_backend_sets_itself_are_refused(provider):
    """An option named model, messages or stream is a non-retryable bad_request, and nothing is sent."""
    with pytest.raises(LLMFailure) as caught:
        await backend(provider)(LLMRequest(QUESTION.messages, options={"stream": True}))
    assert caught.value.error.kind == "bad_request" and not caught.value.error.retryable
    assert provider.count == 0


async def test_openai_s_own_api_gets_max_completion_tokens_and_other_servers_max_tokens(provider, monkeypatch):
    """On OpenAI's API a request's max_tokens is sent as max_completion_tokens (in its place); elsewhere as it is."""
    request = LLMRequest(QUESTION.messages, options={"temperature": 1, "max_tokens": 20, "seed": 7})
    official = openai_compatible("https://api.openai.com/v1", model="gpt-5-mini", api_key="sk-x")
    assert list(official.body(request, "gpt-5-mini"))[2:] == ["temperature", "max_completion_tokens", "seed"]
    assert official.body(request, "gpt-5-mini")["max_completion_tokens"] == 20
    assert backend(provider).body(request, "m")["max_tokens"] == 20
    # The same over a real connection, with the local server standing in for OpenAI's host.
    monkeypatch.setattr("semgrad.backends._openai.COMPLETION_TOKENS_HOSTS", ("127.0.0.1",))
    await backend(provider)(request)
    await backend(provider)(LLMRequest(QUESTION.messages, options={"max_completion_tokens": 5}))
    sent = [body for _, _, body in provider.requests]
    assert [(b.get("max_tokens"), b.get("max_completion_tokens")) for b in sent] == [(None, 20), (None, 5)]


async def test_both_token_caps_on_openai_s_api_are_refused_before_sending(provider, monkeypatch):
    """max_tokens and max_completion_tokens together, where they are one cap, are a bad_request and nothing is sent."""
    monkeypatch.setattr("semgrad.backends._openai.COMPLETION_TOKENS_HOSTS", ("127.0.0.1",))
    with pytest.raises(LLMFailure) as caught:
        await backend(provider)(LLMRequest(QUESTION.messages, options={"max_tokens": 5, "max_completion_tokens": 5}))
    assert (caught.value.error.kind, caught.value.error.retryable, provider.count) == ("bad_request", False, 0)


def _cut(content, reasoning_tokens=None):
    usage = {"prompt_tokens": 10, "completion_tokens": 64}
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length"}
    return (200, {}, {"model": "gpt-5-mini", "choices": [choice], "usage": usage})


@pytest.mark.parametrize("content", ["", None, "\n\n  "])
async def test_a_reply_cut_at_its_cap_before_any_text_is_a_truncated_failure(provider, content):
    """finish_reason 'length' with no text is a non-retryable 'truncated' failure naming the cap, not an empty reply."""
    provider.script(_cut(content, reasoning_tokens=64))
    with pytest.raises(LLMFailure) as caught:
        await retrying(backend(provider), RetryPolicy(max_attempts=3, base_delay=0.0))(QUESTION)
    error = caught.value.error
    assert (error.kind, error.retryable) == ("truncated", False)
    assert "64 reasoning tokens" in error.message and "--max-output-tokens" in error.message
    assert provider.count == 1  # not retried: the same request stops at the same cap


async def test_a_reply_cut_at_its_cap_after_some_text_keeps_the_text(provider):
    """finish_reason 'length' after some text is a reply with that text (the parsers judge it)."""
    provider.script(_cut("The answer is"))
    assert (await backend(provider)(QUESTION)).text == "The answer is"


def _choice(message, finish="stop", **extra):
    return (200, {}, {"model": "m2", "choices": [{"index": 0, "message": message, "finish_reason": finish, **extra}]})


NO_ANSWER = [
    (_choice({"role": "assistant", "content": None, "refusal": "I can't help with that."}), "refused", "can't help"),
    (_choice({"role": "assistant", "content": "Partial"}, "content_filter"), "refused", "content filter"),
    (_choice({"role": "assistant", "content": None, "reasoning_content": "Hmm."}), "malformed", "reasoning parser"),
    (_choice({"role": "assistant", "content": "", "reasoning": "Hmm."}), "malformed", "reasoning parser"),
    (_choice({"role": "assistant", "content": ""}), "malformed", "no text"),
    (_choice({"role": "assistant", "content": " \n\t "}), "malformed", "no text"),
    (_choice({"role": "assistant", "content": ""}, "error", error={"code": 502, "message": "upstream died"}), "server",
     "upstream died"),
    ((200, {}, {"error": {"code": 429, "message": "slow down"}}), "rate_limit", "slow down"),
    ((200, {}, {"error": "Unexpected endpoint or method. (POST /chat/completions)"}), "bad_request",
     "Unexpected endpoint"),
    ((402, {}, {"error": {"message": "Insufficient credits"}}), "bad_request", "payment required"),
    ((308, {"Location": "https://elsewhere.example/v1/chat/completions"}, {}), "bad_request", "elsewhere.example"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "kind", "says"), NO_ANSWER, ids=lambda v: str(v)[:40])
async def test_a_reply_without_an_answer_is_a_failure_that_says_why(provider, reply, kind, says):
    """A refusal, a content filter's stop, reasoning without text, no text at all (or whitespace alone), an error
    inside the choice or in a 200's body, a 402 and a redirect each fail with their kind and the provider's words,
    never as a reply."""
    provider.script(reply)
    with pytest.raises(LLMFailure) as caught:
        await backend(provider)(QUESTION)
    error = caught.value.error
    assert error.kind == kind and says in error.message
    assert error.retryable == (kind in ("server", "rate_limit", "malformed"))
    assert provider.count == 1  # a redirect is not followed


async def test_content_given_as_parts_is_read_as_its_text_parts(provider):
    """A content list (Mistral's parts) is its text parts joined; other parts (thinking) are left out."""
    parts = [
        {"type": "thinking", "thinking": "Hmm."},
        {"type": "text", "text": "The answer"},
        {"type": "text", "text": " is 4."},
    ]
    provider.script(_choice({"role": "assistant", "content": parts}))
    assert (await backend(provider)(QUESTION)).text == "The answer is 4."


def test_tls_is_verified_for_an_https_url_written_in_capitals():
    """'HTTPS://' verifies certificates as 'https://' does (it once turned verification off)."""
    import ssl

    llm = openai_compatible("HTTPS://api.example.com/v1", model="m", api_key="sk-x")
    llm._new_client()
    assert llm._tls is not None and llm._tls.verify_mode == ssl.CERT_REQUIRED and llm._tls.check_hostname


async def test_a_missing_proxy_transport_is_a_bad_request_not_an_import_error(provider, monkeypatch):
    """A proxy setting whose transport is not installed (socks without socksio) fails as a bad_request LLMFailure."""
    llm = backend(provider)

    class Client:
        async def __aenter__(self):
            return self

        async def __aexit__(self, *exc):
            return None

        async def post(self, *args, **kwargs):
            raise ImportError("Using SOCKS proxy, but the 'socksio' package is not installed.")

        request = post  # the transport sends an HttpRequest's method with request()

    monkeypatch.setattr(llm, "_new_client", Client)
    with pytest.raises(LLMFailure) as caught:
        await llm(QUESTION)
    assert caught.value.error.kind == "bad_request" and "socksio" in caught.value.error.message


def test_azure_openai_also_gets_max_completion_tokens_and_look_alike_hosts_do_not():
    """max_completion_tokens goes to api.openai.com and *.openai.azure.com (any case), not to hosts merely like them."""
    fields = {
        url: openai_compatible(url, model="m").max_tokens_field
        for url in ("HTTPS://API.OPENAI.COM/v1", "https://res.openai.azure.com/openai/v1",
                    "https://openai.azure.com.evil.example/v1", "https://xopenai.azure.com/v1", "http://[::1/v1")
    }  # fmt: skip
    assert list(fields.values()) == ["max_completion_tokens", "max_completion_tokens"] + ["max_tokens"] * 3


FAULTS = [
    ((429, {"Retry-After": "3"}, {"error": {"message": "slow down"}}), "rate_limit", True),
    ((500, {}, {"error": {"message": "boom"}}), "server", True),
    ((503, {}, {}), "server", True),
    ((401, {}, {"error": {"message": "Incorrect API key provided"}}), "auth", False),
    ((403, {}, {}), "auth", False),
    (
        (
            400,
            {},
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens",
                    "code": "context_length_exceeded",
                }
            },
        ),
        "bad_request",
        False,
    ),
    ((413, {}, {}), "bad_request", False),
    ((409, {}, {}), "conflict", True),
    ((500, {"x-should-retry": "false"}, {}), "server", False),
    ((400, {"X-Should-Retry": "true"}, {}), "bad_request", True),
    ((422, {}, {}), "bad_request", False),
    ("truncated", "malformed", True),
    ("hang", "timeout", True),
    ("drop", "connection", True),
    ((200, {}, DEEP_JSON), "malformed", True),
    ((503, {}, DEEP_JSON), "server", True),
    ((401, {}, DEEP_JSON), "auth", False),
]


@pytest.mark.parametrize(("fault", "kind", "retryable"), FAULTS, ids=lambda v: str(v[0] if isinstance(v, tuple) else v))
async def test_each_fault_becomes_its_documented_error(provider, fault, kind, retryable):
    """Every scripted fault surfaces as LLMFailure with the documented kind and retryability."""
    provider.script(fault)
    with pytest.raises(LLMFailure) as caught:
        await backend(provider, timeout=TIMEOUT)(QUESTION)
    error = caught.value.error
    assert (error.kind, error.retryable) == (kind, retryable)
    assert error.message


async def test_a_rate_limit_carries_retry_after_and_a_context_error_says_why(provider):
    """A 429's Retry-After becomes retry_after; a 400's provider message is kept in the error."""
    provider.script(
        (429, {"Retry-After": "3"}, {}), (400, {}, {"error": {"message": "maximum context length exceeded"}})
    )
    llm = backend(provider)
    with pytest.raises(LLMFailure) as limited:
        await llm(QUESTION)
    with pytest.raises(LLMFailure) as too_long:
        await llm(QUESTION)
    assert limited.value.error.retry_after == 3.0
    assert "maximum context length" in too_long.value.error.message


async def test_an_auth_error_names_the_variable_to_set(provider, monkeypatch):
    """A 401 says to set OPENAI_API_KEY, whether or not a key was sent."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider.script((401, {}, {}), (401, {}, {}))
    for llm in (backend(provider), backend(provider, api_key="sk-wrong")):
        with pytest.raises(LLMFailure, match="OPENAI_API_KEY"):
            await llm(QUESTION)


async def test_a_refused_connection_is_a_retryable_connection_error(free_port):
    """Nobody listening on the port gives kind 'connection', retryable."""
    llm = openai_compatible(f"http://127.0.0.1:{free_port}/v1", model="m", timeout=2)
    with pytest.raises(LLMFailure) as caught:
        await llm(QUESTION)
    assert (caught.value.error.kind, caught.value.error.retryable) == ("connection", True)


@pytest.mark.parametrize("base_url", ["127.0.0.1:9/v1", "ftp://127.0.0.1:9/v1", "http://[::1/v1"])
async def test_a_bad_base_url_is_a_bad_request_that_says_so(base_url):
    """A base_url without http(s):// or that does not parse fails as a non-retryable bad_request naming base_url."""
    with pytest.raises(LLMFailure, match="base_url") as caught:
        await openai_compatible(base_url, model="m")(QUESTION)
    assert (caught.value.error.kind, caught.value.error.retryable) == ("bad_request", False)


async def test_a_reply_without_choices_is_malformed(provider):
    """A 200 whose JSON lacks the expected fields is a retryable 'malformed' error."""
    provider.script((200, {}, {"object": "chat.completion"}))
    with pytest.raises(LLMFailure) as caught:
        await backend(provider)(QUESTION)
    assert (caught.value.error.kind, caught.value.error.retryable) == ("malformed", True)


@pytest.mark.parametrize(
    "faults",
    [
        ((429, {"Retry-After": "0.01"}, {}),),
        ((500, {}, {}), (502, {}, {})),
        ("hang",),
        ("truncated",),
        ("drop", (503, {}, {})),
    ],
    ids=["429", "500-502", "hang", "truncated", "drop-503"],
)
async def test_retrying_recovers_from_transient_faults(provider, faults):
    """Under retrying, transient faults are retried and the call succeeds with one request per attempt."""
    provider.script(*faults)
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    llm = retrying(backend(provider, timeout=TIMEOUT), RetryPolicy(base_delay=0.001, seed=0), sleep=sleep)
    response = await llm(QUESTION)
    assert response.text.startswith("reply ")
    assert provider.count == len(faults) + 1
    assert len(waits) == len(faults)


async def test_retry_waits_at_least_retry_after(provider):
    """A 429 with Retry-After: 2 makes retrying wait at least 2 s before the next attempt."""
    provider.script((429, {"Retry-After": "2"}, {}))
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    await retrying(backend(provider), RetryPolicy(base_delay=0.001), sleep=sleep)(QUESTION)
    assert waits == [2.0]


async def test_a_malformed_reply_is_retried_once_by_default(provider):
    """With the default policy, malformed replies get one retry, then the error is raised."""
    provider.script("truncated", "truncated", "truncated")

    async def sleep(seconds):
        pass

    with pytest.raises(LLMFailure) as caught:
        await retrying(backend(provider), sleep=sleep)(QUESTION)
    assert caught.value.error.kind == "malformed"
    assert provider.count == 2


async def test_non_retryable_faults_are_not_retried(provider):
    """A 401 under retrying is raised after a single request."""
    provider.script((401, {}, {}))
    with pytest.raises(LLMFailure):
        await retrying(backend(provider))(QUESTION)
    assert provider.count == 1


async def test_an_entered_backend_has_no_cap_of_its_own_on_connections(provider):
    """An entered backend runs more than httpx's default 100 calls at once (its callers bound concurrency):
    with the cap, call 101 waited for a connection, on its own timeout."""
    import anyio

    provider.delay = 1.5
    llm = backend(provider)
    async with llm, anyio.create_task_group() as tg:
        for _ in range(120):
            tg.start_soon(llm, QUESTION)
    assert provider.count == 120 and provider.peak > 100


async def test_an_entered_backend_shares_one_connection_pool(provider):
    """Inside 'async with backend:' many calls succeed over the shared client, which is closed at exit."""
    llm = backend(provider)
    async with llm:
        texts = [(await llm(QUESTION)).text for _ in range(3)]
    assert len(set(texts)) == 1 and provider.count == 3
    assert llm._client is None


@pytest.mark.parametrize("factory", ["openai", "anthropic"])
async def test_a_deadline_bounds_the_whole_call_where_the_timeout_bounds_each_read(provider, factory):
    """A reply dripped over 2 s, each piece well within the timeout, arrives without a deadline; with deadline=0.5
    the call fails, retryable, as a 'timeout' saying so, well before the reply would have ended."""
    import time

    from semgrad.backends import anthropic

    def build(**config):
        if factory == "openai":
            return backend(provider, timeout=1.0, **config)
        return anthropic("m", base_url=provider.base_url, api_key="k", timeout=1.0, **config)

    provider.script("drip")
    assert (await build()(QUESTION)).text
    provider.script("drip")
    started = time.monotonic()
    with pytest.raises(LLMFailure) as caught:
        await build(deadline=0.5)(QUESTION)
    assert time.monotonic() - started < 1.5
    error = caught.value.error
    assert (error.kind, error.retryable) == ("timeout", True) and "deadline of 0.5 s" in error.message


@pytest.mark.parametrize("deadline", [0, -1, float("nan"), float("inf"), "5", True])
def test_a_deadline_must_be_positive_seconds(deadline):
    """deadline= refuses what is not a positive, finite number of seconds."""
    with pytest.raises(ValueError, match="deadline must be positive seconds"):
        openai_compatible("http://127.0.0.1:9/v1", model="m", deadline=deadline)
