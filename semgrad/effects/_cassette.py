"""Record and replay: keep a run's replies in a JSON Lines cassette, answer from it offline.

Each line is one successful call::

    {"key": <request_key>, "request": {messages, engine, purpose, node, sample,
     draw, targets, options}, "response": {"text", "usage", "model"}}

`replayed` answers by request key, so a replayed run needs no network, no key
and no backend, and gives the same `Trace` as the recorded one.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse, request_key
from ..core._requests import _canonical
from ._routing import call, identity_of

__all__ = ["recorded", "replayed"]


def _record(request: LLMRequest, response: LLMResponse) -> str:
    record = {
        "key": request_key(request),
        "request": _canonical(request),
        "response": {"text": response.text, "usage": dict(response.usage), "model": response.model},
    }
    return json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


class _Recorded:
    """An async LLM that appends each successful call to a cassette."""

    is_async = True

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner = inner
        self.path = path
        self._lock = threading.Lock()

    @property
    def identity(self) -> Any:
        """The wrapped LLM's identity."""
        return identity_of(self.inner)

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        response = await call(self.inner, request)
        await anyio.to_thread.run_sync(self._append, _record(request, response))
        return response

    def _append(self, line: str) -> None:
        with self._lock, self.path.open("a", encoding="utf-8") as file:
            file.write(line)

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
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return _Recorded(llm, path)


def _load(path: Path) -> dict[str, LLMResponse]:
    replies: dict[str, LLMResponse] = {}
    with path.open(encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                reply = record["response"]
                text, usage, model = reply["text"], reply.get("usage") or {}, reply.get("model", "")
                if not isinstance(record["key"], str) or not isinstance(text, str) or not isinstance(model, str):
                    raise TypeError("key, text and model must be strings")
                if not isinstance(usage, dict) or not all(isinstance(n, int) for n in usage.values()):
                    raise TypeError("usage must map names to token counts")
                replies[record["key"]] = LLMResponse(text, usage, model)
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(
                    f"{path}:{number}: not a cassette record ({exc}); was it written by recorded()?"
                ) from exc
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

    Raises:
        FileNotFoundError: When `path` does not exist.
        ValueError: When a line is not a cassette record.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no cassette at {path}; record one with recorded(llm, path=...)")
    return _Replayed(path, _load(path))
