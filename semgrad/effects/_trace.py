"""Tracing: one OpenTelemetry span per LLM call, following the GenAI semantic conventions.

`traced` is a middleware like the others (the wrapped LLM first, an async LLM with the
same ``identity`` back). Each call opens a ``chat {model}`` client span with the
conventions' ``gen_ai.*`` attributes and semgrad's own (``semgrad.purpose``,
``semgrad.node``, ``semgrad.sample``, ``semgrad.cache_hit``, ``semgrad.memo_hit``). A
failed call sets ``error.type`` (the `LLMError` kind) and the span's status to ERROR and
is raised on unchanged. Prompts and replies go into a span only when asked
(``capture_content=True``); a span never holds an error's message, the backend's identity
beyond its provider and model, nor anything else a key could hide in.

``opentelemetry-api`` is optional (``pip install 'semgrad[otel]'``): it is imported when
`traced` is called, never when semgrad is.
"""

from __future__ import annotations

import contextvars
import json
import math
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from ..core import LLMFailure, LLMRequest, LLMResponse
from ._accounting import answered_by
from ._routing import Middleware, call, identity_of

__all__ = ["FitSpans", "traced"]

_INSTRUMENTATION = "semgrad"

#: The iteration of `fit` whose phase is running (its `FitSpans` sets it), for the call spans' ``semgrad.iteration``.
_ITERATION: contextvars.ContextVar[int | None] = contextvars.ContextVar("semgrad_iteration", default=None)

# What some `LLMError` kinds say about how the reply ended, in the conventions' finish reasons.
_FINISH_BY_KIND = {"truncated": "length", "refused": "content_filter"}


def _opentelemetry(who: str) -> Any:
    """``opentelemetry.trace``, imported now; an ImportError naming the extra when it is not installed."""
    try:
        from opentelemetry import trace
    except ImportError:
        raise ImportError(
            f"{who} needs opentelemetry-api (semgrad's otel extra): pip install opentelemetry-api, "
            "or pip install -e '.[otel]' in semgrad's checkout"
        ) from None
    return trace


def _number(value: Any) -> float | int | None:
    """`value` if it is a finite int or float (not a bool), else None: span attributes stay JSON-safe."""
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return value
    return None


def _provider_and_model(llm: Any, request: LLMRequest) -> tuple[str, str]:
    """The provider and the model configured for `request`'s engine, from `llm`'s identity (nothing else of it)."""
    identity = identity_of(llm)
    if not isinstance(identity, Mapping):
        return "unknown", ""
    provider = identity.get("provider")
    models = identity.get("models")
    model = (models.get(request.engine) if isinstance(models, Mapping) else None) or identity.get("model")
    return (provider if isinstance(provider, str) and provider else "unknown"), (
        model if isinstance(model, str) else ""
    )


def _request_attributes(request: LLMRequest, provider: str, model: str) -> dict[str, Any]:
    found: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "semgrad.engine": request.engine,
        "semgrad.purpose": request.purpose,
    }
    if model:
        found["gen_ai.request.model"] = model
    options = request.options
    temperature = _number(options.get("temperature"))
    if temperature is not None:
        found["gen_ai.request.temperature"] = temperature
    max_tokens = options.get("max_tokens")
    if type(max_tokens) is int:
        found["gen_ai.request.max_tokens"] = max_tokens
    if request.node is not None:
        found["semgrad.node"] = request.node
    if request.sample is not None:
        sample = request.sample
        found["semgrad.sample"] = sample if type(sample) in (str, int) else str(sample)
    if request.draw:
        found["semgrad.draw"] = request.draw
    iteration = _ITERATION.get()
    if iteration is not None:
        found["semgrad.iteration"] = iteration
    return found


def _messages_json(request: LLMRequest) -> str:
    return json.dumps([{"role": m.role, "content": m.content} for m in request.messages], ensure_ascii=False)


#: A reply's usage keys and the span attributes they go into (the GenAI conventions' names; cached prompt
#: tokens as ``gen_ai.usage.cache_read.input_tokens`` and ``gen_ai.usage.cache_creation.input_tokens``).
_USAGE_ATTRIBUTES = (
    ("input_tokens", "gen_ai.usage.input_tokens"),
    ("output_tokens", "gen_ai.usage.output_tokens"),
    ("cached_input_tokens", "gen_ai.usage.cache_read.input_tokens"),
    ("cache_write_tokens", "gen_ai.usage.cache_creation.input_tokens"),
)


class _Traced(Middleware):
    """An async LLM that opens one span around each call of its inner LLM."""

    def __init__(self, inner: Any, tracer: Any, capture_content: bool, status: Any) -> None:
        self.inner = inner
        self.tracer = tracer
        self.capture_content = capture_content
        self._status = status  # (Status, StatusCode, SpanKind) from opentelemetry.trace

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        status, code, kind = self._status
        provider, model = _provider_and_model(self.inner, request)
        attributes = _request_attributes(request, provider, model)
        if self.capture_content:
            attributes["gen_ai.input.messages"] = _messages_json(request)
        name = f"chat {model}" if model else "chat"
        with self.tracer.start_as_current_span(
            name, kind=kind, attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                response = await call(self.inner, request)
            except BaseException as exc:  # a cancelled call too: the span says how it ended, then it goes on up
                error_type = exc.error.kind if isinstance(exc, LLMFailure) else type(exc).__name__
                span.set_attribute("error.type", error_type)
                finish = _FINISH_BY_KIND.get(error_type)
                if finish is not None:
                    span.set_attribute("gen_ai.response.finish_reasons", (finish,))
                span.set_status(status(code.ERROR, error_type))
                raise
            self._record(span, response)
            return response

    def _record(self, span: Any, response: LLMResponse) -> None:
        answered = answered_by(response)
        span.set_attribute("semgrad.cache_hit", answered == "cache")
        span.set_attribute("semgrad.memo_hit", answered == "memo")
        if response.model:
            span.set_attribute("gen_ai.response.model", response.model)
        if answered is None:  # a hit made no call: its stored usage was billed once, by the call that made it
            for key, name in _USAGE_ATTRIBUTES:
                tokens = response.usage.get(key)
                if type(tokens) is int:
                    span.set_attribute(name, tokens)
        finish = getattr(response, "finish_reason", None)
        if isinstance(finish, str) and finish:
            span.set_attribute("gen_ai.response.finish_reasons", (finish,))
        if self.capture_content:
            span.set_attribute(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "content": response.text}], ensure_ascii=False),
            )

    def __repr__(self) -> str:
        return f"traced({self.inner!r}, capture_content={self.capture_content!r})"


def traced(llm: Any, tracer: Any = None, *, capture_content: bool = False) -> Any:
    """Wrap `llm` so each call is an OpenTelemetry span following the GenAI semantic conventions.

    Each call opens a client span named ``chat {model}`` with ``gen_ai.operation.name``
    ("chat"), ``gen_ai.provider.name`` and ``gen_ai.request.model`` (from the backend's
    identity; "unknown" and none for an LLM without one), ``gen_ai.request.temperature``
    and ``gen_ai.request.max_tokens`` (from the request's options), and on a reply
    ``gen_ai.response.model``, ``gen_ai.usage.input_tokens`` and
    ``gen_ai.usage.output_tokens`` (left out for a cache or memo hit, which made no
    call). semgrad's own: ``semgrad.engine``, ``semgrad.purpose``, ``semgrad.node``,
    ``semgrad.sample``, ``semgrad.draw`` (when not 0), ``semgrad.cache_hit`` and
    ``semgrad.memo_hit`` (a `cached` or `memoized` below answered it). A failure sets
    ``error.type`` (the `LLMError` kind, or the exception's class name), and
    ``gen_ai.response.finish_reasons`` when the kind says how the reply ended ("length"
    for ``truncated``, "content_filter" for ``refused``); the span's status is ERROR
    and the very same exception is raised on. Error messages are never recorded.

    Put `traced` outside `cached`/`memoized` to see hits, and inside `retrying` for a
    span per attempt (outside it, for one per logical call).

    Args:
        llm: A sync or async LLM.
        tracer: An ``opentelemetry.trace.Tracer``; None takes one named "semgrad" from
            the global tracer provider.
        capture_content: Also record the request's messages (``gen_ai.input.messages``)
            and the reply (``gen_ai.output.messages``) as JSON. Off by default: prompts
            may hold private data.

    Returns:
        An async LLM with the same ``identity`` as `llm`.

    Raises:
        ImportError: When ``opentelemetry-api`` is not installed (the ``otel`` extra).

    Examples:
        >>> import anyio
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        >>> from semgrad.core import LLMRequest, Message
        >>> exporter = InMemorySpanExporter()
        >>> provider = TracerProvider()
        >>> provider.add_span_processor(SimpleSpanProcessor(exporter))
        >>> def answer(request): return LLMResponse("4", {"input_tokens": 5, "output_tokens": 1}, "m")
        >>> llm = traced(answer, provider.get_tracer("example"))
        >>> request = LLMRequest((Message("user", "2+2?"),), purpose="forward", node="answer", sample=3)
        >>> anyio.run(llm, request).text
        '4'
        >>> [span] = exporter.get_finished_spans()
        >>> a = span.attributes
        >>> a["gen_ai.operation.name"], a["gen_ai.usage.input_tokens"], a["semgrad.node"], a["semgrad.sample"]
        ('chat', 5, 'answer', 3)
        >>> any("2+2?" in str(value) for value in a.values())  # no prompt text without capture_content=True
        False
    """
    if not callable(llm):
        raise TypeError(f"traced needs an LLM (a callable), got {type(llm).__name__}")
    trace = _opentelemetry("semgrad.effects.traced")
    if tracer is None:
        tracer = trace.get_tracer(_INSTRUMENTATION)
    return _Traced(llm, tracer, bool(capture_content), (trace.Status, trace.StatusCode, trace.SpanKind.CLIENT))


class FitSpans:
    """`fit`'s spans, when it is given a tracer: ``semgrad.fit`` around the run, ``semgrad.iteration`` around each
    iteration (0: scoring the initial params) and ``semgrad.phase`` around each phase, opened and closed as `fit`
    reports its phases (the moments ``on_progress`` hears of). Each is the current span while it is open, so the
    call spans of a `traced` LLM on the same tracer provider nest under their phase, and carry
    ``semgrad.iteration``. Everything here happens once per phase, never per call.
    """

    def __init__(self, tracer: Any, iterations: int, protocol: str) -> None:
        trace = _opentelemetry("fit(tracer=...)")
        from opentelemetry import context

        self._trace, self._context, self._tracer = trace, context, tracer
        self._attributes = {"semgrad.iterations": iterations, "semgrad.protocol": protocol}
        self._open: list[tuple[Any, object]] = []  # (span, context token), outermost first: run, iteration, phase
        self._iteration: int | None = None
        self._iteration_token: contextvars.Token[int | None] | None = None

    def __enter__(self) -> FitSpans:
        self._start("semgrad.fit", self._attributes)
        self._iteration_token = _ITERATION.set(None)
        return self

    def _start(self, name: str, attributes: Mapping[str, Any]) -> None:
        span = self._tracer.start_span(name, attributes=attributes, record_exception=False)
        self._open.append((span, self._context.attach(self._trace.set_span_in_context(span))))

    def _end(self, keep: int) -> None:
        """End the open spans beyond the first `keep`, innermost first."""
        while len(self._open) > keep:
            span, token = self._open.pop()
            self._context.detach(token)
            span.end()

    def phase(self, iteration: int, phase: str, score: float | None = None) -> None:
        """`phase` of `iteration` begins (or, for ``done``, the iteration ended with training score `score`)."""
        self._end(2 if self._iteration == iteration else 1)
        if phase == "done":
            if len(self._open) > 1 and _number(score) is not None:
                self._open[1][0].set_attribute("semgrad.score", score)
            self._end(1)
            self._iteration = None
            return
        if self._iteration != iteration:
            self._start("semgrad.iteration", {"semgrad.iteration": iteration})
            self._iteration = iteration
        _ITERATION.set(iteration)
        self._start("semgrad.phase", {"semgrad.iteration": iteration, "semgrad.phase": phase})

    def finished(self, stopped: str | None) -> None:
        """The run ended; `stopped` is why it stopped early (a budget's kind), None when it ran to the end."""
        if stopped is not None and self._open:
            self._open[0][0].set_attribute("semgrad.stopped", stopped)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if exc is not None and self._open:
            error_type = type(exc).__name__
            self._open[0][0].set_attribute("error.type", error_type)
            self._open[0][0].set_status(self._trace.Status(self._trace.StatusCode.ERROR, error_type))
        self._end(0)
        if self._iteration_token is not None:
            _ITERATION.reset(self._iteration_token)
