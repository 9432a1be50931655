"""The HTTP backends' pure helpers: status mapping, Retry-After parsing, secrets."""

from __future__ import annotations

import email.utils
import pickle
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends._http import Secret, retry_after_seconds, status_error

RETRYABLE = {"rate_limit", "server", "timeout", "conflict"}


@given(st.integers(400, 599))
def test_every_error_status_maps_to_one_documented_kind(status):
    """Each 4xx/5xx maps to one documented kind, retryable exactly for the transient ones."""
    error = status_error(status, {}, "", key_env="OPENAI_API_KEY", has_key=True)
    expected = (
        "auth"
        if status in (401, 403)
        else "timeout"
        if status == 408
        else "conflict"
        if status == 409
        else "rate_limit"
        if status == 429
        else "server"
        if status >= 500
        else "bad_request"
    )
    assert error.kind == expected
    assert error.retryable == (expected in RETRYABLE)
    assert str(status) in error.message


@given(st.floats(0, 1e6, allow_nan=False))
def test_retry_after_in_seconds_is_read_as_is(seconds):
    """A numeric Retry-After is that many seconds."""
    assert retry_after_seconds({"Retry-After": repr(seconds)}) == pytest.approx(seconds)


@given(st.integers(0, 10**6), st.integers(1_600_000_000, 1_900_000_000))
def test_retry_after_as_an_http_date_is_the_time_until_then(delta, now):
    """An HTTP-date Retry-After is the seconds from now until that date (never negative)."""
    header = email.utils.formatdate(now + delta, usegmt=True)
    assert retry_after_seconds({"retry-after": header}, now=now) == pytest.approx(delta)
    assert retry_after_seconds({"retry-after": header}, now=now + delta + 5) == 0.0


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Tokyo"])
def test_retry_after_as_an_http_date_without_a_zone_is_in_gmt(monkeypatch, zone):
    """An HTTP date with "-0000" or no zone is read in GMT, as HTTP dates are, not in the machine's time zone."""
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        for header in ("Wed, 21 Oct 2015 07:28:10 -0000", "Wed, 21 Oct 2015 07:28:10"):
            assert retry_after_seconds({"retry-after": header}, now=1445412480.0) == 10.0
    finally:
        monkeypatch.undo()
        time.tzset()


def test_retry_after_ms_wins_and_garbage_is_ignored():
    """retry-after-ms is preferred when present; an unreadable Retry-After gives None."""
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"Retry-After": "soon"}) is None


@given(st.text(min_size=1))
def test_a_secret_never_shows_itself(value):
    """repr, str and format of a Secret never contain its value (unless the value is the mask itself)."""
    secret = Secret(value)
    shown = [repr(secret), str(secret), f"{secret}", f"{secret!r}", format(secret)]
    assert secret.reveal() == value
    if value not in "Secret('***')":
        assert all(value not in text for text in shown)
        assert value not in secret.scrub(f"key={value};")


def test_a_secret_refuses_to_be_pickled_unless_empty():
    """Pickling a key raises TypeError; an empty Secret pickles."""
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(Secret("sk-1"))
    assert not pickle.loads(pickle.dumps(Secret(None)))


@given(
    odd=st.one_of(st.text(max_size=4), st.integers(max_value=-1), st.booleans(), st.floats(), st.lists(st.integers()))
)
def test_a_replys_odd_token_count_is_left_out_never_a_failure_or_a_negative_charge(odd):
    """A usage count that is no whole number of tokens, 0 or more, is left out of the reply's usage (its estimate then
    stands), on both backends; the reply is still an answer, and the other count is kept."""
    from semgrad.backends import anthropic, openai_compatible

    openai = openai_compatible("http://127.0.0.1:9/v1", model="m")
    reply = openai.parse(
        {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": odd, "completion_tokens": 3}},
        "m",
    )  # fmt: skip
    assert reply.text == "hi" and reply.usage.get("output_tokens") == 3
    assert "input_tokens" not in reply.usage or (reply.usage["input_tokens"] == odd and odd >= 0)
    claude = anthropic("c", api_key="k", base_url="http://127.0.0.1:9")
    reply = claude.parse(
        {"content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 5, "output_tokens": odd}}, "c"
    )
    assert reply.text == "hi" and reply.usage.get("input_tokens") == 5
    assert "output_tokens" not in reply.usage or (reply.usage["output_tokens"] == odd and odd >= 0)
