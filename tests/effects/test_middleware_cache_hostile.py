"""cached: a cache file is hostile input; what it holds is checked, and another application's file is left alone."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing

import anyio
import pytest

from semgrad.core import LLMRequest, LLMResponse, Message
from semgrad.effects import cached
from semgrad.effects._cache import CacheError, SqliteStore


def ask(prompt):
    return LLMRequest((Message("user", prompt),))


class Answer:
    """An LLM with a fixed identity that counts its calls and answers from the prompt (or with `reply`)."""

    identity = "fake-1"

    def __init__(self, reply=None):
        self.reply = reply
        self.calls = 0

    def __call__(self, request):
        self.calls += 1
        return self.reply or LLMResponse(f"answer to {request.prompt}", {"input_tokens": 3, "output_tokens": 2}, "m")


def a_cache_with_one_reply(path, **columns):
    """A genuine cache at `path` holding the reply to ask("q"), with `columns` then overwritten in its row."""
    anyio.run(cached(Answer(), path=path), ask("q"))
    with closing(sqlite3.connect(path)) as conn, conn:
        for column, value in columns.items():
            conn.execute(f"UPDATE replies SET {column} = ?", (value,))


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "usage",
    [
        '{"input_tokens": "abc"}',
        '{"input_tokens": NaN}',
        '{"input_tokens": Infinity}',
        '{"input_tokens": true}',
        '{"input_tokens": -1000000}',
        '{"input_tokens": 9223372036854775808}',
        '{"input_tokens": 1.5}',
        '{"input_tokens": null}',
        '{"a": ' * 100_000 + "1" + "}" * 100_000,
    ],
)
def test_a_stored_usage_that_is_not_token_counts_is_refused_naming_the_file(tmp_path, usage):
    """A row whose usage holds anything but ints from 0 to 2**63 - 1 (or is nested too deeply) raises CacheError."""
    path = tmp_path / "cache.sqlite"
    a_cache_with_one_reply(path, usage=usage)
    inner = Answer()
    with pytest.raises(CacheError, match=f"{path}.*damaged reply"):
        anyio.run(cached(inner, path=path), ask("q"))
    assert inner.calls == 0


@pytest.mark.parametrize("columns", [{"model": b"m"}, {"usage": b'{"input_tokens": 3}'}])
def test_a_stored_model_or_usage_that_is_not_a_string_is_refused(tmp_path, columns):
    """A row whose model or usage is stored as a blob (not text) raises CacheError instead of being converted."""
    path = tmp_path / "cache.sqlite"
    a_cache_with_one_reply(path, **columns)
    with pytest.raises(CacheError, match=f"{path}.*damaged reply"):
        anyio.run(cached(Answer(), path=path), ask("q"))


async def test_usage_entries_that_are_not_token_counts_are_not_stored(tmp_path):
    """A reply's non-count usage (a float cost) stays in the live reply but not in the cache, which then reads back."""
    path = tmp_path / "cache.sqlite"
    live = await cached(Answer(LLMResponse("x", {"input_tokens": 3, "cost": 0.5}, "m")), path=path)(ask("q"))
    assert live.usage == {"input_tokens": 3, "cost": 0.5}
    again = cached(Answer(), path=path)
    assert await again(ask("q")) == LLMResponse("x", {"input_tokens": 3}, "m")
    assert again.hits == 1


@pytest.mark.parametrize(
    "schema",
    [
        ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", "INSERT INTO notes (body) VALUES ('secret')"],
        ["CREATE TABLE replies (id INTEGER PRIMARY KEY, body TEXT)", "INSERT INTO replies (body) VALUES ('hi')"],
        [
            "CREATE TABLE replies (key TEXT PRIMARY KEY, text TEXT NOT NULL, usage TEXT NOT NULL, model TEXT NOT NULL, "
            "purpose TEXT, node TEXT, created REAL NOT NULL)",
            "CREATE VIEW everything AS SELECT * FROM replies",
        ],
    ],
    ids=["other table", "other replies table", "cache plus a view"],
)
def test_another_applications_database_is_refused_and_left_unchanged(tmp_path, schema):
    """A database holding anything but the cache's table raises CacheError naming it, with its bytes unchanged."""
    victim = tmp_path / "victim_app.db"
    with closing(sqlite3.connect(victim)) as conn, conn:
        for statement in schema:
            conn.execute(statement)
    before = digest(victim)
    with pytest.raises(CacheError, match=f"cannot use the cache {victim}: .*not a semgrad cache"):
        cached(Answer(), path=victim)
    assert digest(victim) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim_app.db"]  # no -wal or -shm file either
    with closing(sqlite3.connect(victim)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    # A missing file, an empty file and a genuine cache still open.
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    for path in (tmp_path / "missing.sqlite", empty):
        anyio.run(cached(Answer(), path=path), ask("q"))
        store = SqliteStore(path)
        assert len(store) == 1 and store.get_sync(_only_key(path)) is not None
        store.close()


def _only_key(path):
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT key FROM replies").fetchone()[0]


def test_a_path_that_is_not_a_regular_file_is_refused(special_paths):
    """A directory, a FIFO or a link to /dev/zero as the cache path raises CacheError naming it, without blocking."""
    directory, fifo, zero = special_paths
    for path in (directory, fifo, zero):
        with pytest.raises(CacheError, match=f"cannot use the cache {path}: it is not a regular file"):
            cached(Answer(), path=path)
    assert fifo.exists() and directory.is_dir() and list(directory.iterdir()) == []
