"""What the HTTP backends share: configuration, secrets, the POST, and error mapping.

httpx is imported inside functions only, so importing this module (and
``semgrad.backends``) never imports it. Every failure becomes an
``LLMFailure(LLMError(kind, message, retryable))``:

=================  ==============  ===========================
what happened      kind            retryable
=================  ==============  ===========================
HTTP 401, 403      auth            no
HTTP 400/413/422   bad_request     no (other 4xx too)
HTTP 3xx           bad_request     no (names where it redirects)
HTTP 408           timeout         yes
HTTP 409           conflict        yes
HTTP 429           rate_limit      yes, with ``retry_after``
HTTP 5xx           server          yes
200 with an error  by its code     as its code (else bad_request)
client timeout     timeout         yes
no connection      connection      yes
unreadable reply   malformed       yes (not JSON, or nested too deeply)
no text at all     malformed       yes (whitespace alone is no text)
cap hit, no text   truncated       no
refusal, filter    refused         no
=================  ==============  ===========================

An error status keeps its kind whatever its body holds: a 503 whose body
cannot be read is still a retryable ``server`` error.

A provider's ``x-should-retry: true`` or ``false`` header (OpenAI's and
Anthropic's APIs send one) overrides the table's retryability, as their own
SDKs let it.

A reply without text (none, or whitespace alone) is a failed call, never an
empty answer: scored as one, every sample would look like a wrong answer (and a
cache would keep it). Why it has none says which: it stopped at its
output-token cap (a reasoning model can spend the whole cap on reasoning), the
model refused or a content filter stopped it, or it just has none (a server
whose reasoning parser kept the whole reply as reasoning, say).

API keys (and credentials in the URL: ``https://user:password@host/v1``) live in
a `Secret`, which never shows its value in a repr, a string,
or a pickle, and every message is scrubbed of the key before it is raised (and
what the server said, before it is cut short: a cut could leave most of the key).
"""

from __future__ import annotations

import base64
import datetime
import email.utils
import json
import math
import os
import time
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse

if TYPE_CHECKING:
    import ssl

    import httpx

__all__ = [
    "HTTPBackend",
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


class Secret:
    """A credential that never shows itself.

    Examples:
        >>> key = Secret("sk-live-123")
        >>> key, str(key), f"{key}", bool(key), key.reveal()
        (Secret('***'), '***', '***', True, 'sk-live-123')
    """

    __slots__ = ("_forms", "_value")

    def __init__(self, value: str | None) -> None:
        self._value = value or None
        self._forms = _forms(self._value) if self._value else ()

    def reveal(self) -> str | None:
        """The credential itself; use it only to build a request header."""
        return self._value

    def scrub(self, text: str) -> str:
        r"""`text` with every form of the credential replaced by ``***``: as it is, stripped, and escaped
        the ways messages show it (repr, JSON, URL encoding, bytes, base64).

        Examples:
            >>> Secret("sk-a/b\r").scrub("key sk-a/b\\r, sk-a%2Fb%0D, sk-a/b.")
            'key ***, ***, ***.'
        """
        for form in self._forms:
            text = text.replace(form, "***")
        return text

    def __bool__(self) -> bool:
        return self._value is not None

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret(None)"

    def __str__(self) -> str:
        return "***" if self._value else ""

    def __format__(self, spec: str) -> str:
        return str(self)

    def __reduce__(self) -> Any:
        if self._value:
            raise TypeError("an API key is not pickled; build the backend again where it is needed")
        return (Secret, (None,))


def _forms(value: str) -> tuple[str, ...]:
    """Every way `value` may show in a message, longest first (so no form is left half replaced)."""
    found = set()
    for raw in {value, value.strip()}:
        if not raw:
            continue
        encoded = raw.encode("utf-8", "surrogatepass")
        found |= {
            raw,
            repr(raw)[1:-1],
            ascii(raw)[1:-1],
            json.dumps(raw)[1:-1],
            json.dumps(raw, ensure_ascii=False)[1:-1],
            urllib.parse.quote(raw, safe=""),
            urllib.parse.quote(raw),
            urllib.parse.quote_plus(raw),
            repr(encoded)[2:-1],
            base64.b64encode(encoded).decode("ascii").rstrip("="),
            base64.urlsafe_b64encode(encoded).decode("ascii").rstrip("="),
        }
    return tuple(sorted((f for f in found if f), key=len, reverse=True))


def check_key(value: str | None, source: str) -> None:
    r"""Refuse a key with whitespace, control or non-ASCII characters in one line that never shows the key.

    A key read from a CRLF ``.env`` file ends in ``\r``: sent as a header it breaks
    the request, and the error would carry it.

    Examples:
        >>> check_key("sk-live-123", "OPENAI_API_KEY")
        >>> check_key("sk-live-123\r", "KEY")
        Traceback (most recent call last):
        ...
        ValueError: the API key from KEY or api_key= ends with a carriage return (\r; a CRLF .env file?): remove it
    """
    if not value:
        return
    for position, char in enumerate(value):
        if char.isascii() and char.isprintable() and not char.isspace():
            continue
        where = "starts" if position == 0 else "ends" if position == len(value) - 1 else "contains"
        if char in _NAMED:
            what = _NAMED[char]
        elif char.isspace():
            what = "a whitespace character"
        elif not char.isascii():
            what = "a non-ASCII character"
        else:
            what = "a control character"
        place = f"{where} {what}" if where == "contains" else f"{where} with {what}"
        raise ValueError(f"the API key from {source} or api_key= {place}: remove it")


_NAMED = {
    "\r": "a carriage return (\\r; a CRLF .env file?)",
    "\n": "a line feed (\\n)",
    "\t": "a tab",
    " ": "a space",
}


def setting(value: str | None, env: str, default: str | None = None) -> str | None:
    """`value` if given, else the environment variable `env`, else `default`."""
    if value:
        return value
    return os.environ.get(env) or default


def usage_counts(usage: Any, names: Mapping[str, str]) -> dict[str, int]:
    """``{ours: count}`` from a reply's usage object, for each ``ours -> theirs`` name in `names`
    whose count is a whole number of tokens, 0 or more; any other value (``"n/a"``, ``-500``,
    ``1.5``, ``true``) is left out, as an absent one is: the call's estimate then stands for it
    (a budget keeps it), where the reply -- paid for -- used to fail as malformed, or charge a
    negative count.

    Examples:
        >>> usage_counts({"prompt_tokens": 12, "completion_tokens": "n/a"}, {"input_tokens": "prompt_tokens",
        ...     "output_tokens": "completion_tokens"})
        {'input_tokens': 12}
        >>> usage_counts({"input_tokens": -500, "output_tokens": 3}, {"input_tokens": "input_tokens",
        ...     "output_tokens": "output_tokens"})
        {'output_tokens': 3}
    """
    if not isinstance(usage, Mapping):
        return {}
    found = {}
    for ours, theirs in names.items():
        value = usage.get(theirs)
        if type(value) is float and value.is_integer():
            value = int(value)
        if type(value) is int and 0 <= value <= 2**53:
            found[ours] = value
    return found


def jsonable(value: Any) -> Any:
    """`value` with frozen mappings and tuples turned into dicts and lists, for a JSON body."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    return value


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait, from a ``retry-after-ms`` or ``Retry-After`` header (seconds or an HTTP date).

    Examples:
        >>> retry_after_seconds({"retry-after": "2"})
        2.0
        >>> retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0)
        10.0
        >>> retry_after_seconds({}) is None
        True
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000" or no zone: an HTTP date is in GMT, not in this machine's time zone
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _provider_message(body: str) -> str:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to decode: the body's start says it
        return body.strip()[:300]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:500]
    if isinstance(error, str):
        return error[:500]
    return body.strip()[:300]


def status_error(status: int, headers: Mapping[str, str], body: str, *, key_env: str, has_key: bool) -> LLMError:
    """The `LLMError` for an HTTP error status, with what to do about it; the provider's ``x-should-retry``
    header, when it sends one, decides whether it is retryable.

    Examples:
        >>> status_error(409, {}, "", key_env="K", has_key=True).retryable
        True
        >>> status_error(500, {"x-should-retry": "false"}, "", key_env="K", has_key=True).retryable
        False
    """
    error = _status_error(status, headers, body, key_env=key_env, has_key=has_key)
    should = {k.lower(): v for k, v in headers.items()}.get("x-should-retry", "").strip().lower()
    if should in ("true", "false") and (should == "true") != error.retryable:
        return attrs.evolve(error, retryable=should == "true")
    return error


def _status_error(status: int, headers: Mapping[str, str], body: str, *, key_env: str, has_key: bool) -> LLMError:
    said = _provider_message(body)
    detail = f"HTTP {status}: {said}" if said else f"HTTP {status}"
    if status in (401, 403):
        hint = f"check {key_env} or api_key=" if has_key else f"no API key was sent: set {key_env} or pass api_key="
        return LLMError("auth", f"the server refused the credentials ({detail}); {hint}")
    if status == 408:
        return LLMError("timeout", f"the server timed out ({detail})", retryable=True)
    if status == 409:  # a conflict on the provider's side (a lock timed out): its SDKs retry it
        return LLMError("conflict", f"the server reported a conflict ({detail})", retryable=True)
    if status == 429:
        wait = retry_after_seconds(headers)
        return LLMError("rate_limit", f"rate limited ({detail})", retryable=True, retry_after=wait)
    if status >= 500:
        return LLMError("server", f"server error ({detail})", retryable=True, retry_after=retry_after_seconds(headers))
    if status == 404:
        return LLMError("bad_request", f"not found ({detail}); check base_url and the model name")
    if status == 402:
        return LLMError("bad_request", f"payment required ({detail}); check the account's credit")
    return LLMError("bad_request", f"the server rejected the request ({detail}); too long a prompt or a bad option?")


def _transport_error(exc: Exception, url: str) -> LLMError:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return LLMError("timeout", f"no reply from {url} in time ({type(exc).__name__})", retryable=True)
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.InvalidURL)):
        return LLMError("bad_request", f"cannot send to {url} ({type(exc).__name__}: {exc}); check base_url")
    return LLMError("connection", f"no connection to {url} ({type(exc).__name__}: {exc})", retryable=True)


def truncated(model: str, reasoning_tokens: Any = None) -> LLMFailure:
    """The failure for a reply that stopped at its output-token cap before writing any text.

    Not retryable: the same request stops at the same cap.

    Examples:
        >>> failure = truncated("gpt-5-mini", 1024)
        >>> failure.error.kind, failure.error.retryable
        ('truncated', False)
        >>> print(failure.error.message)  # doctest: +NORMALIZE_WHITESPACE
        gpt-5-mini stopped at the output-token cap before writing any text (1024 reasoning tokens): raise the
        max_tokens option (semgrad run: --max-output-tokens); a reasoning model spends the cap on reasoning first
    """
    spent = f" ({reasoning_tokens} reasoning tokens)" if isinstance(reasoning_tokens, int) and reasoning_tokens else ""
    return LLMFailure(
        LLMError(
            "truncated",
            f"{model} stopped at the output-token cap before writing any text{spent}: raise the "
            "max_tokens option (semgrad run: --max-output-tokens); a reasoning model spends the cap on reasoning first",
        )
    )


def refused(model: str, why: str) -> LLMFailure:
    """The failure for a reply the model refused to give, or a content filter stopped; not retryable.

    Examples:
        >>> error = refused("m", "I cannot help with that.").error
        >>> error.kind, error.retryable, error.message
        ('refused', False, 'm refused to answer: I cannot help with that.')
    """
    return LLMFailure(LLMError("refused", f"{model} refused to answer: {why}"[:500]))


def malformed(message: str) -> LLMFailure:
    """The failure for a reply that is not what the provider's API promises."""
    return LLMFailure(LLMError("malformed", message, retryable=True))


def _userinfo(base_url: str) -> str | None:
    """The credentials a URL carries before its host (``user:password`` in ``https://user:password@host``), if any."""
    try:
        netloc = urllib.parse.urlsplit(base_url).netloc
    except ValueError:  # a base_url that does not parse: its first call fails and says so
        return None
    return netloc.rpartition("@")[0] or None


class HTTPBackend:
    """An async LLM over one JSON HTTP endpoint; subclasses say how to talk to it.

    Subclasses set `provider`, `factory` and `key_env`, and implement `url`,
    `headers`, `body` and `parse` (which gets the decoded JSON and the model
    asked for, the fallback when the reply names none). Each call opens its
    own connection unless the backend is entered with ``async with backend:``,
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
        model: str,
        api_key: str | None,
        timeout: float,
        models: Mapping[str, str] | None,
        deadline: float | None = None,
    ) -> None:
        if not model:
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
        self.model = model
        self.models = FrozenMap(models or {})
        self.timeout = float(timeout)
        check_key(api_key, self.key_env)
        self._key = Secret(api_key)
        self._client: httpx.AsyncClient | None = None
        self._tls: ssl.SSLContext | None = None

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
        """What the backend itself puts into every request besides the model (none here; subclasses add theirs)."""
        return FrozenMap()

    def model_for(self, request: LLMRequest) -> str:
        """The model for `request`'s engine (``models[engine]``, else `model`)."""
        return self.models.get(request.engine, self.model)

    def url(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def headers(self) -> dict[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def body(self, request: LLMRequest, model: str) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def parse(self, data: Any, model: str) -> LLMResponse:  # pragma: no cover - abstract
        raise NotImplementedError

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        # Every failure is raised again *outside* the handler that caught it, scrubbed of the key: so its
        # __context__ and __cause__ are None, and no traceback shows the original message or the request's headers.
        error: LLMError
        try:
            model = self.model_for(request)
            with anyio.fail_after(self.deadline):
                return await self._post(self.body(request, model), model)
        except LLMFailure as failure:
            error = failure.error
        except TimeoutError:  # only `fail_after`'s: httpx's own timeouts are LLMFailures already
            error = LLMError("timeout", f"no whole reply within the deadline of {self.deadline:g} s", retryable=True)
        raise LLMFailure(attrs.evolve(error, message=self.scrub(error.message)))

    async def _post(self, body: dict[str, Any], model: str) -> LLMResponse:
        import httpx

        url = self.url()
        error: LLMError | None = None
        try:
            if self._client is not None:
                response = await self._client.post(url, json=body, headers=self.headers())
            else:
                async with self._new_client() as client:
                    response = await client.post(url, json=body, headers=self.headers())
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
        if 300 <= response.status_code < 400:  # not followed: a POST's body and key go only where base_url says
            where = response.headers.get("location")
            error = LLMError(
                "bad_request",
                f"the server redirects (HTTP {response.status_code}) to {where!r}: set base_url to where it points",
            )
            raise LLMFailure(error)
        if response.status_code >= 400:
            error = status_error(
                response.status_code,
                response.headers,
                self.scrub(response.text),  # before the message is cut short, which could cut the key
                key_env=self.key_env,
                has_key=bool(self._key),
            )
            raise LLMFailure(error)
        return self._read(response, model)

    def _read(self, response: httpx.Response, model: str) -> LLMResponse:
        problem = None
        try:
            data = json.loads(response.content)
        except ValueError as exc:
            problem = f"the reply is not JSON ({exc}); a proxy page or a cut connection?"
        except RecursionError:  # e.g. 200,000 '[': as unreadable as a body that is not JSON
            problem = "the reply's JSON is nested too deeply to read; a broken or hostile server?"
        if problem is not None:
            raise malformed(problem)
        error = data.get("error") if isinstance(data, dict) and not {"choices", "content"} & set(data) else None
        if error:  # a 200 that carries an error (OpenRouter after a reply has begun; LM Studio off its routes)
            code = error.get("code") if isinstance(error, dict) else None
            body = self.scrub(response.text)  # before the message is cut short, which could cut the key
            if type(code) is int and 400 <= code <= 599:
                found = status_error(code, {}, body, key_env=self.key_env, has_key=bool(self._key))
            else:
                said = _provider_message(body)
                found = LLMError("bad_request", f"the server answered with an error ({said}); check base_url and model")
            raise LLMFailure(found)
        try:
            return self.parse(data, model)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            problem = f"the reply lacks an expected field ({type(exc).__name__}: {exc})"
        raise malformed(problem)

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
