"""API keys never leak: not in reprs, identities, errors, logs, caches, cassettes or pickles."""

from __future__ import annotations

import logging
import pickle
import traceback

import pytest

from semgrad.backends import anthropic, openai_compatible
from semgrad.core import GraphBuilder, LLMFailure, LLMRequest, Message, forward
from semgrad.effects import (
    RetryPolicy,
    accounted,
    budgeted,
    by_engine,
    cached,
    limited,
    recorded,
    retrying,
    run,
)

KEY = "sk-LEAKCHECK-0123456789abcdef"
ECHO = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
FAULTS = [
    (401, {}, ECHO),
    (400, {}, ECHO),
    (500, {}, ECHO),
    (429, {"Retry-After": "0"}, ECHO),
    "truncated",
    "hang",
    "drop",
]


def backends(provider):
    return [
        openai_compatible(provider.base_url + "/v1", model="m", api_key=KEY, timeout=0.5),
        anthropic("m", base_url=provider.base_url, api_key=KEY, timeout=0.5),
    ]


def graph():
    b = GraphBuilder()
    q = b.input("q")
    b.llm("answer", inputs=[q], instruction="Answer.")
    return b.build(output="answer")


@pytest.mark.parametrize("which", [0, 1], ids=["openai", "anthropic"])
async def test_no_error_message_or_traceback_contains_the_key(provider, which, caplog):
    """Every fault, even one whose body echoes the key, yields errors, tracebacks and logs without it."""
    caplog.set_level(logging.DEBUG)
    llm = backends(provider)[which]
    provider.script(*FAULTS)
    texts = []
    for _ in FAULTS:
        with pytest.raises(LLMFailure) as caught:
            await llm(LLMRequest((Message("user", "hi"),)))
        texts += [str(caught.value), repr(caught.value.error), "".join(traceback.format_exception(caught.value))]
    assert KEY in str(provider.requests[0][1])
    assert all(KEY not in text for text in texts)
    assert "***" in texts[0]
    assert KEY not in caplog.text


def _cut_across_the_key(limit, before=""):
    """Padding that puts the key across the first `limit` characters of a message (all but its last character kept)."""
    return "x" * (limit - len(before) - len(KEY) + 1)


@pytest.mark.parametrize("which", [0, 1], ids=["openai", "anthropic"])
async def test_an_echoed_key_that_a_message_cuts_short_leaves_no_part_of_itself(provider, which):
    """A server's message is cut to a few hundred characters after the key is scrubbed: no prefix of the key is left."""
    llm = backends(provider)[which]
    faults = [
        (401, {}, {"error": {"message": _cut_across_the_key(500) + KEY}}),  # its JSON message: cut at 500
        (503, {}, (_cut_across_the_key(300) + KEY).encode()),  # a body that is no JSON: cut at 300
        (200, {}, {"error": {"message": _cut_across_the_key(500) + KEY}}),  # an error in a 200's body: cut at 500
    ]
    if which == 0:  # OpenRouter's error inside a choice: cut at 300
        choice = {"index": 0, "error": {"message": _cut_across_the_key(300) + KEY}, "message": {}}
        faults.append((200, {}, {"choices": [choice], "model": "m"}))
    provider.script(*faults)
    for _ in faults:
        with pytest.raises(LLMFailure) as caught:
            await llm(LLMRequest((Message("user", "hi"),)))
        assert KEY[:12] not in str(caught.value), caught.value.error.kind


@pytest.mark.parametrize("which", [0, 1], ids=["openai", "anthropic"])
async def test_credentials_in_the_base_url_are_sent_and_never_shown(provider, which):
    """A base_url's user:password@ reaches the server, never a repr, an identity or an error message."""
    base = provider.base_url.replace("http://", "http://alice:pw-LEAKCHECK-42@")
    llm = [openai_compatible(base + "/v1", model="m", timeout=0.5), anthropic("m", base_url=base, timeout=0.5)][which]
    provider.script(None, "drop", (307, {"Location": base + "/elsewhere"}, {}))
    await llm(LLMRequest((Message("user", "hi"),)))
    assert provider.requests[0][1]["authorization"].startswith("Basic ")
    texts = [repr(llm), str(dict(llm.identity))]
    for _ in range(2):
        with pytest.raises(LLMFailure) as caught:
            await llm(LLMRequest((Message("user", "hi"),)))
        texts.append(str(caught.value))
    assert all("pw-LEAKCHECK-42" not in text for text in texts), texts
    assert "127.0.0.1" in texts[2] and "***@" in texts[2]


async def test_reprs_identities_and_pickles_never_show_the_key(provider):
    """Backends and every wrapper around them show no key in repr, vars or identity, and refuse to pickle."""
    for llm in backends(provider):
        wrapped = [
            retrying(llm),
            limited(llm, 2),
            cached(llm),
            accounted(llm),
            budgeted(llm, 1),
            by_engine({"forward": llm}),
            cached(retrying(limited(llm, 2))),
        ]
        shown = [repr(llm), str(vars(llm)), repr(llm.identity)] + [repr(w) + repr(w.identity) for w in wrapped]
        assert all(KEY not in text for text in shown)
        with pytest.raises(TypeError, match="not pickled") as refused:
            pickle.dumps(llm)
        assert KEY not in str(refused.value)


async def test_caches_cassettes_and_traces_written_by_a_run_never_hold_the_key(provider, tmp_path):
    """After successful and failed runs through cache and recorder, no written file and no trace contains the key."""
    graph_, params = graph()
    for i, llm in enumerate(backends(provider)):
        stack = cached(
            recorded(retrying(llm, RetryPolicy(max_attempts=2, base_delay=0)), tmp_path / f"run{i}.jsonl"),
            path=tmp_path / "cache.sqlite",
        )
        good = await run(forward(graph_, params, {"q": "2+2?"}), stack)
        provider.script((401, {}, ECHO))
        bad = await run(forward(graph_, params, {"q": "other"}), stack)
        assert good.ok and not bad.ok
        assert KEY not in repr(good) + repr(bad)
    files = [p for p in tmp_path.iterdir() if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in files) and any(p.suffix == ".jsonl" for p in files)
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path.name
