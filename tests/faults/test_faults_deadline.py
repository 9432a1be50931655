"""Fault injection, slow servers (issue 32 point 9): a server that drips its reply cannot hold a call for ever.

What it tries, and the figure it holds -- *no call without an end*: a server on 127.0.0.1 sends its headers at
once, then one byte of the body every half second. Each byte comes well within the backend's ``timeout`` (which
bounds every read, not the call), so only a total deadline ends the call; a backend built without ``deadline=``
has one (``DEFAULT_DEADLINE``, 600 s, or ``timeout`` when that is longer).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import anyio
import pytest

from semgrad.backends import anthropic, openai_compatible
from semgrad.core import LLMFailure, LLMRequest, Message

QUESTION = LLMRequest((Message("user", "2+2?"),))


class Dripping:
    """A loopback server that answers every request with headers, then one body byte every `every` seconds."""

    def __init__(self, every: float = 0.5) -> None:
        self.every = every
        self.stopped = threading.Event()
        self.requests = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.threads: list[threading.Thread] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._drip, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                head = b""
                while b"\r\n\r\n" not in head:
                    head += conn.recv(65536)
                self.requests += 1
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
                while not self.stopped.wait(self.every):
                    conn.sendall(b" ")
            except OSError:
                return

    def stop(self) -> None:
        self.stopped.set()
        self.sock.close()
        self.thread.join(5)
        for thread in self.threads:
            thread.join(5)


@pytest.fixture
def dripping() -> Iterator[Dripping]:
    server = Dripping()
    try:
        yield server
    finally:
        server.stop()


def build(which: str, base_url: str, **config):
    if which == "openai":
        return openai_compatible(base_url + "/v1", model="m", **config)
    return anthropic("m", base_url=base_url, api_key="k", **config)


@pytest.mark.parametrize("which", ["openai", "anthropic"])
async def test_a_backend_built_without_a_deadline_ends_a_call_that_a_server_drips(dripping, which, monkeypatch):
    """Without deadline=, a reply dripped a byte every 0.5 s (each read well within timeout=1) fails as a retryable
    'timeout' after the default deadline (made 1.5 s here), not when the server stops dripping."""
    monkeypatch.setattr("semgrad.backends._http.DEFAULT_DEADLINE", 1.5)
    llm = build(which, dripping.base_url, timeout=1.0)
    started = time.monotonic()
    with anyio.fail_after(10), pytest.raises(LLMFailure) as caught:  # the server would drip for 14 hours
        await llm(QUESTION)
    took = time.monotonic() - started
    error = caught.value.error
    assert (error.kind, error.retryable) == ("timeout", True) and "deadline of 1.5 s" in error.message
    assert 1.4 < took < 5 and dripping.requests == 1


@pytest.mark.parametrize("which", ["openai", "anthropic"])
def test_the_default_deadline_is_600_seconds_or_the_timeout_when_longer(which):
    """A backend built without deadline= bounds each call by 600 s, or by its timeout when that is longer (a read may
    take that long); an explicit deadline= is kept as given."""
    assert build(which, "http://127.0.0.1:9").deadline == 600.0
    assert build(which, "http://127.0.0.1:9", timeout=900).deadline == 900.0
    assert build(which, "http://127.0.0.1:9", timeout=900, deadline=30).deadline == 30.0
