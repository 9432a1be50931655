"""Fault injection, API keys in every encoding (issue 32 point 3): no run of 8 of the key's characters in any output.

What it tries, and the figure it holds -- *no key in any output*: a server on 127.0.0.1 echoes the key (and the
password in the base URL) in every form a message can carry it -- as it is, ``\\u``-escaped in JSON, URL-encoded,
HTML-escaped, inside a base64 blob, split across two lines, without its last characters, and straddling the
500-character cut -- through every path a server's words take (a 401's JSON message, a 503 body that is no JSON, an
error in a 200, an error inside a choice, a refusal). Each error's message, repr and traceback, the log of a
retrying call, the backend's repr and its identity hold no run of 8 or more consecutive characters of either
secret in any of those forms (decoded here independently of the backends' scrubbing).
"""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import traceback
import urllib.parse

import pytest

from semgrad.backends import anthropic, openai_compatible
from semgrad.core import LLMFailure, LLMRequest, Message
from semgrad.effects import RetryPolicy, retrying
from tests.backends.conftest import provider  # noqa: F401  (the server on 127.0.0.1)

KEY = "sk-LEAKCHECK+/=0123456789abcdefGHIJ"
PASSWORD = "pw-URLSECRET-42-hidden"


def forms(secret: str) -> dict[str, str]:
    """Every way the attack writes `secret` into a server's message (each at least 8 of its characters)."""
    return {
        "raw": secret,
        "unicode-escaped": "".join(f"\\u{ord(c):04x}" for c in secret),
        "url-encoded": urllib.parse.quote(secret, safe=""),
        "url-encoded-all": "".join(f"%{ord(c):02X}" for c in secret),
        "html-escaped": html.escape(secret),
        "html-entities": "".join(f"&#{ord(c)};" for c in secret),
        "base64-inside": base64.b64encode(f"Authorization: Bearer {secret} (sent)".encode()).decode(),
        "base64-urlsafe-inside": base64.urlsafe_b64encode(f"x-api-key={secret};".encode()).decode(),
        "two-lines": secret[:11] + "\n    " + secret[11:],
        "two-lines-crlf": secret[:5] + "\r\n" + secret[5:],
        "without-its-tail": secret[:-4],
        "without-its-head": secret[6:],
    }


def _windows(secret: str) -> list[str]:
    return [secret[i : i + 8] for i in range(len(secret) - 7)]


def _decodings(text: str) -> list[str]:
    """`text` read every way a reader could decode it back to the secret."""
    unicode = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), text)
    found = [text, unicode, urllib.parse.unquote(text), html.unescape(text)]
    found += [re.sub(r"\s*[\r\n]\s*", "", t) for t in list(found)]
    for blob in re.findall(r"[A-Za-z0-9+/_=-]{12,}", text):
        blob = blob.replace("-", "+").replace("_", "/").rstrip("=")
        for skip in range(4):
            piece = blob[skip:]
            piece = piece[: len(piece) // 4 * 4]
            try:
                found.append(base64.b64decode(piece).decode("latin-1"))
            except ValueError:
                pass
    return found


def leaked(text: str, secret: str) -> list[str]:
    """The 8-character runs of `secret` that `text` shows in any decoding."""
    decoded = _decodings(text)
    return [window for window in _windows(secret) if any(window in d for d in decoded)]


def paths(echo: str, which: str) -> list:
    """A scripted fault per path a server's words take into a message, each echoing `echo`."""
    straddling = "x" * 490 + echo  # the 500-character cut falls inside the echo
    found = [
        (401, {}, {"error": {"message": f"bad key: {echo}"}}),
        (401, {}, {"error": {"message": straddling}}),
        (503, {}, f"upstream said {echo}".encode()),
        (503, {}, ("y" * 290 + echo).encode()),  # a body that is no JSON is cut at 300
        (200, {}, {"error": {"message": straddling}}),
        (429, {"Retry-After": "0"}, {"error": {"message": f"slow down {echo}"}}),
    ]
    if which == "openai":
        choice = {"index": 0, "error": {"message": "z" * 290 + echo}, "message": {}}
        refusal = {"index": 0, "message": {"content": None, "refusal": "w" * 480 + echo}, "finish_reason": "stop"}
        found += [(200, {}, {"choices": [choice], "model": "m"}), (200, {}, {"choices": [refusal], "model": "m"})]
    return found


def build(which: str, base_url: str):
    base = base_url.replace("http://", f"http://alice:{PASSWORD}@")
    if which == "openai":
        return openai_compatible(base + "/v1", model="m", api_key=KEY, timeout=2)
    return anthropic("m", base_url=base, api_key=KEY, timeout=2)


def _json_bodies_keep_escapes(fault):
    """A JSON body written with every character \\u-escaped where the form is (json.dumps would decode nothing)."""
    status, headers, payload = fault
    if isinstance(payload, bytes):
        return fault
    return status, headers, json.dumps(payload).replace("\\\\u", "\\u").encode()


@pytest.mark.parametrize("which", ["openai", "anthropic"])
@pytest.mark.parametrize("secret", [KEY, PASSWORD], ids=["key", "url-password"])
async def test_no_form_of_a_secret_reaches_any_output(provider, which, secret, caplog):  # noqa: F811
    """Every form of the key (and of the URL's password), through every path a server's words take: no error
    message, repr, traceback, retrying's log, backend repr or identity shows 8 consecutive characters of it."""
    caplog.set_level(logging.DEBUG)
    llm = build(which, provider.base_url)
    outputs = {"repr": repr(llm), "identity": repr(llm.identity)}
    for form, echo in forms(secret).items():
        faults = [_json_bodies_keep_escapes(f) for f in paths(echo, which)]
        provider.script(*faults)
        for number, _ in enumerate(faults):
            stack = retrying(llm, RetryPolicy(max_attempts=1, base_delay=0))
            with pytest.raises(LLMFailure) as caught:
                await stack(LLMRequest((Message("user", "hi"),)))
            error = caught.value.error
            outputs[f"{form} #{number}"] = "\n".join(
                [error.message, repr(error), str(caught.value), "".join(traceback.format_exception(caught.value))]
            )
    assert provider.count == sum(len(paths("", which)) for _ in forms(secret))
    sent = str([headers for _, headers, _ in provider.requests])
    assert KEY in sent if which == "anthropic" else "Basic " in sent  # sent (Basic from the URL wins over Bearer)
    outputs["log"] = caplog.text
    found = {where: leaked(text, secret) for where, text in outputs.items()}
    assert not any(found.values()), {where: runs for where, runs in found.items() if runs}
    assert all("***" in outputs[f"{form} #0"] for form in forms(secret))  # each form was echoed, and hidden


def test_the_checker_sees_every_form():
    """The leak check above is no formality: each form, unscrubbed, shows runs of the secret to it."""
    for secret in (KEY, PASSWORD):
        for form, echo in forms(secret).items():
            assert leaked(f"said: {echo}.", secret), form
