"""The one transport under the HTTP providers' codecs: the I/O, the key, the deadlines and the scrubbing.

A provider is a pure codec (``_codec``: `Codec.encode` a request into an `HttpRequest`,
`Codec.decode` a status, headers and body into a ``Result``); `HTTPBackend` is what sends it
over httpx. httpx is imported inside functions only, so importing this module (and
``semgrad.backends``) never imports it. Every failure becomes an
``LLMFailure(LLMError(kind, message, retryable))``: the codec's table (see ``_codec``), and
the transport's own:

=================  ==============  ===========================
what happened      kind            retryable
=================  ==============  ===========================
client timeout     timeout         yes (a read, or the deadline)
no connection      connection      yes
a bad base_url     bad_request     no
=================  ==============  ===========================

Each call has a total deadline (``deadline=``; by default `DEFAULT_DEADLINE`, 600 s, or the
``timeout`` when that is longer): the ``timeout`` bounds each read only, and a server that
drips a byte every half second would hold a call for ever.

API keys (and credentials in the URL: ``https://user:password@host/v1``) live in
a `Secret`, which never shows its value in a repr, a string, or a pickle; the codec
only ever sees a stand-in (`KEY`), and every message is scrubbed of both before it is
raised (what the server said, by the codec, after decoding it and before cutting it short).
"""

from __future__ import annotations

import math
import os
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from returns.result import Success

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse
from ._codec import (
    KEY,
    Codec,
    HttpRequest,
    jsonable,
    malformed,
    refused,
    retry_after_seconds,
    status_error,
    truncated,
    usage_counts,
)
from ._key_scrub import Secret, check_key

if TYPE_CHECKING:
    import ssl

    import httpx

__all__ = [
    "DEFAULT_DEADLINE",
    "HTTPBackend",
    "HttpRequest",
    "Secret",
    "check_key",
    "jsonable",
    "malformed",
    "refused",
    "retry_after_seconds",
    "setting",
    "status_error",
    "truncated",
    "usage_counts",
]

#: Seconds a call may take as a whole when a backend is built without ``deadline=`` (or a longer
#: ``timeout``, when one is given): as long as OpenAI's and Anthropic's own SDKs wait. The
#: ``timeout`` bounds each read only, so without it a server that sends a byte every half
#: second would hold a call for ever.
DEFAULT_DEADLINE = 600.0


def setting(value: str | None, env: str, default: str | None = None) -> str | None:
    """`value` if given, else the environment variable `env`, else `default`."""
    if value:
        return value
    return os.environ.get(env) or default


def _transport_error(exc: Exception, url: str) -> LLMError:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return LLMError("timeout", f"no reply from {url} in time ({type(exc).__name__})", retryable=True)
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.InvalidURL)):
        return LLMError("bad_request", f"cannot send to {url} ({type(exc).__name__}: {exc}); check base_url")
    return LLMError("connection", f"no connection to {url} ({type(exc).__name__}: {exc})", retryable=True)


def _userinfo(base_url: str) -> str | None:
    """The credentials a URL carries before its host (``user:password`` in ``https://user:password@host``), if any."""
    try:
        netloc = urllib.parse.urlsplit(base_url).netloc
    except ValueError:  # a base_url that does not parse: its first call fails and says so
        return None
    return netloc.rpartition("@")[0] or None


def _without_userinfo(base_url: str) -> str:
    """`base_url` without the credentials before its host: they go in an ``auth=``, which httpx never logs (its
    log line of every request shows the URL, credentials and all)."""
    try:
        parts = urllib.parse.urlsplit(base_url)
    except ValueError:
        return base_url
    if "@" not in parts.netloc:
        return base_url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


class HTTPBackend:
    """An async LLM over one JSON HTTP endpoint: a `Codec` for the wire format, this for the I/O.

    Subclasses set `provider`, `factory` and `key_env` and build their `codec`. Each call
    opens its own connection unless the backend is entered with ``async with backend:``,
    which shares one connection pool until the block ends.
    """

    is_async = True
    provider = "http"
    factory = "HTTPBackend"
    key_env = "API_KEY"

    def __init__(
        self,
        *,
        base_url: str,
        codec: Codec,
        api_key: str | None,
        timeout: float,
        deadline: float | None = None,
    ) -> None:
        if not codec.model:
            raise ValueError(f"{type(self).__name__} needs a model name (model=...)")
        if not timeout > 0:  # NaN too
            raise ValueError(f"timeout must be positive seconds, got {timeout}")
        if deadline is not None and not (type(deadline) in (int, float) and 0 < deadline < math.inf):
            raise ValueError(f"deadline must be positive seconds (or None), got {deadline!r}")
        #: Seconds for each call as a whole (each attempt, under `retrying`): `DEFAULT_DEADLINE`, or
        #: `timeout` when that is longer, unless ``deadline=`` says otherwise.
        self.deadline = max(DEFAULT_DEADLINE, float(timeout)) if deadline is None else float(deadline)
        self.base_url = base_url.rstrip("/")
        #: Credentials in the URL itself (``https://user:password@host/v1``): sent, never shown.
        self._userinfo = Secret(_userinfo(self.base_url))
        #: Where requests are sent: `base_url` without those credentials, which go as ``auth=``.
        self._target = _without_userinfo(self.base_url)
        self.timeout = float(timeout)
        check_key(api_key, self.key_env)
        self._key = Secret(api_key)
        #: The wire format: pure, and told only whether there is a key (never the key).
        self.codec = attrs.evolve(codec, keyed=bool(api_key))
        self._client: httpx.AsyncClient | None = None
        self._tls: ssl.SSLContext | None = None

    @property
    def model(self) -> str:
        """The model asked when a request's engine has none in `models`."""
        return self.codec.model

    @property
    def models(self) -> FrozenMap[str, str]:
        """A model per engine."""
        return self.codec.models

    @property
    def identity(self) -> FrozenMap[str, Any]:
        """Provider, endpoint, model(s) and `settings`: what the replies depend on besides the request (never the key).

        Together with the request's key this covers everything a request body holds,
        so a cache never serves a reply made with other settings.
        """
        endpoint = self._userinfo.scrub(self.url())
        found = {"provider": self.provider, "endpoint": endpoint, "model": self.model, "models": self.models}
        settings = self.settings()
        return FrozenMap({**found, "settings": settings} if settings else found)

    def scrub(self, text: str) -> str:
        """`text` without the key or the URL's credentials (see `Secret.scrub`)."""
        return self._userinfo.scrub(self._key.scrub(text))

    def settings(self) -> FrozenMap[str, Any]:
        """What the codec puts into every request besides the model (see `Codec.settings`)."""
        return self.codec.settings()

    def model_for(self, request: LLMRequest) -> str:
        """The model for `request`'s engine (``models[engine]``, else `model`)."""
        return self.codec.model_for(request)

    def url(self) -> str:
        """Where requests go: the base URL and the codec's path."""
        return self.base_url + self.codec.path

    def headers(self) -> dict[str, str]:
        """The codec's headers with the key in place of its stand-in (`KEY`); never shown, never logged."""
        key = self._key.reveal() or ""
        return {name: value.replace(KEY, key) for name, value in self.codec.headers().items()}

    def body(self, request: LLMRequest, model: str) -> dict[str, Any]:
        """The JSON body the codec writes for `request` and `model`."""
        return self.codec.body(request, model)

    def parse(self, data: Any, model: str) -> LLMResponse:
        """The reply in a 200's decoded JSON (see `Codec.parse`), scrubbed as a call would be."""
        return self.codec.parse(data, model, self.scrub)

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        # Every failure is raised again *outside* the handler that caught it, scrubbed of the key: so its
        # __context__ and __cause__ are None, and no traceback shows the original message or the request's headers.
        error: LLMError
        try:
            sent = self.codec.encode(request)
            with anyio.fail_after(self.deadline):
                status, headers, content = await self._send(sent)
            reply = self.codec.decode(status, headers, content, model=self.model_for(request), scrub=self.scrub)
            if isinstance(reply, Success):
                response: LLMResponse = reply.unwrap()
                return response
            error = reply.failure()
        except LLMFailure as failure:
            error = failure.error
        except TimeoutError:  # only `fail_after`'s: httpx's own timeouts are LLMFailures already
            error = LLMError("timeout", f"no whole reply within the deadline of {self.deadline:g} s", retryable=True)
        raise LLMFailure(attrs.evolve(error, message=self.scrub(error.message)))

    async def _send(self, sent: HttpRequest) -> tuple[int, Mapping[str, str], bytes]:
        """Send `sent` with the key put in; its status, headers and whole body, or an LLMFailure."""
        import httpx

        url = self.base_url + sent.path  # as messages name it (scrubbed of its credentials)
        error: LLMError | None = None
        try:
            headers = {name: value.replace(KEY, self._key.reveal() or "") for name, value in sent.headers.items()}
            user, _, password = (self._userinfo.reveal() or "").partition(":")
            auth = (urllib.parse.unquote(user), urllib.parse.unquote(password)) if self._userinfo else None
            target = self._target + sent.path
            if self._client is not None:
                response = await self._client.request(
                    sent.method, target, content=sent.body, headers=headers, auth=auth
                )
            else:
                async with self._new_client() as client:
                    response = await client.request(sent.method, target, content=sent.body, headers=headers, auth=auth)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            error = _transport_error(exc, url)
        except (UnicodeError, ValueError, TypeError) as exc:  # a header httpx cannot encode: say what, not the value
            error = LLMError(
                "bad_request", f"cannot send to {url}: a header or the body cannot be encoded ({type(exc).__name__})"
            )
        except ImportError as exc:  # a proxy setting (ALL_PROXY=socks5://...) whose transport is not installed
            error = LLMError("bad_request", f"cannot send to {url}: {exc}")
        if error is not None:
            raise LLMFailure(error)
        return response.status_code, response.headers, response.content

    def _new_client(self) -> httpx.AsyncClient:
        import httpx

        if self._tls is None:
            # Loading the CA bundle costs ~50 ms: do it once per backend, and not at all
            # for a plain-HTTP endpoint (a local server), which never uses TLS.
            self._tls = httpx.create_ssl_context(verify=self.base_url[:8].lower() == "https://")
        # No cap on connections: the callers bound the calls in flight (`limited`, a runner's
        # max_concurrency), and httpx's 100 made call 101 wait for a connection, on its timeout.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        return httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), verify=self._tls, limits=limits)

    async def __aenter__(self) -> HTTPBackend:
        if self._client is not None:
            raise RuntimeError(f"{self!r} is already entered; enter it once")
        self._client = self._new_client()
        await self._client.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.__aexit__(*exc_info)

    def __repr__(self) -> str:
        models = f", models={dict(self.models)!r}" if self.models else ""
        shown = self._userinfo.scrub(self.base_url)
        return f"{self.factory}(base_url={shown!r}, model={self.model!r}{models}, api_key={self._key!r})"
