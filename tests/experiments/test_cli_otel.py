"""``semgrad run --otel`` (issue #36 point 4): the spans of a simulated run arrive at an OTLP/HTTP collector
stand-in on 127.0.0.1 (``/v1/traces``, protobuf, decoded with opentelemetry-proto), configured by the standard
``OTEL_EXPORTER_OTLP_*`` variables; without the extra the command fails with one line."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from .._data import data_dir

ROOT = Path(__file__).resolve().parents[2]


class _Collector(http.server.BaseHTTPRequestHandler):
    received: list[bytes] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v1/traces":
            _Collector.received.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _spans(bodies: list[bytes]) -> list:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    found = []
    for body in bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                found += list(scope.spans)
    return found


def test_a_simulated_run_with_otel_sends_its_run_phase_and_call_spans_to_the_collector(tmp_path):
    """Every span of the run reaches the collector: fit's run span, its phases, and one chat span per call with
    the GenAI attributes and the reply's finish reason when it has one."""
    pytest.importorskip("opentelemetry.sdk")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    pytest.importorskip("opentelemetry.proto")
    _Collector.received = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}"}
        sizes = ["--train", "2", "--test", "2", "--iterations", "1", "--quiet"]
        args = ["run", "bbh:navigate", "--data-dir", str(data_dir()), *sizes, "--out", str(tmp_path / "run"), "--otel"]
        result = subprocess.run(
            [sys.executable, "-m", "semgrad", *args], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT
        )
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 0, result.stderr
    spans = _spans(_Collector.received)
    names = [s.name for s in spans]
    chats = [s for s in spans if s.name.startswith("chat")]
    assert chats and {"semgrad.fit", "semgrad.iteration", "semgrad.phase"} <= set(names), names
    attributes = {a.key for s in chats for a in s.attributes}
    assert {"gen_ai.operation.name", "semgrad.engine", "semgrad.purpose"} <= attributes
    fit_traces = {s.trace_id for s in spans if s.name == "semgrad.fit"}
    assert any(s.trace_id in fit_traces and s.parent_span_id for s in chats)  # the training's calls, inside fit


def test_otel_without_the_extra_fails_with_one_line(tmp_path):
    """When the OTLP exporter cannot be imported, --otel fails with the one-line instruction to install the extra."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.startswith('opentelemetry.exporter'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{blocker}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    args = ["run", "bbh:navigate", "--data-dir", str(data_dir()), "--train", "2", "--test", "2", "--iterations", "1"]
    result = subprocess.run(
        [sys.executable, "-m", "semgrad", *args, "--out", str(tmp_path / "run"), "--otel", "--quiet"],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode != 0
    assert "--otel needs the otel extra: pip install -e '.[otel]'" in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1, result.stderr
