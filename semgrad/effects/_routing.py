"""Calling and routing LLMs: the few helpers every middleware shares, and `by_engine`.

A middleware wraps an LLM that may be sync or async, and may return text, an
`LLMResponse` or a `Result`. `call` hides those differences (it always yields an
`LLMResponse` or raises `LLMFailure`); `identity_of` names the LLM that really
answers, so a cache keys by the backend's identity through any stack of wrappers.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any

from returns.result import Success

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse
from ..core.calls import as_reply
from ._protocol import is_async_llm

__all__ = ["Middleware", "by_engine", "call", "canonical_identity", "identity_of"]


async def call(llm: Any, request: LLMRequest) -> LLMResponse:
    """Call a sync or async `llm` and normalise its answer to an `LLMResponse`.

    Raises:
        LLMFailure: When the LLM reported an `LLMError` (raised or returned).
    """
    result = llm(request)
    if inspect.isawaitable(result):
        result = await result
    reply = as_reply(result)
    if isinstance(reply, Success):
        return reply.unwrap()
    raise LLMFailure(reply.failure())


def identity_of(llm: Any) -> Any:
    """What `llm` answers as: its ``identity`` attribute, else a stable name.

    Backends expose ``identity`` (provider, endpoint, model; never a key) and
    wrappers pass their inner LLM's through. Other callables are named by their
    module and qualified name, so two differently configured instances of one
    class share a name: give such an LLM an ``identity`` attribute to tell them apart.

    Examples:
        >>> def answer(request): return "4"
        >>> identity_of(answer)
        'semgrad.effects._routing.answer'
    """
    identity = getattr(llm, "identity", None)
    if identity is not None:
        return identity
    named = llm if inspect.isfunction(llm) or inspect.ismethod(llm) else type(llm)
    module = getattr(named, "__module__", None) or "?"
    return f"{module}.{getattr(named, '__qualname__', type(named).__name__)}"


class Middleware:
    """The base of a middleware: an async LLM around `inner` that answers as `inner` (its `identity_of`),
    so that a cache or a cassette keys its replies by the provider below every wrapper."""

    is_async = True
    inner: Any

    @property
    def identity(self) -> Any:
        """The wrapped LLM's identity."""
        return identity_of(self.inner)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def canonical_identity(llm: Any) -> str:
    """`identity_of(llm)` as canonical JSON (mappings sorted), for digests.

    Examples:
        >>> canonical_identity(type("B", (), {"identity": FrozenMap({"model": "m", "provider": "p"})})())
        '{"model":"m","provider":"p"}'
    """
    return json.dumps(_plain(identity_of(llm)), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


async def _ready(value: Any) -> Any:
    return value


class _ByEngine:
    """Routes each request to the LLM configured for its ``engine``."""

    def __init__(self, routes: Mapping[str, Any], default: Any) -> None:
        self.routes = FrozenMap(routes)
        self.default = default
        members = [*self.routes.values(), *([default] if default is not None else [])]
        self.is_async = any(is_async_llm(llm) for llm in members)

    @property
    def identity(self) -> FrozenMap[str, Any]:
        """The identities of every route (and the default)."""
        routes = FrozenMap({engine: identity_of(llm) for engine, llm in self.routes.items()})
        default = identity_of(self.default) if self.default is not None else None
        return FrozenMap({"router": "by_engine", "routes": routes, "default": default})

    def _pick(self, request: LLMRequest) -> Any:
        llm = self.routes.get(request.engine, self.default)
        if llm is None:
            known = ", ".join(map(repr, self.routes))
            raise LLMFailure(
                LLMError(
                    "unrouted",
                    f"no LLM for engine {request.engine!r}; by_engine routes {known}: add it or pass default=",
                )
            )
        return llm

    def __call__(self, request: LLMRequest) -> Any:
        if not self.is_async:
            return self._pick(request)(request)
        try:
            result = self._pick(request)(request)
        except LLMFailure as failure:
            return _failed(failure)
        return result if inspect.isawaitable(result) else _ready(result)

    def __repr__(self) -> str:
        routes = ", ".join(f"{engine!r}: {llm!r}" for engine, llm in self.routes.items())
        return f"by_engine({{{routes}}}, default={self.default!r})"


async def _failed(failure: LLMFailure) -> Any:
    raise failure


def by_engine(routes: Mapping[str, Any], *, default: Any = None) -> Any:
    """An LLM that sends each request to ``routes[request.engine]``.

    The paper's setting is a small model for forward calls and a strong one for
    backward and optimizer calls. The router is async when any route is async
    (sync otherwise, so `run_sync` needs no event loop).

    Args:
        routes: Engine name ("forward", "backward", "optimizer") to LLM.
        default: Answers engines missing from `routes`; without it such a request
            fails with ``LLMError(kind="unrouted")``.

    Raises:
        ValueError: When `routes` is empty and there is no default, or an entry is not callable.

    Examples:
        >>> from semgrad.core import LLMRequest, Message
        >>> llm = by_engine({"forward": lambda r: "small"}, default=lambda r: "strong")
        >>> r = LLMRequest((Message("user", "hi"),))
        >>> llm(r), llm(LLMRequest((Message("user", "hi"),), engine="optimizer"))
        ('small', 'strong')
    """
    if not routes and default is None:
        raise ValueError("by_engine needs at least one route or a default LLM")
    for engine, llm in [*routes.items(), *([("default", default)] if default is not None else [])]:
        if not callable(llm):
            raise ValueError(f"by_engine: the LLM for {engine!r} is not callable ({type(llm).__name__})")
    return _ByEngine(routes, default)
