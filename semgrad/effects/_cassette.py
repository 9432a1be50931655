"""Record and replay: keep a run's replies in a JSON Lines cassette, answer from it offline.

Each line is one successful call::

    {"key": <request_key>, "request": {messages, engine, purpose, node, sample,
     draw, targets, options}, "response": {"text", "usage", "model"}}

`replayed` answers by request key, so a replayed run needs no network, no key
and no backend, and gives the same `Trace` as the recorded one.

A cassette is untrusted input: reading it never imports or calls anything it
names, and every line is checked (key, text and model are strings, usage maps
names to token counts: ints from 0 to 2**63 - 1, not booleans) before a reply
is kept. Anything else, a line that is not UTF-8 or JSON, JSON nested too
deeply, or a path that is not a regular file (a directory, a FIFO, a device,
which could block or never end), raises ValueError naming the file, and the
line when there is one. So that a cassette replays whatever it recorded, a
reply is recorded with only the usage entries that are token counts, and a
record that UTF-8 cannot hold (a lone surrogate, half an emoji that a JSON
reply's ``\ud83d`` escape can carry) is written with JSON's ASCII escapes.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import anyio

from .._files import open_regular, unreadable, write_failed
from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse, request_key
from ..core._requests import _canonical
from ._cache import _storable_usage, _token_counts
from ._routing import Middleware, call

__all__ = ["MAX_BYTES", "MAX_LINE_BYTES", "recorded", "replayed"]

#: The most a cassette may hold, and one line of it (a reply of megabytes is far past any model's output):
#: a larger file or line is refused naming the file and the limit, never read whole.
MAX_BYTES = 2 * 2**30
MAX_LINE_BYTES = 64 * 2**20


def _record(request: LLMRequest, response: LLMResponse) -> str:
    record = {
        "key": request_key(request),
        "request": _canonical(request),
        "response": {"text": response.text, "usage": _storable_usage(response.usage), "model": response.model},
    }
    line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (half an emoji cut by a server): written escaped, read back as it was
        line = json.dumps(record, sort_keys=True) + "\n"
    return line


class _Recorded(Middleware):
    """An async LLM that appends each successful call to a cassette."""

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner = inner
        self.path = path
        self._lock = threading.Lock()

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        response = await call(self.inner, request)
        await anyio.to_thread.run_sync(self._append, _record(request, response))
        return response

    def _append(self, line: str) -> None:
        try:
            with self._lock, self.path.open("a", encoding="utf-8") as file:
                file.write(line)
        except OSError as exc:  # a full disk: the message names the cassette
            raise write_failed(self.path, exc) from None

    def __repr__(self) -> str:
        return f"recorded({self.inner!r}, path={str(self.path)!r})"


def recorded(llm: Any, path: str | Path) -> Any:
    """Wrap `llm` so every successful call is appended to the JSON Lines file `path`.

    The file is created at once (a run with no call replays from an empty
    cassette) and appended to if it exists. Failed calls are not recorded. The file holds requests and replies, never
    credentials (backends keep their key out of requests).

    Returns:
        An async LLM with the same ``identity`` as `llm`.

    Examples:
        >>> import tempfile
        >>> from semgrad.core import Message
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = Path(tmp) / "run.jsonl"
        ...     _ = anyio.run(recorded(lambda request: "4", path), LLMRequest((Message("user", "2+2?"),)))
        ...     replayed(path)(LLMRequest((Message("user", "2+2?"),))).text
        '4'
    """
    if not callable(llm):
        raise TypeError(f"recorded needs an LLM (a callable), got {type(llm).__name__}")
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not path.is_file():
        raise ValueError(f"cannot record to {path}: it is not a regular file; pass the path of a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return _Recorded(llm, path)


def _unreadable(path: Path, why: str) -> ValueError:
    return ValueError(f"cannot replay {path}: {why}; pass the path of a cassette written by recorded()")


def _open(path: Path) -> Any:
    """`path` opened for binary reading, if it is a regular file (a FIFO or a device could block or never end)."""
    if not path.is_file():
        raise _unreadable(path, "it is not a regular file")
    try:
        return open_regular(path)  # without blocking, and checked again once open
    except OSError as exc:
        why = "it is not a regular file" if not exc.strerror else f"it cannot be read ({exc.strerror})"
        raise _unreadable(path, why) from None


def _reply(line: bytes) -> tuple[str, LLMResponse]:
    """The key and reply of one cassette line; ValueError, TypeError or RecursionError when it is not one."""
    record = json.loads(line.decode("utf-8"))
    if not isinstance(record, dict) or not isinstance(record.get("response"), dict):
        raise TypeError("a record is an object with a response object")
    reply = record["response"]
    key, text, usage, model = record.get("key"), reply.get("text"), reply.get("usage", {}), reply.get("model", "")
    if not isinstance(key, str) or not isinstance(text, str) or not isinstance(model, str):
        raise TypeError("key, text and model must be strings")
    return key, LLMResponse(text, _token_counts(usage), model)


class _TooLong(Exception):
    """A cassette line, or the whole file, past its limit."""


def _lines(file: Any) -> Any:
    """The lines of the cassette `file`, each read up to `MAX_LINE_BYTES`; `_TooLong` (saying which limit)
    when a line or the whole file is longer: nothing past the limit is read."""
    total, number = 0, 0
    while True:
        line = file.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        total += len(line)
        if len(line) > MAX_LINE_BYTES:
            raise _TooLong(f"line {number} is longer than {MAX_LINE_BYTES:,} bytes")
        if total > MAX_BYTES:
            raise _TooLong(f"it is larger than {MAX_BYTES:,} bytes, the most a cassette may hold")
        yield line


def _load(path: Path) -> dict[str, LLMResponse]:
    replies: dict[str, LLMResponse] = {}
    with _open(path) as file:
        number = 0
        size = os.fstat(file.fileno()).st_size
        if size > MAX_BYTES:
            raise _unreadable(path, f"it is larger than {MAX_BYTES:,} bytes, the most a cassette may hold")
        lines = _lines(file)
        try:
            for number, line in enumerate(lines, 1):  # noqa: B007 (used by the handlers below, naming the line)
                if line.strip():
                    key, reply = _reply(line)
                    replies[key] = reply
        except _TooLong as exc:
            raise _unreadable(path, str(exc)) from None
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}:{number}: not a cassette record (not UTF-8 at byte {exc.start})") from None
        except RecursionError:
            raise ValueError(f"{path}:{number}: not a cassette record (JSON nested too deeply)") from None
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"{path}:{number}: not a cassette record ({unreadable(exc)}); was it written by recorded()?"
            ) from exc
        except OSError as exc:
            raise _unreadable(path, f"reading line {number + 1} failed ({exc.strerror or exc})") from None
    return replies


class _Replayed:
    """A sync LLM that answers from a cassette by request key."""

    is_async = False

    def __init__(self, path: Path, replies: dict[str, LLMResponse]) -> None:
        self.path = path
        self._replies = replies

    @property
    def identity(self) -> FrozenMap[str, str]:
        """The cassette this LLM replays."""
        return FrozenMap({"provider": "cassette", "path": str(self.path)})

    def __len__(self) -> int:
        return len(self._replies)

    def __call__(self, request: LLMRequest) -> LLMResponse:
        key = request_key(request)
        reply = self._replies.get(key)
        if reply is None:
            raise LLMFailure(
                LLMError(
                    "not_recorded",
                    f"{self.path} has no reply for purpose={request.purpose!r} node={request.node!r} "
                    f"sample={request.sample!r} draw={request.draw} (key {key[:12]}); "
                    "record this run again with recorded(llm, path=...)",
                )
            )
        return reply

    def __repr__(self) -> str:
        return f"replayed({str(self.path)!r})"


def replayed(path: str | Path) -> Any:
    """An LLM that answers from the cassette `path` written by `recorded`.

    A request the cassette lacks fails with ``LLMError(kind="not_recorded")``
    naming its purpose, node, sample and key. When a request was recorded more
    than once, the last reply wins. The LLM is sync, so `run_sync` replays with
    no event loop.

    A failed call is data, not an exception: a run on a stale cassette finishes,
    with those failures in its traces and in ``FitResult.errors_by_kind``. A test
    that must stop at the first one passes an ``on_reply`` hook that raises
    (`Runner`, `run`, `fit`: an exception from the hook ends the run as itself)::

        def strict(request, reply):
            if not is_successful(reply):  # returns.pipeline.is_successful
                raise AssertionError(reply.failure().message)

        await fit(..., llm=replayed(path), on_reply=strict)

    Raises:
        FileNotFoundError: When `path` does not exist.
        ValueError: When `path` is not a regular file or cannot be read, or a
            line is not a cassette record (naming the file and the line).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no cassette at {path}; record one with recorded(llm, path=...)")
    return _Replayed(path, _load(path))
