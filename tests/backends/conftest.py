"""A real HTTP server on 127.0.0.1 that plays an OpenAI-compatible and an Anthropic provider.

It serves ``/v1/chat/completions`` and ``/v1/messages`` with deterministic
replies, and scripted faults taken in order, one per request: an HTTP status
(429 with Retry-After, 500, 401...) with a JSON body or raw bytes, a hang past
the client's timeout, a truncated JSON body, or a dropped connection. It counts requests and keeps the
peak number in flight.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Fault = Any  # "hang" | "truncated" | "drop" | "drip" | (status, headers, json_body or raw bytes)

#: A body of JSON nested too deeply for any decoder (200,000 arrays): json.loads raises RecursionError.
DEEP_JSON = b"[" * 200_000 + b"]" * 200_000


def default_text(body: dict[str, Any]) -> str:
    """A deterministic reply derived from the request's messages, system and model (its result tagged, as a
    forward reply)."""
    blob = json.dumps([body.get("messages"), body.get("system"), body.get("model")], sort_keys=True)
    text = f"reply {hashlib.sha256(blob.encode()).hexdigest()[:10]}"
    return f"{text}, after some reasoning.\n<result>{text}</result>"


class FakeProvider:
    """The server's state and script; use the `provider` fixture."""

    def __init__(self) -> None:
        self.faults: deque[Fault] = deque()
        self.responder: Callable[[dict[str, Any]], str] = default_text
        #: Prompt caching as the providers do it: OpenAI serves from its cache a system message it saw before
        #: when it holds `cache_min_chars` characters or more (``prompt_tokens_details.cached_tokens``);
        #: Anthropic caches a system block marked with ``cache_control`` and as long (a write the first
        #: time, a read after). Tokens are characters / 4.
        self.cache_min_chars = 4096
        self.cached: set[str] = set()
        self.delay = 0.0
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.arrivals: list[float] = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def count(self) -> int:
        """Requests received so far."""
        return len(self.requests)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``; the OpenAI-compatible root is ``base_url + "/v1"``."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def script(self, *faults: Fault) -> None:
        """Queue faults; each request takes the next one, then the server answers normally."""
        self.faults.extend(faults)

    def start(self) -> FakeProvider:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.daemon_threads = False
        server.block_on_close = True
        server.provider = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, free hanging handlers, close every connection and join every thread."""
        if self._server is None:
            return
        self._release.set()
        self._server.shutdown()
        with self._lock:
            for conn in list(self._connections):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._server.server_close()
        assert self._thread is not None
        self._thread.join(5)
        self._server = None

    def _arrive(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Fault:
        with self._lock:
            self.requests.append((path, headers, body))
            self.arrivals.append(time.monotonic())
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return self.faults.popleft() if self.faults else None

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _openai_reply(body: dict[str, Any], text: str, provider: FakeProvider | None = None) -> dict[str, Any]:
    chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
    usage: dict[str, Any] = {"prompt_tokens": chars // 4 + 1, "completion_tokens": len(text) // 4 + 1}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    first = (body.get("messages") or [{}])[0]
    if provider is not None and first.get("role") == "system" and len(first["content"]) >= provider.cache_min_chars:
        key = "openai\n" + first["content"]
        with provider._lock:
            hit = key in provider.cached
            provider.cached.add(key)
        usage["prompt_tokens_details"] = {"cached_tokens": len(first["content"]) // 4 if hit else 0}
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": body.get("model"),
        "choices": [choice],
        "usage": usage,
    }


def _anthropic_reply(body: dict[str, Any], text: str, provider: FakeProvider | None = None) -> dict[str, Any]:
    system = body.get("system") or ""
    marked = ""
    if isinstance(system, list):  # text blocks, one of them marked for the prompt cache
        marked = "".join(b["text"] for b in system if b.get("cache_control"))
        system = "".join(b["text"] for b in system)
    chars = len(system) + sum(len(m["content"]) for m in body.get("messages", []))
    usage = {"input_tokens": chars // 4 + 1, "output_tokens": len(text) // 4 + 1}
    if provider is not None and len(marked) >= provider.cache_min_chars:  # a shorter prefix is not cached
        with provider._lock:
            hit = "anthropic\n" + marked in provider.cached
            provider.cached.add("anthropic\n" + marked)
        usage["input_tokens"] -= len(marked) // 4
        usage["cache_read_input_tokens" if hit else "cache_creation_input_tokens"] = len(marked) // 4
    content = [{"type": "text", "text": text}]
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": "end_turn",
        "usage": usage,
    }


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # socketserver's 5 drops bursts of connections (the client retries a second later)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def provider(self) -> FakeProvider:
        return self.server.provider  # type: ignore[attr-defined]

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.provider._lock:
            self.provider._connections.add(self.connection)

    def finish(self) -> None:
        with self.provider._lock:
            self.provider._connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:
            pass  # the client gave up (a timeout test) or the server is stopping

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.loads(raw)
        fault = self.provider._arrive(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        try:
            self._answer(fault, body)
        finally:
            self.provider._leave()

    def _answer(self, fault: Fault, body: dict[str, Any]) -> None:
        if self.path not in ("/v1/chat/completions", "/v1/messages"):
            return self._send(404, {}, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
        if fault == "hang":
            self.provider._release.wait(10)
        elif fault == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        elif isinstance(fault, tuple):
            status, headers, payload = fault
            return self._send(status, headers, payload if isinstance(payload, bytes) else json.dumps(payload).encode())
        if self.provider.delay:
            time.sleep(self.provider.delay)
        text = self.provider.responder(body)
        provider = self.provider
        if self.path.endswith("completions"):
            reply = _openai_reply(body, text, provider)
        else:
            reply = _anthropic_reply(body, text, provider)
        data = json.dumps(reply).encode()
        if fault == "drip":  # the whole reply, in 20 pieces 0.1 s apart: each read is quick, the call takes 2 s
            return self._send(200, {}, data, pieces=20)
        return self._send(200, {}, data[: len(data) // 2] if fault == "truncated" else data)

    def _send(self, status: int, headers: dict[str, str], data: bytes, pieces: int = 1) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        size = -(-len(data) // pieces)
        for start in range(0, len(data), size):
            if start and self.provider._release.wait(0.1):
                return
            self.wfile.write(data[start : start + size])
            self.wfile.flush()


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    """A started fake provider on an ephemeral 127.0.0.1 port, stopped after the test."""
    server = FakeProvider().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def free_port() -> int:
    """A 127.0.0.1 port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
