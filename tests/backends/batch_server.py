"""A local provider on 127.0.0.1 that implements both batch protocols, and counts what it is asked.

OpenAI's: ``POST /v1/files`` (multipart, ``purpose=batch``), ``POST /v1/batches``, ``GET /v1/batches/{id}``,
``GET /v1/files/{id}/content``, ``POST /v1/batches/{id}/cancel``; Anthropic's: ``POST /v1/messages/batches``,
``GET /v1/messages/batches/{id}``, ``GET /v1/messages/batches/{id}/results``, ``POST .../cancel``. It answers
plain calls too (``/v1/chat/completions``, ``/v1/messages``: a run's preflight and training).

A batch moves validating -> in_progress -> (after `polls_to_end` status polls) completed (OpenAI) or ended
(Anthropic), unless `hold` is set (it stays in progress; the batches before `hold_from` run all the same),
`expire` says so (it expires: its lines not run fail as expired), or it is cancelled. `line_fault` picks,
per line, an HTTP status for it (a partial failure).
Every line the server runs is counted in `billed` (by custom id): a line run twice is a batch paid twice.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from .conftest import default_text


def _openai_reply(body: dict[str, Any]) -> dict[str, Any]:
    text = default_text(body)
    return {
        "id": "c",
        "model": body.get("model", "m"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4},
    }


def _anthropic_reply(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg",
        "type": "message",
        "model": body.get("model", "m"),
        "content": [{"type": "text", "text": default_text(body)}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 4},
    }


class BatchProvider:
    """The server's state; use the `batch_provider` fixture."""

    def __init__(self) -> None:
        self.batches: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        self.routes: Counter[str] = Counter()
        self.billed: Counter[str] = Counter()
        self.calls = 0  # plain (non-batch) calls
        self.polls_to_end = 2
        self.hold = False
        self.hold_from = 1  # with `hold`: batches from this one on (1: the first created) stay in progress
        self.expire: set[str] = set()  # batch ids that expire instead of completing
        self.expire_next = 0  # the next this many batches created expire
        self.hostile_id: str | None = None  # a batch id to answer with instead of the real one
        self.line_fault: Callable[[str, dict[str, Any]], int | None] = lambda custom_id, body: None
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None

    @property
    def created(self) -> int:
        """Batches created so far."""
        return len(self.batches)

    @property
    def url(self) -> str:
        """The server's root (OpenAI's API root is ``url + "/v1"``)."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> BatchProvider:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.provider = self  # type: ignore[attr-defined]
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # -- the protocols' state machine ---------------------------------------------------------------------

    def create(self, kind: str, lines: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """A new batch of `lines` (custom id, request body) of the `kind` protocol."""
        with self.lock:
            batch_id = f"batch_{next(self._ids)}"
            if self.expire_next:
                self.expire_next -= 1
                self.expire.add(batch_id)
            n = len(self.batches) + 1
            batch = {"id": batch_id, "n": n, "kind": kind, "lines": lines, "state": "validating", "polls": 0}
            batch["results"] = {}
            self.batches[batch_id] = batch
            return batch

    def poll(self, batch_id: str) -> dict[str, Any]:
        """One status poll of a batch: it moves on a step unless held."""
        with self.lock:
            batch = self.batches[batch_id]
            batch["polls"] += 1
            if batch["state"] == "validating":
                batch["state"] = "in_progress"
            elif batch["state"] == "in_progress" and not self._held(batch) and batch["polls"] >= self.polls_to_end:
                if batch_id in self.expire:
                    self._run(batch, half=True)
                    batch["state"] = "expired"
                else:
                    self._run(batch)
                    batch["state"] = "completed"
            elif batch["state"] == "cancelling":
                batch["state"] = "cancelled"
            return batch

    def _held(self, batch: dict[str, Any]) -> bool:
        return self.hold and batch["n"] >= self.hold_from

    def cancel(self, batch_id: str) -> dict[str, Any]:
        """Cancel a batch: the lines not run never will be."""
        with self.lock:
            batch = self.batches[batch_id]
            if batch["state"] in ("validating", "in_progress"):
                batch["state"] = "cancelling"
            return batch

    def _run(self, batch: dict[str, Any], *, half: bool = False) -> None:
        """Answer the batch's lines (its first half only when `half`), each billed once."""
        lines = batch["lines"][: len(batch["lines"]) // 2] if half else batch["lines"]
        for custom_id, body in lines:
            self.billed[custom_id] += 1
            status = self.line_fault(custom_id, body)
            if status is not None:
                batch["results"][custom_id] = (status, {"error": {"type": "api_error", "message": f"line {status}"}})
            else:
                reply = _openai_reply(body) if batch["kind"] == "openai" else _anthropic_reply(body)
                batch["results"][custom_id] = (200, reply)

    def openai_status(self, batch: dict[str, Any]) -> dict[str, Any]:
        state = batch["state"]
        found = {"id": batch["id"], "object": "batch", "status": state, "output_file_id": None, "error_file_id": None}
        if state in ("completed", "expired", "cancelled"):
            ok = [(c, r) for c, r in batch["results"].items() if r[0] == 200]
            bad = [(c, r) for c, r in batch["results"].items() if r[0] != 200]
            code = {"expired": "batch_expired", "cancelled": "batch_cancelled"}.get(state)
            not_run = [c for c, _ in batch["lines"] if c not in batch["results"]] if code else []
            found["output_file_id"] = self._file(batch["id"] + "_out", [_openai_line(c, r) for c, r in ok])
            errors = [_openai_line(c, r) for c, r in bad] + [
                {"id": "r", "custom_id": c, "response": None, "error": {"code": code, "message": state}}
                for c in not_run
            ]
            found["error_file_id"] = self._file(batch["id"] + "_err", errors) if errors else None
        return found

    def _file(self, file_id: str, rows: list[dict[str, Any]]) -> str:
        self.files[file_id] = b"".join(json.dumps(row).encode() + b"\n" for row in rows)
        return file_id

    def anthropic_status(self, batch: dict[str, Any]) -> dict[str, Any]:
        state = {"validating": "in_progress", "cancelling": "canceling"}.get(batch["state"], batch["state"])
        ended = state in ("completed", "expired", "cancelled")
        return {"id": batch["id"], "type": "message_batch", "processing_status": "ended" if ended else state}

    def anthropic_results(self, batch: dict[str, Any]) -> bytes:
        rows = []
        for custom_id, _ in batch["lines"]:
            found = batch["results"].get(custom_id)
            if found is None:
                kind = "expired" if batch["state"] == "expired" else "canceled"
                rows.append({"custom_id": custom_id, "result": {"type": kind}})
            elif found[0] == 200:
                rows.append({"custom_id": custom_id, "result": {"type": "succeeded", "message": found[1]}})
            else:
                error = {"type": "error", "error": {"type": "api_error", "message": "overloaded"}}
                rows.append({"custom_id": custom_id, "result": {"type": "errored", "error": error}})
        return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def _openai_line(custom_id: str, result: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"id": "r", "custom_id": custom_id, "response": {"status_code": result[0], "body": result[1]}, "error": None}


def _multipart_file(body: bytes, content_type: str) -> bytes:
    boundary = re.search(r"boundary=([^;]+)", content_type)
    assert boundary is not None, content_type
    for part in body.split(b"--" + boundary.group(1).encode()):
        if b'name="file"' in part:
            return part.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n", 1)[0]
    raise AssertionError("no file part")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    @property
    def provider(self) -> BatchProvider:
        return self.server.provider  # type: ignore[attr-defined, no-any-return]

    def do_GET(self) -> None:  # noqa: N802
        self._route("GET", b"")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", 0))
        self._route("POST", self.rfile.read(length))

    def _send(self, status: int, data: Any) -> None:
        raw = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _route(self, method: str, body: bytes) -> None:
        p, path = self.provider, self.path
        route = re.sub(r"batch_\d+(_out|_err)?", "{id}", path)
        p.routes[f"{method} {route}"] += 1
        found = _answer(p, method, path, body, self.headers.get("Content-Type", ""))
        if found is None:
            self._send(404, {"error": {"message": f"no route {method} {path}"}})
        else:
            self._send(*found)


def _answer(p: BatchProvider, method: str, path: str, body: bytes, content_type: str) -> tuple[int, Any] | None:
    if method == "POST" and path == "/v1/chat/completions":
        p.calls += 1
        return 200, _openai_reply(json.loads(body))
    if method == "POST" and path == "/v1/messages":
        p.calls += 1
        return 200, _anthropic_reply(json.loads(body))
    if method == "POST" and path == "/v1/files":
        file_id = f"file_{len(p.files) + 1}"
        p.files[file_id] = _multipart_file(body, content_type)
        return 200, {"id": file_id, "object": "file", "purpose": "batch"}
    if method == "POST" and path == "/v1/batches":
        data = json.loads(body)
        rows = [json.loads(line) for line in p.files[data["input_file_id"]].splitlines() if line.strip()]
        batch = p.create("openai", [(row["custom_id"], row["body"]) for row in rows])
        return 200, {**p.openai_status(batch), **({"id": p.hostile_id} if p.hostile_id else {})}
    if method == "POST" and path == "/v1/messages/batches":
        rows = json.loads(body)["requests"]
        batch = p.create("anthropic", [(row["custom_id"], row["params"]) for row in rows])
        return 200, {**p.anthropic_status(batch), **({"id": p.hostile_id} if p.hostile_id else {})}
    if method == "GET" and path in ("/v1/batches?limit=1", "/v1/messages/batches?limit=1"):
        return 200, {"data": [], "has_more": False}
    match = re.fullmatch(r"/v1(/messages)?/batches/(batch_\d+)(/cancel|/results)?", path)
    if match and match.group(2) in p.batches:
        anthropic, batch_id, tail = bool(match.group(1)), match.group(2), match.group(3)
        if tail == "/cancel":
            batch = p.cancel(batch_id)
        elif tail == "/results":
            return 200, p.anthropic_results(p.batches[batch_id])
        else:
            batch = p.poll(batch_id)
        return 200, p.anthropic_status(batch) if anthropic else p.openai_status(batch)
    match = re.fullmatch(r"/v1/files/([\w-]+)/content", path)
    if match and match.group(1) in p.files:
        return 200, p.files[match.group(1)]
    return None


@pytest.fixture
def batch_provider() -> Iterator[BatchProvider]:
    """A started `BatchProvider` on an ephemeral 127.0.0.1 port, stopped after the test."""
    provider = BatchProvider().start()
    try:
        yield provider
    finally:
        provider.stop()
