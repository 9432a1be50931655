"""Fault injection, API keys (engineer 15-files): bad keys, and servers that echo the key back in every form.

What it tries, and the figure it holds -- *no key in any output*:

* keys with a trailing ``\\r`` or ``\\n`` (a CRLF ``.env`` file), spaces, tabs, control and non-ASCII characters,
  from ``api_key=`` and from the environment: refused when the backend is built, in one line saying what is
  wrong and never showing the key; ``semgrad run`` exits 1 with that line and writes no checkpoint;
* a server on 127.0.0.1 that answers 400/401/429/500 with the key echoed raw, stripped, repr-escaped,
  JSON-escaped, URL-encoded and as a bytes repr: no error message, repr, traceback, ``__context__`` or
  ``__cause__`` (the whole chain) holds the key or a request header, for both backends;
* ``fit`` against such a server: neither ``checkpoint.json`` nor the result holds any form of the key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends import anthropic, openai_compatible
from semgrad.core import LLMFailure, LLMRequest, Message
from tests.backends.conftest import provider  # noqa: F401  (the server on 127.0.0.1)

from .._data import data_dir

ROOT = Path(__file__).resolve().parents[2]
DATA = data_dir()
CORE = "sk-LEAKCHECK+/=0123456789abcdef"
BAD = st.sampled_from(["\r", "\n", "\r\n", " ", "\t", "\x00", "\x1b", "\x7f", "é", "\u200b", "\u2028", "\ufeff"])


def build(which: str, key: str | None, base_url: str = "http://127.0.0.1:9"):
    if which == "openai":
        return openai_compatible(base_url + "/v1", model="m", api_key=key, timeout=0.5)
    return anthropic("m", base_url=base_url, api_key=key, timeout=0.5)


@given(st.sampled_from(["openai", "anthropic"]), BAD, st.sampled_from(["start", "end", "inside"]), st.booleans())
def test_a_key_with_whitespace_control_or_non_ascii_characters_is_refused_without_showing_it(which, bad, at, env):
    """A bad key, given or from the environment, is refused at construction in one line that never shows it."""
    key = {"start": bad + CORE, "end": CORE + bad, "inside": CORE[:8] + bad + CORE[8:]}[at]
    env = env and bad != "\x00"  # the environment cannot hold a NUL
    variable = "OPENAI_API_KEY" if which == "openai" else "ANTHROPIC_API_KEY"
    with pytest.MonkeyPatch.context() as patch:
        if env:
            patch.setenv(variable, key)
        with pytest.raises(ValueError) as caught:
            build(which, None if env else key)
    message = str(caught.value)
    assert variable in message and "\n" not in message and "\r" not in message
    assert CORE[:8] not in message and CORE[8:] not in message
    assert caught.value.__context__ is None and caught.value.__cause__ is None


def _echoes(key: str) -> str:
    return " | ".join(
        [key, key.strip(), repr(key), json.dumps(key), urllib.parse.quote(key, safe=""), urllib.parse.quote_plus(key),
         repr(key.encode())]
    )  # fmt: skip


def _chain(exc: BaseException) -> list[BaseException]:
    found = []
    while exc is not None and exc not in found:
        found.append(exc)
        exc = exc.__cause__ or exc.__context__
    return found


def _forms(key: str) -> list[str]:
    return [key, urllib.parse.quote(key, safe=""), urllib.parse.quote_plus(key), json.dumps(key)[1:-1], CORE]


@pytest.mark.parametrize("which", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [400, 401, 429, 500])
async def test_errors_and_their_whole_chain_hold_no_form_of_the_key_or_a_header(provider, which, status):  # noqa: F811
    """A server echoing the key raw and escaped in an error: message, repr, traceback and every __context__ /
    __cause__ hold none of its forms, nor the request's auth headers."""
    llm = build(which, CORE, provider.base_url)
    provider.script((status, {"Retry-After": "0"}, {"error": {"message": f"bad key: {_echoes(CORE)}"}}))
    with pytest.raises(LLMFailure) as caught:
        await llm(LLMRequest((Message("user", "hi"),)))
    assert CORE in str(provider.requests[0][1])  # the key was sent
    texts = ["".join(traceback.format_exception(caught.value))]
    for exc in _chain(caught.value):
        texts += [
            str(exc),
            repr(exc),
            repr(getattr(exc, "error", None)),
            repr(vars(exc) if hasattr(exc, "__dict__") else ""),
        ]
    assert "***" in texts[0]
    for text in texts:
        assert not any(form in text for form in _forms(CORE)), text
        assert "Bearer" not in text and "x-api-key" not in text.lower()
    assert caught.value.__context__ is None and caught.value.__cause__ is None


@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n"])
def test_semgrad_run_with_a_crlf_key_stops_in_one_line_without_the_key(tmp_path, ending):
    """`semgrad run` with OPENAI_API_KEY from a CRLF .env file exits 1 with one line naming the variable, shows
    no part of the key on stdout or stderr, and writes no checkpoint."""
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "semgrad", "run", "bbh:navigate", "--data-dir", str(DATA), "--backend",
         "openai-compatible", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--yes", "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "OPENAI_API_KEY": CORE + ending},
    )  # fmt: skip
    assert result.returncode == 1
    assert "OPENAI_API_KEY" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert CORE[:8] not in result.stderr + result.stdout and CORE[8:] not in result.stderr + result.stdout
    assert not (out / "checkpoint.json").exists()


@pytest.mark.parametrize("which", ["openai", "anthropic"])
def test_a_checkpoint_written_while_the_server_echoes_the_key_holds_no_form_of_it(provider, tmp_path, which):  # noqa: F811
    """fit over a server that rejects calls with the key echoed (raw and escaped): checkpoint.json, the result's
    history and its repr hold no form of the key."""
    from semgrad.core import GraphBuilder, optim
    from semgrad.effects import fit_sync

    b = GraphBuilder()
    q = b.input("q")
    b.llm("answer", inputs=[q], instruction="Answer.")
    graph, params = b.build(output="answer")
    provider.script(*[(400, {}, {"error": {"message": f"bad key: {_echoes(CORE)}"}})] * 40)
    path = tmp_path / "checkpoint.json"
    result = fit_sync(
        graph,
        params,
        optim.neighbor_sgd(k=2),
        train=[{"inputs": {"q": "2+2?"}, "target": "4"}, {"inputs": {"q": "3+3?"}, "target": "6"}],
        validation=[{"inputs": {"q": "1+1?"}, "target": "2"}],
        llm=build(which, CORE, provider.base_url),
        iterations=1,
        checkpoint=path,
    )
    written = path.read_text("utf-8")
    assert provider.count > 0 and "***" in repr(result) + written
    for text in (written, repr(result)):
        assert not any(form in text for form in _forms(CORE))
