"""What the HTTP providers' codecs share: the request value, the error table, and the decoding of a reply.

A provider is a pure *codec* (the h11/httpcore split): `Codec.encode` turns an `LLMRequest` into
an `HttpRequest` value (method, path under the base URL, headers without the key, JSON body), and
`Codec.decode` turns what came back -- a status, headers and the body's bytes -- into a
``Result[LLMResponse, LLMError]``. Neither does I/O, reads a clock or holds a key; one transport
(`HTTPBackend` in ``_http``) sends the request, puts the key in, keeps the deadlines and scrubs what
it raises. `decode` never raises, whatever the status, headers and body: every outcome is data.

=================  ==============  ===========================
what came back     kind            retryable
=================  ==============  ===========================
HTTP 401, 403      auth            no
HTTP 400/413/422   bad_request     no (other 4xx too)
HTTP 3xx           bad_request     no (names where it redirects)
HTTP 408           timeout         yes
HTTP 409           conflict        yes
HTTP 429           rate_limit      yes, with ``retry_after``
HTTP 5xx           server          yes
200 with an error  by its code     as its code (else bad_request)
unreadable reply   malformed       yes (not JSON, or nested too deeply)
no text at all     malformed       yes (whitespace alone is no text)
cap hit, no text   truncated       no
refusal, filter    refused         no
=================  ==============  ===========================

(The transport adds ``timeout`` and ``connection``: no reply in time, or none at all.)

An error status keeps its kind whatever its body holds: a 503 whose body
cannot be read is still a retryable ``server`` error. A provider's
``x-should-retry: true`` or ``false`` header (OpenAI's and Anthropic's APIs send
one) overrides the table's retryability, as their own SDKs let it.

A reply without text (none, or whitespace alone) is a failed call, never an
empty answer: scored as one, every sample would look like a wrong answer (and a
cache would keep it). Why it has none says which: it stopped at its
output-token cap (a reasoning model can spend the whole cap on reasoning), the
model refused or a content filter stopped it, or it just has none (a server
whose reasoning parser kept the whole reply as reasoning, say).

What a server says is quoted in a message only after it is decoded (JSON's
``\\u`` escapes included) and scrubbed with the ``scrub`` function `decode` is given, and
only then cut short: a cut could leave most of a key, in a form no later scrub knows.
"""

from __future__ import annotations

import codecs
import datetime
import email.utils
import json
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs
from returns.result import Failure, Result, Success

from ..core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse

__all__ = [
    "KEY",
    "Codec",
    "HttpRequest",
    "jsonable",
    "malformed",
    "refused",
    "retry_after_seconds",
    "status_error",
    "truncated",
    "usage_counts",
]

#: Stands for the API key in an `HttpRequest`'s header values; the transport puts the key in its place.
KEY = "<api-key>"

#: How much of a server's text is read before scrubbing, per character kept: scrubbing costs time in the
#: text's length, and a run of the key the margin cuts is still 8 characters or more, or no use to anyone.
_MARGIN = 40


def _unchanged(text: str) -> str:
    return text


def _frozen(value: Mapping[str, str]) -> FrozenMap[str, str]:
    return value if isinstance(value, FrozenMap) else FrozenMap(value)


@attrs.frozen
class HttpRequest:
    """One HTTP request as a value: what a codec encodes and the transport sends.

    Attributes:
        method: The HTTP method (``"POST"``).
        path: Where it goes, under the backend's base URL (``"/chat/completions"``).
        headers: Its headers, but the key: a value holding `KEY` gets the key there, from the transport.
        body: The JSON body, encoded as UTF-8.
    """

    method: str
    path: str
    headers: FrozenMap[str, str] = attrs.field(converter=_frozen)
    body: bytes

    def json(self) -> Any:
        """The body, decoded."""
        return json.loads(self.body)


def encode_json(body: Mapping[str, Any]) -> bytes:
    """`body` as compact UTF-8 JSON (as httpx writes it); an LLMFailure when it cannot be: NaN, a lone surrogate,
    a value JSON has no form for."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except (ValueError, TypeError, UnicodeError, RecursionError) as exc:
        message = f"the request's body cannot be encoded as JSON ({type(exc).__name__}); check its options"
    raise LLMFailure(LLMError("bad_request", message))


@attrs.frozen
class Codec:
    """A provider's wire format: `encode` a request, `decode` a reply. Pure; subclasses say how.

    Subclasses set `path` and `key_env` and implement `headers`, `body` and `parse`.

    Attributes:
        model: The model to ask when a request's engine has none in `models`.
        models: A model per engine.
        keyed: Whether the transport has a key to send (without one no key header is written).
    """

    model: str
    models: FrozenMap[str, str] = attrs.field(factory=FrozenMap, converter=_frozen)
    keyed: bool = False

    path: ClassVar[str] = "/"
    key_env: ClassVar[str] = "API_KEY"

    def model_for(self, request: LLMRequest) -> str:
        """The model for `request`'s engine (``models[engine]``, else `model`)."""
        model: str = self.models.get(request.engine, self.model)
        return model

    def settings(self) -> FrozenMap[str, Any]:
        """What the codec itself puts into every request besides the model (none here; subclasses add theirs)."""
        return FrozenMap()

    def headers(self) -> dict[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def body(self, request: LLMRequest, model: str) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def parse(self, data: Any, model: str, scrub: Callable[[str], str] = _unchanged) -> LLMResponse:
        """The reply in a 200's decoded JSON `data`; raises LLMFailure (or a lookup error, read as malformed)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def encode(self, request: LLMRequest) -> HttpRequest:
        """The HTTP request for `request`; raises LLMFailure (``bad_request``) for one that cannot be sent."""
        body = encode_json(self.body(request, self.model_for(request)))
        return HttpRequest("POST", self.path, {"Content-Type": "application/json", **self.headers()}, body)

    def decode(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        *,
        model: str | None = None,
        scrub: Callable[[str], str] = _unchanged,
    ) -> Result[LLMResponse, LLMError]:
        """The reply, or the error, that a server's answer holds; never raises.

        Args:
            status: The HTTP status.
            headers: The response's headers (any case).
            body: The response's body.
            model: The model asked (the reply's when it names none); default `model`.
            scrub: Applied to what the server says before a message quotes it and cuts it short.
        """
        try:
            return Success(self._decode(status, headers, body, model or self.model, scrub))
        except LLMFailure as failure:
            return Failure(failure.error)

    def _decode(
        self, status: int, headers: Mapping[str, str], body: bytes, model: str, scrub: Callable[[str], str]
    ) -> LLMResponse:
        lowered = {str(name).lower(): str(value) for name, value in headers.items()}
        if 300 <= status < 400:  # not followed: a POST's body and key go only where base_url says
            where = lowered.get("location")
            message = f"the server redirects (HTTP {status}) to {where!r}: set base_url to where it points"
            raise LLMFailure(LLMError("bad_request", message))
        if status >= 400:
            text = _text(body, lowered)
            raise LLMFailure(status_error(status, lowered, text, key_env=self.key_env, has_key=self.keyed, scrub=scrub))
        problem = None
        try:
            data = json.loads(body)
        except ValueError as exc:
            problem = f"the reply is not JSON ({exc}); a proxy page or a cut connection?"
        except RecursionError:  # e.g. 200,000 '[': as unreadable as a body that is not JSON
            problem = "the reply's JSON is nested too deeply to read; a broken or hostile server?"
        if problem is not None:
            raise malformed(problem)
        error = data.get("error") if isinstance(data, dict) and not {"choices", "content"} & set(data) else None
        if error:  # a 200 that carries an error (OpenRouter after a reply has begun; LM Studio off its routes)
            code = error.get("code") if isinstance(error, dict) else None
            text = _text(body, lowered)
            if type(code) is int and 400 <= code <= 599:
                found = status_error(code, {}, text, key_env=self.key_env, has_key=self.keyed, scrub=scrub)
            else:
                said = _provider_message(text, scrub)
                found = LLMError("bad_request", f"the server answered with an error ({said}); check base_url and model")
            raise LLMFailure(found)
        try:
            return self.parse(data, model, scrub)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError, RecursionError) as exc:
            problem = f"the reply lacks an expected field ({type(exc).__name__}: {_shown(str(exc), 200, scrub)})"
        raise malformed(problem)


def _text(body: bytes, headers: Mapping[str, str]) -> str:
    """`body` as text, in the charset its Content-Type names (else UTF-8), undecodable bytes replaced."""
    charset = "utf-8"
    for param in headers.get("content-type", "").split(";")[1:]:
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip('"') or charset
    try:
        codecs.lookup(charset)
    except LookupError:
        charset = "utf-8"
    return body.decode(charset, "replace")


def _shown(text: str, limit: int, scrub: Callable[[str], str]) -> str:
    """At most `limit` characters of `text`, scrubbed first: a cut could leave most of a key that scrubbing knows."""
    return scrub(text[: _MARGIN * limit])[:limit]


def _provider_message(body: str, scrub: Callable[[str], str] = _unchanged) -> str:
    """What the server said: its JSON error's message (decoded, scrubbed, cut to 500), else the body's start."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to decode: the body's start says it
        return _shown(body.strip(), 300, scrub)
    error = data.get("error") if isinstance(data, dict) else None
    try:
        if isinstance(error, dict) and error.get("message"):
            return _shown(str(error["message"]), 500, scrub)
    except (RecursionError, ValueError):  # a message nested too deeply (or an int too long) to show
        pass
    if isinstance(error, str):
        return _shown(error, 500, scrub)
    return _shown(body.strip(), 300, scrub)


def status_error(
    status: int,
    headers: Mapping[str, str],
    body: str,
    *,
    key_env: str,
    has_key: bool,
    scrub: Callable[[str], str] = _unchanged,
) -> LLMError:
    """The `LLMError` for an HTTP error status, with what to do about it; the provider's ``x-should-retry``
    header, when it sends one, decides whether it is retryable.

    Examples:
        >>> status_error(409, {}, "", key_env="K", has_key=True).retryable
        True
        >>> status_error(500, {"x-should-retry": "false"}, "", key_env="K", has_key=True).retryable
        False
    """
    error = _status_error(status, headers, _provider_message(body, scrub), key_env=key_env, has_key=has_key)
    should = {k.lower(): v for k, v in headers.items()}.get("x-should-retry", "").strip().lower()
    if should in ("true", "false") and (should == "true") != error.retryable:
        return attrs.evolve(error, retryable=should == "true")
    return error


def _status_error(status: int, headers: Mapping[str, str], said: str, *, key_env: str, has_key: bool) -> LLMError:
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


def refused(model: str, why: str, scrub: Callable[[str], str] = _unchanged) -> LLMFailure:
    """The failure for a reply the model refused to give, or a content filter stopped; not retryable.

    Examples:
        >>> error = refused("m", "I cannot help with that.").error
        >>> error.kind, error.retryable, error.message
        ('refused', False, 'm refused to answer: I cannot help with that.')
    """
    return LLMFailure(LLMError("refused", _shown(f"{model} refused to answer: {why}", 500, scrub)))


def malformed(message: str) -> LLMFailure:
    """The failure for a reply that is not what the provider's API promises."""
    return LLMFailure(LLMError("malformed", message, retryable=True))
