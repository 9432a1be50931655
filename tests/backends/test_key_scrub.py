"""`Secret.scrub`: no run of 8 of a key's characters survives in any form, and text without the key is left alone."""

from __future__ import annotations

import base64
import html
import string
import urllib.parse

from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends._key_scrub import Secret
from tests.faults.test_faults_key_forms import leaked

KEYS = st.text(string.ascii_letters + string.digits + "-_+/=.", min_size=8, max_size=60)
AROUND = st.text(string.ascii_letters + string.digits + " :;,.\n", max_size=30)
FORMS = {
    "raw": lambda key, cut: key,
    "unicode-escaped": lambda key, cut: "".join(f"\\u{ord(c):04x}" for c in key),
    "url-encoded": lambda key, cut: urllib.parse.quote(key, safe=""),
    "url-encoded-all": lambda key, cut: "".join(f"%{ord(c):02x}" for c in key),
    "html-entities": lambda key, cut: "".join(f"&#x{ord(c):x};" for c in key),
    "html-escaped": lambda key, cut: html.escape(key),
    "base64-inside": lambda key, cut: base64.b64encode(("p" * cut + key + "s").encode()).decode(),
    "two-lines": lambda key, cut: key[:cut] + "\r\n  " + key[cut:],
    "cut-short": lambda key, cut: key[: max(8, len(key) - cut)],
}


@given(KEYS, st.sampled_from(sorted(FORMS)), st.integers(0, 40), AROUND, AROUND)
def test_no_run_of_8_characters_of_the_key_survives_in_any_form(key, form, cut, before, after):
    """A key written in any form (raw, \\u-escaped, URL-encoded, HTML, base64 inside a longer string, split across
    two lines, cut short) anywhere in a text leaves no 8 consecutive characters of itself, decoded any way."""
    text = before + FORMS[form](key, cut % max(1, len(key))) + after
    assert not leaked(Secret(key).scrub(text), key)


@given(KEYS, st.text(" :;,!?()[]{}<>\n\t'\"", max_size=200))
def test_a_text_without_the_key_is_left_as_it_is(key, text):
    """Text sharing no character with the key is returned unchanged: scrubbing hides the key, nothing else."""
    assert Secret(key).scrub(text) == text
