"""Shared test helpers for sweeps: data location, spec writing, a loopback chat server, an instrumented LLM."""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from semgrad.effects._routing import call, identity_of

from .._data import data_dir

ROOT = Path(__file__).resolve().parents[2]
DATA = data_dir()

#: The acceptance grid: 3 tasks x 2 seeds x 2 optimizers, tiny sizes.
GRID = {
    "tasks": ["bbh:navigate", "bbh:boolean_expressions", "gsm8k"],
    "seeds": [0, 1],
    "optimizers": ["neighbor-sgd", "tgd"],
}
SIZES = {"iterations": 2, "train": 4, "validation": 4, "test": 4}


def toml_value(value: Any) -> str:
    """A Python value as TOML (enough for specs: strings, numbers, lists, tables inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def write_spec(path: Path, top: Mapping[str, Any], **tables: Mapping[str, Any]) -> Path:
    """Write a TOML spec: top-level keys, then one [table] per keyword."""
    lines = [f"{key} = {toml_value(value)}" for key, value in top.items()]
    for name, table in tables.items():
        lines.append(f"[{name}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in table.items()]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def grid_spec(
    path: Path,
    grid: Mapping[str, Any] = GRID,
    *,
    models: Mapping[str, str] | None = None,
    resources: Mapping[str, Any] | None = None,
    **settings: Any,
) -> Path:
    """The acceptance grid on the simulated backend, with `settings` overriding the tiny sizes."""
    tables: dict[str, Mapping[str, Any]] = {"settings": {"data_dir": str(DATA), **SIZES, **settings}}
    if models:
        tables["models"] = models
    if resources:
        tables["resources"] = resources
    return write_spec(path, grid, **tables)


class ChatServer(http.server.ThreadingHTTPServer):
    """An OpenAI-compatible /v1/chat/completions on 127.0.0.1 that counts requests in flight."""

    daemon_threads = True

    def __init__(self, delay: float = 0.05, status: int = 200) -> None:
        super().__init__(("127.0.0.1", 0), _ChatHandler)
        self.delay, self.status = delay, status
        self.lock = threading.Lock()
        self.in_flight = self.peak = self.requests = 0

    @property
    def base_url(self) -> str:
        """The API root to configure."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _ChatHandler(http.server.BaseHTTPRequestHandler):
    server: ChatServer

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with self.server.lock:
            self.server.in_flight += 1
            self.server.requests += 1
            self.server.peak = max(self.server.peak, self.server.in_flight)
        try:
            time.sleep(self.server.delay)
        finally:
            with self.server.lock:
                self.server.in_flight -= 1
        if self.path != "/v1/chat/completions" or self.server.status != 200:
            self.send_error(404 if self.path != "/v1/chat/completions" else self.server.status)
            return
        reply = {
            "model": body.get("model", "m"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "Answer: (A)"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


@contextmanager
def chat_server(delay: float = 0.05, status: int = 200) -> Iterator[ChatServer]:
    """A running `ChatServer` (answering `status`), shut down (and its thread joined) on exit."""
    server = ChatServer(delay, status)
    thread = threading.Thread(target=server.serve_forever, name="chat-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _Logged:
    """Appends one line per call to ``run_dir/calls.log`` (pid and purpose); may kill its process once."""

    is_async = True

    def __init__(self, inner: Any, run_dir: Path, crash_marker: Path | None) -> None:
        self.inner, self.run_dir, self.crash_marker = inner, run_dir, crash_marker

    @property
    def identity(self) -> Any:
        return identity_of(self.inner)

    async def __call__(self, request: Any) -> Any:
        marker = self.crash_marker
        if marker is not None and (self.run_dir / "checkpoint.json").exists() and not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(1)  # a worker that dies mid-run, after its first checkpoint
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.run_dir / "calls.log", "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} {request.purpose}\n")
        return await call(self.inner, request)


class CallLog:
    """An instrument for `run_sweep`: logs every call per run, and kills the worker of `crash` once."""

    def __init__(self, crash: str | None = None, marker: Path | None = None) -> None:
        self.crash, self.marker = crash, marker

    def __call__(self, llm: Any, name: str, run_dir: Path) -> Any:
        return _Logged(llm, run_dir, self.marker if name == self.crash else None)


def logged_calls(run_dir: Path) -> list[tuple[int, str]]:
    """The (pid, purpose) of every call a run logged."""
    path = run_dir / "calls.log"
    if not path.exists():
        return []
    return [(int(pid), purpose) for pid, purpose in (line.split() for line in path.read_text().splitlines())]


def sweep_json(directory: Path) -> dict[str, Any]:
    """The combined results of a sweep directory."""
    return json.loads((directory / "sweep.json").read_text("utf-8"))
