"""`traced`: one OpenTelemetry span per call with the GenAI conventions' attributes and semgrad's, errors marked and
raised on unchanged, no prompt text unless asked, never a key; checked with the SDK's in-memory exporter and a
tracer provider of the test's own (never the global one)."""

from __future__ import annotations

import json
import sys

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.core import FrozenMap, LLMError, LLMFailure, LLMRequest, LLMResponse, Message
from semgrad.effects import cached, memoized, traced

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

_KEY = "sk-test-9f8e7d6c5b4a39281706abcdef"
_PROMPT = "What is the capital of Burkina Faso? (secret-prompt-7731)"
_REPLY = "Ouagadougou (secret-reply-4410)"


def _tracing() -> tuple[InMemorySpanExporter, object]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider.get_tracer("test")


class _KeyedBackend:
    """A fake backend given a key, with an identity (provider, endpoint, model; never the key) like the real ones."""

    is_async = True

    def __init__(self, api_key: str, *, fail: LLMError | None = None) -> None:
        self._key = api_key
        self.fail = fail
        self.calls = 0

    @property
    def identity(self) -> FrozenMap[str, object]:
        return FrozenMap({"provider": "fakeai", "endpoint": "http://127.0.0.1:9/v1", "model": "fake-1", "models": {}})

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        if self.fail is not None:
            raise LLMFailure(self.fail)
        return LLMResponse(_REPLY, {"input_tokens": 12, "output_tokens": 3}, "fake-1-2026")


def _request(text: str = _PROMPT, **fields: object) -> LLMRequest:
    base: dict[str, object] = {
        "purpose": "forward",
        "node": "answer",
        "sample": 7,
        "options": {"temperature": 0.0, "max_tokens": 64},
    }
    return LLMRequest((Message("system", "Be brief."), Message("user", text)), **{**base, **fields})


def _strings(span: object) -> list[str]:
    return [json.dumps(value) for value in span.attributes.values()] + [span.name]


def test_one_client_span_per_call_with_the_genai_and_semgrad_attributes():
    """A call through traced makes one CLIENT span 'chat fake-1' with the GenAI request, response and usage
    attributes and semgrad's purpose, node, sample and hit flags, status unset."""
    exporter, tracer = _tracing()
    llm = traced(_KeyedBackend(_KEY), tracer)
    assert anyio.run(llm, _request()).text == _REPLY
    [span] = exporter.get_finished_spans()
    assert (span.name, span.kind, span.status.status_code) == ("chat fake-1", SpanKind.CLIENT, StatusCode.UNSET)
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fakeai",
        "gen_ai.request.model": "fake-1",
        "gen_ai.request.temperature": 0.0,
        "gen_ai.request.max_tokens": 64,
        "gen_ai.response.model": "fake-1-2026",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 3,
        "semgrad.engine": "forward",
        "semgrad.purpose": "forward",
        "semgrad.node": "answer",
        "semgrad.sample": 7,
        "semgrad.cache_hit": False,
        "semgrad.memo_hit": False,
    }
    assert llm.identity == _KeyedBackend(_KEY).identity


def test_a_sync_llm_without_identity_is_traced_too():
    """A plain sync function is traced like an async backend: provider 'unknown', no request model."""
    exporter, tracer = _tracing()
    llm = traced(lambda request: "4", tracer)
    assert anyio.run(llm, _request("2+2?", purpose="evaluate", node=None, sample="s-1")).text == "4"
    [span] = exporter.get_finished_spans()
    assert span.name == "chat"
    assert span.attributes["gen_ai.provider.name"] == "unknown"
    assert "gen_ai.request.model" not in span.attributes
    assert (span.attributes["semgrad.purpose"], span.attributes["semgrad.sample"]) == ("evaluate", "s-1")
    assert "semgrad.node" not in span.attributes


@pytest.mark.parametrize(
    ("error", "finish"),
    [(LLMError("rate_limit", "HTTP 429", retryable=True), None), (LLMError("truncated", "cut"), "length")],
)
def test_a_failed_call_sets_error_type_and_status_error_and_raises_the_same_failure(error, finish):
    """A failing backend's LLMFailure goes on up as the very same exception; its span has error.type = the kind,
    status ERROR, no usage, no error message, and a finish reason only when the kind says how the reply ended."""
    exporter, tracer = _tracing()
    backend = _KeyedBackend(_KEY, fail=error)
    with pytest.raises(LLMFailure) as raised:
        anyio.run(traced(backend, tracer), _request())
    assert raised.value.error is error
    [span] = exporter.get_finished_spans()
    assert span.attributes["error.type"] == error.kind
    assert span.status.status_code == StatusCode.ERROR
    assert "gen_ai.usage.input_tokens" not in span.attributes
    assert span.attributes.get("gen_ai.response.finish_reasons") == ((finish,) if finish else None)
    assert not any(error.message in text for text in _strings(span))
    assert not span.events  # no exception event: its message could carry anything


def test_an_exception_that_is_no_llm_failure_is_typed_by_its_class_and_raised_unchanged():
    """A bug in an LLM (a plain exception) is marked error.type = its class name and re-raised as itself."""
    exporter, tracer = _tracing()
    boom = ZeroDivisionError("division by zero")

    def broken(request):
        raise boom

    with pytest.raises(ZeroDivisionError) as raised:
        anyio.run(traced(broken, tracer), _request())
    assert raised.value is boom
    [span] = exporter.get_finished_spans()
    assert (span.attributes["error.type"], span.status.status_code) == ("ZeroDivisionError", StatusCode.ERROR)


def test_no_prompt_or_reply_text_is_in_a_span_unless_capture_content_is_set():
    """Without capture_content no attribute holds the prompt, the system text or the reply; with it the input
    and output messages are recorded as JSON."""
    exporter, tracer = _tracing()
    anyio.run(traced(_KeyedBackend(_KEY), tracer), _request())
    [span] = exporter.get_finished_spans()
    assert not any(text in s for s in _strings(span) for text in (_PROMPT, "Be brief.", _REPLY, "secret-"))

    exporter, tracer = _tracing()
    anyio.run(traced(_KeyedBackend(_KEY), tracer, capture_content=True), _request())
    [span] = exporter.get_finished_spans()
    assert json.loads(span.attributes["gen_ai.input.messages"]) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": _PROMPT},
    ]
    assert json.loads(span.attributes["gen_ai.output.messages"]) == [{"role": "assistant", "content": _REPLY}]


@pytest.mark.parametrize("capture_content", [False, True])
@pytest.mark.parametrize("fail", [None, LLMError("auth", "bad key")])
def test_a_key_given_to_the_backend_never_appears_in_any_span(capture_content, fail):
    """The key a backend was given is in no span's name or attributes, whether the call succeeds or fails, with
    content captured or not."""
    exporter, tracer = _tracing()
    backend = _KeyedBackend(_KEY, fail=fail)
    try:
        anyio.run(traced(backend, tracer, capture_content=capture_content), _request())
    except LLMFailure:
        pass
    [span] = exporter.get_finished_spans()
    assert not any(_KEY in s or _KEY[3:] in s for s in _strings(span))
    assert not any(_KEY in str(event.attributes) for event in span.events)


def test_cache_and_memo_hits_are_marked_and_bill_no_usage():
    """Outside cached and memoized, a second identical request's span says cache_hit (or memo_hit) and carries no
    usage; the first call's span carries the usage and no hit."""
    for layer, flag in ((lambda llm: cached(llm), "semgrad.cache_hit"), (memoized, "semgrad.memo_hit")):
        exporter, tracer = _tracing()
        llm = traced(layer(_KeyedBackend(_KEY)), tracer)
        for _ in range(2):
            anyio.run(llm, _request())
        first, second = exporter.get_finished_spans()
        assert (first.attributes[flag], second.attributes[flag]) == (False, True)
        assert first.attributes["gen_ai.usage.input_tokens"] == 12
        assert "gen_ai.usage.input_tokens" not in second.attributes


def test_the_tracer_defaults_to_the_global_provider_and_a_missing_api_names_the_extra(monkeypatch):
    """tracer=None takes the global provider's tracer (a no-op one here); without opentelemetry installed,
    traced raises an ImportError that names the otel extra."""
    llm = traced(lambda request: "ok")
    assert anyio.run(llm, _request()).text == "ok"
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ImportError, match=r"otel extra"):
        traced(lambda request: "ok")


_options = st.fixed_dictionaries(
    {},
    optional={
        "temperature": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.booleans()),
        "max_tokens": st.one_of(st.integers(-10, 10**6), st.floats(allow_nan=False), st.text(max_size=3)),
        "stop": st.lists(st.text(max_size=3), max_size=2),
    },
)
_requests = st.builds(
    LLMRequest,
    st.lists(
        st.builds(Message, st.sampled_from(["user", "system", "assistant"]), st.text(max_size=20)),
        min_size=1,
        max_size=3,
    ).map(tuple),
    engine=st.sampled_from(["forward", "backward", "optimizer"]),
    purpose=st.sampled_from(["forward", "evaluate", "backward", "critique", "rewrite", "summarize"]),
    node=st.one_of(st.none(), st.text(max_size=8)),
    sample=st.one_of(st.none(), st.integers(), st.text(max_size=8)),
    draw=st.integers(0, 3),
    options=_options,
)


def _json_safe(value: object) -> bool:
    if isinstance(value, tuple):
        return all(type(v) is str for v in value)
    if type(value) is float:
        return json.loads(json.dumps(value, allow_nan=False)) == value
    return type(value) in (str, int, bool)


@settings(max_examples=60, deadline=None)
@given(requests=st.lists(_requests, max_size=6), capture=st.booleans())
def test_span_count_equals_call_count_and_every_attribute_is_a_json_safe_primitive(requests, capture):
    """For random requests, some failing: exactly one span per call, and every attribute value is a str, int,
    bool, finite float or tuple of str."""
    exporter, tracer = _tracing()

    made = []

    def llm(request):
        made.append(request)
        if request.draw == 3:
            raise LLMFailure(LLMError("server", "HTTP 500", retryable=True))
        return LLMResponse(request.prompt[::-1], {"input_tokens": len(request.prompt), "output_tokens": 1}, "m")

    wrapped = traced(llm, tracer, capture_content=capture)
    for request in requests:
        try:
            anyio.run(wrapped, request)
        except LLMFailure:
            assert request.draw == 3
    spans = exporter.get_finished_spans()
    assert len(spans) == len(made) == len(requests)
    assert [s.attributes["semgrad.purpose"] for s in spans] == [r.purpose for r in made]
    for span in spans:
        assert all(_json_safe(value) for value in span.attributes.values()), dict(span.attributes)


def _demo(iterations: int, **options: object) -> tuple[object, dict[str, object]]:
    from semgrad._bundled_pairs import gsm8k_sample
    from semgrad.backends.simulated import SimulatedLLM
    from semgrad.core import Example, optim
    from semgrad.core.scoring import numeric_match
    from semgrad.topologies import paper_graph

    samples = gsm8k_sample()
    examples = [Example({"question": q}, a, id=i) for i, (q, a) in enumerate(samples)]
    graph, params = paper_graph()
    arguments = {"train": examples[:3], "loss": numeric_match(), "iterations": iterations, **options}
    return (graph, params, optim.neighbor_sgd(k=2)), {"llm": SimulatedLLM(dict(samples), seed=5), **arguments}


@pytest.mark.parametrize("validation", [False, True])
def test_fit_with_a_tracer_opens_run_iteration_and_phase_spans_with_the_call_spans_under_their_phase(validation):
    """fit(tracer=...) makes one semgrad.fit span, one semgrad.iteration span per iteration (and 0 for the
    initial score under the held-out protocol), a semgrad.phase per phase; every call span of a traced LLM nests
    under a phase of its own iteration and carries semgrad.iteration; the result equals an untraced run's."""
    from semgrad.effects import fit_sync

    exporter, tracer = _tracing()
    (graph, params, optimizer), arguments = _demo(2)
    if validation:
        arguments["validation"] = arguments["train"]
    plain = fit_sync(graph, params, optimizer, **arguments)
    arguments["llm"] = traced(arguments["llm"], tracer)
    result = fit_sync(graph, params, optimizer, tracer=tracer, **arguments)
    assert result.params == plain.params and result.stopped is None
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span for span in spans}
    [run] = [s for s in spans if s.name == "semgrad.fit"]
    assert run.attributes["semgrad.protocol"] == ("held-out" if validation else "official")
    iterations = [s for s in spans if s.name == "semgrad.iteration"]
    assert sorted(s.attributes["semgrad.iteration"] for s in iterations) == ([0, 1, 2] if validation else [1, 2])
    assert all(by_id[s.parent.span_id] is run for s in iterations)
    phases = [s for s in spans if s.name == "semgrad.phase"]
    assert all(
        by_id[p.parent.span_id].attributes["semgrad.iteration"] == p.attributes["semgrad.iteration"] for p in phases
    )
    calls = [s for s in spans if s.name.startswith("chat")]
    assert len(calls) == sum(result.statistics.calls_by_purpose.values())
    for call_span in calls:
        phase = by_id[call_span.parent.span_id]
        assert phase.name == "semgrad.phase"
        assert call_span.attributes["semgrad.iteration"] == phase.attributes["semgrad.iteration"]
    optimize_calls = {
        c.attributes["semgrad.purpose"]
        for c in calls
        if by_id[c.parent.span_id].attributes["semgrad.phase"] == "optimize"
    }
    assert "backward" in optimize_calls


def test_fit_spans_end_when_the_run_fails_and_leave_no_iteration_behind():
    """A run that fails part-way (its progress callback raises in the optimize phase): the failure goes on up,
    every span is ended, the run span has status ERROR and error.type, and a call made after fit carries no
    semgrad.iteration."""
    from semgrad.effects import fit_sync

    class Interrupted(Exception):
        pass

    def interrupt(progress):
        if progress.phase == "optimize":
            raise Interrupted

    exporter, tracer = _tracing()
    (graph, params, optimizer), arguments = _demo(1)
    arguments["llm"] = traced(arguments["llm"], tracer)
    with pytest.raises(Interrupted):
        fit_sync(graph, params, optimizer, tracer=tracer, on_progress=interrupt, **arguments)
    spans = exporter.get_finished_spans()
    [run] = [s for s in spans if s.name == "semgrad.fit"]
    assert (run.attributes["error.type"], run.status.status_code) == ("Interrupted", StatusCode.ERROR)
    assert [s.name for s in spans].count("semgrad.iteration") == 1
    assert [s.attributes["semgrad.phase"] for s in spans if s.name == "semgrad.phase"] == ["forward", "optimize"]
    anyio.run(traced(lambda request: "ok", tracer), _request())
    assert "semgrad.iteration" not in exporter.get_finished_spans()[-1].attributes


def test_a_reply_s_finish_reason_and_cached_tokens_go_into_its_span():
    """A reply's finish_reason becomes gen_ai.response.finish_reasons, and its cached and cache-write prompt
    tokens the GenAI cache-usage attributes; a reply without them sets neither."""
    exporter, tracer = _tracing()
    usage = {"input_tokens": 5000, "output_tokens": 3, "cached_input_tokens": 4096, "cache_write_tokens": 0}
    replies = iter([LLMResponse("4", usage, "m", finish_reason="end_turn"), LLMResponse("5")])
    llm = traced(lambda request: next(replies), tracer)
    anyio.run(llm, _request())
    anyio.run(llm, _request())
    first, second = exporter.get_finished_spans()
    assert tuple(first.attributes["gen_ai.response.finish_reasons"]) == ("end_turn",)
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 4096
    assert first.attributes["gen_ai.usage.cache_creation.input_tokens"] == 0
    assert "gen_ai.response.finish_reasons" not in second.attributes
    assert "gen_ai.usage.cache_read.input_tokens" not in second.attributes
