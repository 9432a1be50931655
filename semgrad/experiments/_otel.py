"""``semgrad run --otel``: an OpenTelemetry SDK tracer exporting over OTLP/HTTP, configured from the
standard ``OTEL_EXPORTER_OTLP_*`` variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``..._HEADERS``, ``..._TIMEOUT``; ``OTEL_SERVICE_NAME``, default
``semgrad``). Needs the ``otel`` extra (``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-http``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._errors import SetupError

__all__ = ["MISSING", "otel_tracer"]

#: The one line `otel_tracer` fails with when the extra is not installed.
MISSING = (
    "--otel needs the otel extra: pip install -e '.[otel]' "
    "(opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http)"
)


def otel_tracer() -> tuple[Any, Callable[[], None]]:
    """A tracer whose spans are exported over OTLP/HTTP, and the function that flushes and stops the export.

    Raises:
        SetupError: The SDK or the OTLP/HTTP exporter is not installed (`MISSING`).
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise SetupError(MISSING) from None
    provider = TracerProvider(resource=Resource.create({"service.name": "semgrad"}))  # OTEL_SERVICE_NAME wins
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider.get_tracer("semgrad"), provider.shutdown
