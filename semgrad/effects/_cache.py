"""Caching: a content-addressed store of successful replies.

The key is ``sha256(request_key(request) + identity of the wrapped LLM)``: the
request key covers messages, options (temperature...), engine, purpose, node,
sample and draw, and the identity covers provider, endpoint, model and the
backend's own settings (Anthropic's default ``max_tokens``...), so everything
that goes into a request body is in the key and a change in any of it misses.
Identical requests made concurrently are sent once (the others wait for its
reply). The SQLite store uses WAL mode, a busy timeout and one short transaction
per write, so several processes may share one file; its blocking calls run in
worker threads.

A cache file is untrusted input: reading it never imports or calls anything it
names, and what it holds is checked before it is used. A path that is not a
regular file (a directory, a FIFO, a device), a file that is not a database, or
a damaged one raises a `CacheError` naming it and saying what to do. So does a
database with tables other than the cache's own (another application's file,
given as the cache path by mistake): it is refused before anything in it is
changed (no table added, no switch to WAL). A stored reply is checked when read
back: its text and model must be strings and its usage must map names to token
counts (ints from 0 to 2**63 - 1, not booleans). A reply that fails these checks
raises `CacheError` rather than counting as a miss, as any damaged row always
has: a miss would quietly pay for the call again and overwrite the evidence,
and a file with one tampered row cannot be trusted for the others. So that the
cache never refuses what it wrote itself, a reply is stored with only the usage
entries that are token counts (an LLM reporting, say, a float cost keeps it in
the live reply, not in the stored one). A reply that is not valid Unicode (a
lone surrogate, half an emoji that a JSON reply's ``\ud83d`` escape can carry)
cannot be written to SQLite: it is answered but not stored, so the call that
paid for it does not fail.
"""

from __future__ import annotations

import hashlib
import json
import reprlib
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Protocol

import anyio
import attrs

from ..core import LLMFailure, LLMRequest, LLMResponse, request_key
from ._accounting import mark_answered
from ._routing import Middleware, call, canonical_identity

__all__ = ["CacheError", "MemoryStore", "SqliteStore", "cache_key", "cached"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    usage TEXT NOT NULL,
    model TEXT NOT NULL,
    purpose TEXT,
    node TEXT,
    created REAL NOT NULL
)
"""


def cache_key(request: LLMRequest, llm: Any) -> str:
    """The cache key of `request` when answered by `llm` (hex sha256).

    Examples:
        >>> from semgrad.core import Message
        >>> r = LLMRequest((Message("user", "hi"),))
        >>> def small(request): return "4"
        >>> def large(request): return "4"
        >>> cache_key(r, small) == cache_key(r, small) != cache_key(r, large)
        True
    """
    blob = request_key(request) + "\n" + canonical_identity(llm)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_REMEDY = "delete it (it only holds replies, which are asked for again) or pass another cache path"
_FOREIGN = "it is not a semgrad cache, so it is left as it is; pass another cache path"

# The objects of a semgrad cache: its table and the index of its primary key.
_OWN_OBJECTS = {("table", "replies"), ("index", "sqlite_autoindex_replies_1")}
# The columns of `replies` as ``PRAGMA table_info`` gives them: name, type, not null, primary key.
_COLUMNS = [
    ("key", "TEXT", 0, 1),
    ("text", "TEXT", 1, 0),
    ("usage", "TEXT", 1, 0),
    ("model", "TEXT", 1, 0),
    ("purpose", "TEXT", 0, 0),
    ("node", "TEXT", 0, 0),
    ("created", "REAL", 1, 0),
]

# The largest token count a reply read back from a file may report: a 64-bit counter, what
# providers count in (anything larger is not a count of tokens but a damaged or forged file).
_MAX_TOKENS = 2**63 - 1


class CacheError(ValueError):
    """A cache file that cannot be used: damaged, not an SQLite database, or another application's."""


class _CacheFileError(CacheError, sqlite3.OperationalError):
    """SQLite failed on the cache file ("disk I/O error", a full disk, a lock held past the busy timeout):
    one line naming the file. Still an `sqlite3.OperationalError`, as before it named the file."""


def _unusable(path: Path, exc: Exception | str, remedy: str = _REMEDY) -> CacheError:
    return CacheError(f"cannot use the cache {path}: {exc}; {remedy}")


def _failed(path: Path, exc: sqlite3.OperationalError) -> _CacheFileError:
    """`exc`, raised by SQLite on the cache `path`, as one line that names the file.

    Examples:
        >>> str(_failed(Path("runs/cache.sqlite"), sqlite3.OperationalError("disk I/O error")))[:45]
        'the cache runs/cache.sqlite failed: disk I/O '
    """
    if isinstance(exc, _CacheFileError):
        return exc
    return _CacheFileError(
        f"the cache {path} failed: {exc}; "
        "check the disk it is on (full, read-only, removed?) or pass another cache path"
    )


def _is_token_count(name: Any, count: Any) -> bool:
    return isinstance(name, str) and type(count) is int and 0 <= count <= _MAX_TOKENS


def _token_counts(usage: Any) -> dict[str, int]:
    """`usage` read back from a file, when it maps names to token counts; else ValueError saying why.

    A count is an int from 0 to 2**63 - 1 (not a bool, a float, a string or NaN),
    so run accounting can add counts up without converting or checking them.
    """
    if not isinstance(usage, dict):
        raise ValueError("usage is not an object")
    for name, count in usage.items():
        if not _is_token_count(name, count):
            raise ValueError(f"usage {reprlib.repr(name)} is not a token count (an int from 0 to 2**63 - 1)")
    return usage


def _storable_usage(usage: Any) -> dict[str, int]:
    """The entries of a reply's `usage` that are token counts: what is written, so reading it back never fails."""
    return {name: count for name, count in dict(usage).items() if _is_token_count(name, count)}


def _storable_text(value: Any) -> bool:
    """Whether `value` is no string, or one UTF-8 can encode (no lone surrogate, which a JSON reply may hold)."""
    if not isinstance(value, str):
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Store(Protocol):
    """Where `cached` keeps replies."""

    async def get(self, key: str) -> LLMResponse | None: ...

    async def put(self, key: str, request: LLMRequest, response: LLMResponse) -> None: ...


class MemoryStore:
    """A store in a dict, for one process and one run."""

    def __init__(self) -> None:
        self._data: dict[str, LLMResponse] = {}

    async def get(self, key: str) -> LLMResponse | None:
        return self._data.get(key)

    async def put(self, key: str, request: LLMRequest, response: LLMResponse) -> None:
        self._data[key] = response

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._data)} replies)"


class SqliteStore:
    """A store in an SQLite file that several processes may share.

    One connection per store, used from worker threads one at a time (an
    SQLite connection reopened per call would cost milliseconds a write).
    Other processes wait for the write lock up to `busy_timeout` seconds. The
    connection closes with `close()` or when the store is garbage-collected.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        # SQLite fails on these with a bare "disk I/O error" or "unable to open database file".
        if (self.path.exists() or self.path.is_symlink()) and not self.path.is_file():
            raise _unusable(self.path, "it is not a regular file", "pass the path of a file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _unusable(
                self.path, f"its folder cannot be made ({exc.strerror or exc})", "pass another cache path"
            ) from None
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(self.path, timeout=busy_timeout, check_same_thread=False)
        except sqlite3.OperationalError as exc:  # "unable to open database file"
            raise _failed(self.path, exc) from None
        self._closer = weakref.finalize(self, self._conn.close)
        # Switching a new file to WAL takes an exclusive lock, and SQLite may report "database is
        # locked" at once (without its busy handler) when another process opens the file at the
        # same moment; so the setup is retried until `busy_timeout`.
        deadline = time.monotonic() + busy_timeout
        while True:
            try:
                self._refuse_a_foreign_database()
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")  # in WAL mode: no corruption, no fsync per write
                with self._conn:
                    self._conn.execute(_SCHEMA)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    self.close()
                    raise _failed(self.path, exc) from None
                time.sleep(0.01)
            except sqlite3.DatabaseError as exc:  # not a database, or a damaged one
                self.close()
                raise _unusable(self.path, exc) from None

    def _refuse_a_foreign_database(self) -> None:
        """Raise `CacheError` if the file holds anything but a semgrad cache (before anything in it is changed)."""
        objects = set(self._conn.execute("SELECT type, name FROM sqlite_master").fetchall())
        others = sorted(objects - _OWN_OBJECTS, key=repr)
        if others:
            kinds = ("table", "index", "view", "trigger")
            names = ", ".join(f"{k if k in kinds else 'object'} {reprlib.repr(n)}" for k, n in others[:5])
            more = f" and {len(others) - 5} more" if len(others) > 5 else ""
            self.close()
            raise _unusable(self.path, f"the database holds {names}{more}", _FOREIGN)
        if ("table", "replies") in objects:
            columns = [tuple(row[1:4]) + (row[5],) for row in self._conn.execute("PRAGMA table_info(replies)")]
            if columns != _COLUMNS:
                self.close()
                raise _unusable(self.path, "its table 'replies' is not a semgrad cache's", _FOREIGN)

    def _query(self, sql: str, row: tuple[Any, ...] = ()) -> Any:
        try:
            return self._conn.execute(sql, row).fetchone()
        except sqlite3.OperationalError as exc:  # "disk I/O error", "database or disk is full"...
            raise _failed(self.path, exc) from None
        except sqlite3.DatabaseError as exc:  # not a database, or a damaged one
            raise _unusable(self.path, exc) from None

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._closer()

    def get_sync(self, key: str) -> LLMResponse | None:
        """Read the reply stored under `key` (blocking)."""
        with self._lock:
            row = self._query("SELECT text, usage, model FROM replies WHERE key = ?", (key,))
        if row is None:
            return None
        text, usage, model = row
        try:
            if not isinstance(text, str) or not isinstance(model, str) or not isinstance(usage, str):
                raise ValueError("a reply is not text, usage and model as strings")
            usage = _token_counts(json.loads(usage))
        except ValueError as exc:
            raise CacheError(f"the cache {self.path} holds a damaged reply ({exc}); {_REMEDY}") from None
        except RecursionError:
            raise CacheError(
                f"the cache {self.path} holds a damaged reply (usage nested too deeply); {_REMEDY}"
            ) from None
        return LLMResponse(text, usage, model)

    def put_sync(self, key: str, request: LLMRequest, response: LLMResponse) -> None:
        """Store `response` under `key` in one transaction (blocking)."""
        usage = json.dumps(_storable_usage(response.usage), sort_keys=True)
        row = (key, response.text, usage, response.model, request.purpose, request.node, time.time())
        if not all(_storable_text(value) for value in row):
            return  # SQLite holds UTF-8 only: such a reply is answered, not kept
        try:
            with self._lock, self._conn:
                self._query("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?)", row)
        except sqlite3.OperationalError as exc:  # the commit, on a full disk
            raise _failed(self.path, exc) from None

    def __len__(self) -> int:
        with self._lock:
            return int(self._query("SELECT COUNT(*) FROM replies")[0])

    async def get(self, key: str) -> LLMResponse | None:
        return await anyio.to_thread.run_sync(self.get_sync, key)

    async def put(self, key: str, request: LLMRequest, response: LLMResponse) -> None:
        await anyio.to_thread.run_sync(self.put_sync, key, request, response)

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"


@attrs.define
class _Pending:
    event: anyio.Event
    response: LLMResponse | None = None
    failure: BaseException | None = None


class _Cached(Middleware):
    """An async LLM that answers repeated requests from a store."""

    def __init__(self, inner: Any, store: Any) -> None:
        self.inner = inner
        self.store = store
        self.hits = 0
        self.misses = 0
        self._pending: dict[str, _Pending] = {}

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        key = cache_key(request, self.inner)
        while True:
            pending = self._pending.get(key)
            if pending is None:
                break
            await pending.event.wait()
            if pending.response is not None:
                self.hits += 1
                return mark_answered(pending.response, "cache")
            if isinstance(pending.failure, LLMFailure):
                raise LLMFailure(pending.failure.error)
            if pending.failure is not None:
                raise pending.failure
        pending = self._pending[key] = _Pending(anyio.Event())
        try:
            pending.response = await self._lookup_or_call(key, request)
            return pending.response
        except Exception as exc:
            pending.failure = exc
            raise
        finally:
            del self._pending[key]
            pending.event.set()

    async def _lookup_or_call(self, key: str, request: LLMRequest) -> LLMResponse:
        stored = await self.store.get(key)
        if stored is not None:
            self.hits += 1
            return mark_answered(stored, "cache")
        self.misses += 1
        response = await call(self.inner, request)
        await self.store.put(key, request, response)
        return response

    def __repr__(self) -> str:
        return f"cached({self.inner!r}, store={self.store!r})"


def cached(llm: Any, path: str | Path | None = None) -> Any:
    """Wrap `llm` so each distinct request is answered once and then from a cache.

    Only successful replies are stored. Requests that differ only in ``draw``
    have different keys, so deliberate repeats are never merged. ``.hits`` and
    ``.misses`` count answers from the cache (or from an identical call in
    flight) and calls passed on to `llm`. Put `accounted` *inside* the cache to
    count only paid calls.

    Args:
        llm: A sync or async LLM; its ``identity`` (if any) is part of the key.
        path: An SQLite file (created if missing; safe to share between
            processes), or None / ``":memory:"`` for an in-memory dict.

    Returns:
        An async LLM with the same ``identity`` as `llm`.

    Examples:
        >>> from semgrad.core import LLMRequest, Message
        >>> llm = cached(lambda request: "4")
        >>> r = LLMRequest((Message("user", "2+2?"),))
        >>> [anyio.run(llm, r).text for _ in range(3)], llm.hits, llm.misses
        (['4', '4', '4'], 2, 1)
    """
    if not callable(llm):
        raise TypeError(f"cached needs an LLM (a callable), got {type(llm).__name__}")
    store = MemoryStore() if path is None or str(path) == ":memory:" else SqliteStore(path)
    return _Cached(llm, store)
