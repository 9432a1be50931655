"""Helpers of the fault suite's run tests: a misbehaving provider on 127.0.0.1 and `semgrad run` in a subprocess.

`Misbehaving` is the backend tests' `FakeProvider` (tests/backends/conftest.py)
with two more ways to fail: a `chooser` that picks a fault from each request's
body (so a fixed share of requests fails, whatever the order they arrive in),
and a ``"slow"`` fault that sends the headers at once and the body only after
`slow_seconds`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.backends.conftest import FakeProvider, _Handler

from .._data import data_dir

ROOT = Path(__file__).resolve().parents[2]
DATA = data_dir()

#: A tiny run of the paper's graph: 4 items per split, 2 iterations.
SMALL = ("--train", "4", "--validation", "4", "--test", "4", "--iterations", "2")

SERVER_ERROR = (500, {}, {"error": {"message": "internal error"}})
BAD_REQUEST = (400, {}, {"error": {"message": "bad request"}})


class _SlowHandler(_Handler):
    def _answer(self, fault: Any, body: dict[str, Any]) -> None:
        if fault != "slow":
            return super()._answer(fault, body)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100")
        self.end_headers()
        self.wfile.write(b'{"id": ')
        self.wfile.flush()
        self.provider._release.wait(self.provider.slow_seconds)  # type: ignore[attr-defined]
        self.close_connection = True
        return None


class Misbehaving(FakeProvider):
    """A `FakeProvider` whose faults may also be chosen per request body, with a ``"slow"`` body fault."""

    def __init__(self) -> None:
        super().__init__()
        self.chooser: Callable[[dict[str, Any]], Any] | None = None
        self.slow_seconds = 5.0

    def start(self) -> Misbehaving:
        import threading
        from http.server import ThreadingHTTPServer

        server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
        server.daemon_threads = False
        server.block_on_close = True
        server.provider = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def _arrive(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
        scripted = bool(self.faults)  # the script goes first (None in it: a normal answer)
        fault = super()._arrive(path, headers, body)
        if not scripted and self.chooser is not None:
            fault = self.chooser(body)
        return fault

    @property
    def url(self) -> str:
        """The OpenAI-compatible API root."""
        return self.base_url + "/v1"

    def repeats(self) -> int:
        """Requests whose body the server had already received (paid calls made again)."""
        bodies = Counter(json.dumps(body, sort_keys=True) for _, _, body in self.requests)
        return sum(n - 1 for n in bodies.values())


@pytest.fixture
def server() -> Iterator[Misbehaving]:
    """A started `Misbehaving` provider on an ephemeral 127.0.0.1 port, stopped after the test."""
    provider = Misbehaving().start()
    try:
        yield provider
    finally:
        provider.stop()


def run_args(url: str, out: Path, *extra: str) -> list[str]:
    """The arguments of a small `semgrad run bbh:navigate` against an OpenAI-compatible server at `url`."""
    return [
        "run", "bbh:navigate", "--data-dir", str(DATA), "--backend", "openai-compatible", "--base-url", url,
        "--model", "m", "--yes", "--out", str(out), *SMALL, *extra,
    ]  # fmt: skip


def env() -> dict[str, str]:
    """The environment of a subprocess run: no real key or base URL from the caller's environment."""
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY")}
    return {**clean, "PYTHONPATH": str(ROOT)}


def semgrad(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run the command line in a subprocess and wait for it."""
    return subprocess.run(
        [sys.executable, "-m", "semgrad", *args], capture_output=True, text=True, timeout=timeout, env=env(), cwd=ROOT
    )


def start(*args: str) -> subprocess.Popen[str]:
    """Start the command line in a subprocess (to kill it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "semgrad", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=ROOT,
    )


def wait_for(condition: Callable[[], bool], timeout: float = 60) -> None:
    """Poll `condition` until it holds (or fail the test)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")
        time.sleep(0.005)


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The ``semgrad:`` lines a run wrote to stderr."""
    return [line for line in result.stderr.splitlines() if line.startswith("semgrad:")]


def results(out: Path) -> dict[str, Any]:
    """A run directory's results.json."""
    return json.loads((out / "results.json").read_text("utf-8"))
