"""cached: one call per distinct request and identity, in-flight dedup, SQLite shared by processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import LLMError, LLMFailure, LLMRequest, LLMResponse, Message, request_key
from semgrad.effects import cached
from semgrad.effects._cache import SqliteStore, cache_key

ROOT = Path(__file__).resolve().parents[2]


class Counting:
    """An LLM with an identity that counts its calls and answers from the prompt."""

    def __init__(self, identity="fake-1", latency=0.0, fail_first=0):
        self.identity = identity
        self.latency = latency
        self.fail_first = fail_first
        self.calls = 0

    async def __call__(self, request):
        self.calls += 1
        await anyio.sleep(self.latency)
        if self.calls <= self.fail_first:
            raise LLMFailure(LLMError("server", "HTTP 500", retryable=True))
        return LLMResponse(f"answer to {request.prompt}", {"input_tokens": 3, "output_tokens": 2}, "m")


def ask(prompt, **fields):
    return LLMRequest((Message("user", prompt),), **fields)


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=12), st.lists(st.integers(0, 1), min_size=12, max_size=12))
def test_the_inner_llm_is_called_once_per_distinct_request(prompts, draws):
    """Over any sequence of requests, the inner LLM sees each distinct request key once and answers are unchanged."""
    inner = Counting()
    llm = cached(inner)
    requests = [ask(p, draw=d) for p, d in zip(prompts, draws)]

    async def main():
        return [await llm(r) for r in requests]

    answers = anyio.run(main)
    assert [a.text for a in answers] == [f"answer to {r.prompt}" for r in requests]
    assert inner.calls == llm.misses == len({request_key(r) for r in requests})
    assert llm.hits == len(requests) - llm.misses


async def test_concurrent_identical_requests_are_made_once():
    """Ten identical requests in flight together reach the inner LLM once; all get its reply."""
    inner = Counting(latency=0.02)
    llm = cached(inner)
    results = []

    async def one():
        results.append(await llm(ask("q")))

    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(one)
    assert inner.calls == 1 and (llm.hits, llm.misses) == (9, 1)
    assert len(set(results)) == 1


async def test_requests_differing_only_in_draw_are_not_merged():
    """Deliberate repeats (draw 0 and 1) of one prompt make two calls."""
    inner = Counting()
    llm = cached(inner)
    await llm(ask("q", draw=0))
    await llm(ask("q", draw=1))
    assert inner.calls == 2


async def test_failures_are_not_cached_and_are_shared_with_waiters():
    """A failed call is raised to every concurrent waiter, stored nowhere, and the next call tries again."""
    inner = Counting(latency=0.02, fail_first=1)
    llm = cached(inner)
    errors = []

    async def one():
        try:
            await llm(ask("q"))
        except LLMFailure as failure:
            errors.append(failure.error.kind)

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one)
    assert errors == ["server"] * 3 and inner.calls == 1
    assert (await llm(ask("q"))).text == "answer to q"
    assert inner.calls == 2


async def test_a_cancelled_leader_lets_a_waiter_make_the_call():
    """When the call in flight is cancelled, a waiting identical request makes the call itself."""
    calls = []

    async def first_call_hangs(request):
        calls.append(request)
        if len(calls) == 1:
            await anyio.sleep_forever()
        return "answer"

    llm = cached(first_call_hangs)
    results = []
    leader_scope = anyio.CancelScope()

    async def leader():
        with leader_scope:
            await llm(ask("q"))

    async def waiter():
        results.append(await llm(ask("q")))

    async with anyio.create_task_group() as tg:
        tg.start_soon(leader)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        leader_scope.cancel()
    assert [r.text for r in results] == ["answer"]
    assert len(calls) == 2 and llm.misses == 2


async def test_the_sqlite_cache_survives_the_process_and_keeps_usage(tmp_path):
    """A second cached() on the same file answers from it, with text, usage and model intact."""
    path = tmp_path / "sub" / "cache.sqlite"
    first = await cached(Counting(), path=path)(ask("q"))
    inner = Counting()
    again = cached(inner, path=path)
    assert await again(ask("q")) == first
    assert inner.calls == 0 and again.hits == 1


async def test_another_identity_misses(tmp_path):
    """The same request answered by an LLM with another identity is a miss."""
    path = tmp_path / "cache.sqlite"
    await cached(Counting("model-a"), path=path)(ask("q"))
    inner = Counting("model-b")
    await cached(inner, path=path)(ask("q"))
    assert inner.calls == 1


def test_the_key_combines_request_and_identity():
    """cache_key changes with any request field and with the identity, and with nothing else."""
    a, b = Counting("x"), Counting("x")
    assert cache_key(ask("q"), a) == cache_key(ask("q"), b)
    assert cache_key(ask("q"), a) != cache_key(ask("q"), Counting("y"))
    assert cache_key(ask("q"), a) != cache_key(ask("q", options={"temperature": 1}), a)


def test_memory_path_uses_no_file(tmp_path, monkeypatch):
    """path=':memory:' (like None) keeps the cache in memory and writes nothing."""
    monkeypatch.chdir(tmp_path)
    llm = cached(Counting(), path=":memory:")
    anyio.run(llm, ask("q"))
    assert list(tmp_path.iterdir()) == []


WORKER = textwrap.dedent(
    """
    import sys, anyio
    from semgrad.core import LLMRequest, Message
    from semgrad.effects import cached

    class Answer:
        identity = "shared-fake"
        def __call__(self, request):
            return "answer to " + request.prompt

    path, worker = sys.argv[1], int(sys.argv[2])
    llm = cached(Answer(), path=path)

    async def main():
        async with anyio.create_task_group() as tg:
            for i in range(150):
                tg.start_soon(llm, LLMRequest((Message("user", f"q{(i + 75 * worker) % 225}"),)))

    anyio.run(main)
    print(llm.hits, llm.misses)
    """
)


@pytest.mark.slow
def test_two_processes_sharing_a_cache_file_do_not_corrupt_it(tmp_path):
    """Two processes writing overlapping keys to one SQLite file leave it intact and complete."""
    path = tmp_path / "cache.sqlite"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), str(w)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in (0, 1)
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = SqliteStore(path)
    assert len(store) == 225
    identity = type("Shared", (), {"identity": "shared-fake"})()
    for i in range(225):
        reply = store.get_sync(cache_key(ask(f"q{i}"), identity))
        assert reply is not None and reply.text == f"answer to q{i}"
    store.close()


class _FlakyConnection:
    """A real connection whose first `failures` executes raise `error` (another process holding the lock)."""

    def __init__(self, conn, failures, error):
        self._conn, self._failures, self._error = conn, failures, error

    def execute(self, *args):
        if self._failures:
            self._failures -= 1
            raise sqlite3.OperationalError(self._error)
        return self._conn.execute(*args)

    def __enter__(self):
        return self._conn.__enter__()

    def __exit__(self, *exc):
        return self._conn.__exit__(*exc)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def test_opening_a_store_waits_out_a_transiently_locked_file(tmp_path, monkeypatch):
    """A "database is locked" while a new store sets the file up is retried; other errors are not."""
    from semgrad.effects import _cache

    real_connect = sqlite3.connect
    monkeypatch.setattr(
        _cache.sqlite3, "connect", lambda *a, **k: _FlakyConnection(real_connect(*a, **k), 3, "database is locked")
    )
    store = SqliteStore(tmp_path / "cache.sqlite")
    assert len(store) == 0
    store.close()
    monkeypatch.setattr(
        _cache.sqlite3, "connect", lambda *a, **k: _FlakyConnection(real_connect(*a, **k), 1, "disk I/O error")
    )
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        SqliteStore(tmp_path / "other.sqlite")


def _from_gpt(request):
    return "from gpt"


def _from_claude(request):
    return "from claude"


@pytest.mark.parametrize("wrap", ["FunctionLLM", "RecordingLLM", "LatencyLLM"])
async def test_fakes_wrapping_other_functions_never_share_a_cache_entry(tmp_path, wrap):
    """A fake wrapping another function answers as that function in the cache key: one model's cached reply is
    never served for another's (the fakes once all answered as their class's name)."""
    from semgrad.backends import fake

    make = getattr(fake, wrap)
    request = LLMRequest((Message("user", "hi"),), purpose="backward")
    path = tmp_path / "cache.sqlite"
    assert await cached(make(_from_gpt), path=path)(request) in ("from gpt", LLMResponse("from gpt"))
    second = await cached(make(_from_claude), path=path)(request)
    assert "claude" in (second if isinstance(second, str) else second.text)


async def test_hash_llms_with_other_salts_never_share_a_cache_entry(tmp_path):
    """A HashLLM's salt is part of its identity: one cache file never serves salt 'a''s reply to salt 'b'."""
    from semgrad.backends.fake import HashLLM

    request = LLMRequest((Message("user", "hi"),), purpose="rewrite", node="n")
    path = tmp_path / "cache.sqlite"
    await cached(HashLLM("a"), path=path)(request)
    second = await cached(HashLLM("b"), path=path)(request)
    assert (second if isinstance(second, str) else second.text) == HashLLM("b")(request)


async def test_a_flaky_llm_answers_to_a_cache_as_the_llm_it_wraps(tmp_path):
    """FlakyLLM passes its inner LLM's identity through: flaky fakes over two salts never share a cache entry."""
    from semgrad.backends.fake import HashLLM
    from semgrad.testing import FlakyLLM

    assert FlakyLLM(HashLLM("a"), 0.0).identity == HashLLM("a").identity
    request = LLMRequest((Message("user", "hi"),), purpose="rewrite", node="n")
    path = tmp_path / "cache.sqlite"
    await cached(FlakyLLM(HashLLM("a"), 0.0), path=path)(request)
    second = await cached(FlakyLLM(HashLLM("b"), 0.0), path=path)(request)
    assert (second if isinstance(second, str) else second.text) == HashLLM("b")(request)


async def test_a_reply_sqlite_cannot_hold_is_answered_not_stored(tmp_path):
    """A paid reply with a lone surrogate (half an emoji a JSON reply can carry) is answered, and not kept."""
    calls = []

    def llm(request):
        calls.append(request)
        return LLMResponse("cut \ud83d", {"output_tokens": 1}, "m")

    cache = cached(llm, tmp_path / "cache.db")
    request = LLMRequest((Message("user", "hi"),))
    assert (await cache(request)).text == "cut \ud83d"
    assert (await cache(request)).text == "cut \ud83d"
    assert len(calls) == 2 and len(cache.store) == 0
