"""Escaping and number formatting for the run report.

Every value that comes from ``results.json`` or ``config.json`` is untrusted text
(it was written by LLMs and read from datasets). It reaches the page only through
`esc`, which HTML-escapes it (quotes included) and replaces characters no HTML
document should contain, or through `isolate`, which also puts it in a ``<bdi>``
element when it holds a character that can reorder text: bidirectional overrides
(U+202E makes what follows read right to left) and right-to-left letters cannot
reorder the page around it. Every page -- the run report, the
compare page and ``sweep.html`` -- shows user text with `isolate`, and `esc` itself
closes any override where an element cannot be used (attributes, SVG, titles).
The number helpers accept anything and show a dash for what is not a finite
number, so a malformed field can never break the page.
"""

from __future__ import annotations

import html
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

__all__ = [
    "DASH",
    "as_list",
    "as_mapping",
    "as_text",
    "count",
    "esc",
    "isolate",
    "isolate_html",
    "money",
    "needs_isolation",
    "number",
    "percent",
    "points",
]

#: C0 controls except tab / line feed / carriage return, DEL, and lone surrogates.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")

DASH = "\u2014"

#: Bidirectional embeddings and overrides (LRE, RLE, PDF, LRO, RLO): they reorder the text after them.
_OVERRIDES = re.compile("[\u202a-\u202e]")
#: Bidirectional isolates (LRI, RLI, FSI, PDI): a stray PDI in user text could close the isolate `esc` opens.
_ISOLATES = re.compile("[\u2066-\u2069]")


def as_text(value: Any) -> str:
    """`value` as display text: strings as they are, None as "", anything else as JSON.

    Examples:
        >>> as_text("Solve it.")
        'Solve it.'
        >>> as_text({"k": [1, 2]})
        '{"k": [1, 2]}'
        >>> as_text(None)
        ''
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


def esc(value: Any) -> str:
    """`value` as text that is safe inside an element or a double-quoted attribute.

    Text holding a bidirectional embedding or override (U+202A-U+202E) comes back between
    FIRST STRONG ISOLATE and POP DIRECTORY ISOLATE (U+2068, U+2069): the plain-text form of
    ``unicode-bidi: isolate``, which ends the override where the value ends even where no
    element can hold it (an attribute, an SVG label, a title). Isolate characters in the
    value itself are replaced, so that none can close that isolate early.

    Examples:
        >>> esc('"><img src=x onerror=alert(1)>')
        '&quot;&gt;&lt;img src=x onerror=alert(1)&gt;'
        >>> esc("a\\x00b")
        'a\\ufffdb'
        >>> esc("abc\\u202eevil") == "\\u2068abc\\u202eevil\\u2069"
        True
        >>> esc("x\\u2069\\u202e") == "\\u2068x\\ufffd\\u202e\\u2069"
        True
    """
    text = _ISOLATES.sub("\ufffd", _UNPRINTABLE.sub("\ufffd", as_text(value)))
    if _OVERRIDES.search(text):
        text = f"\u2068{text}\u2069"
    return html.escape(text, quote=True)


#: Bidirectional classes that can reorder text: right-to-left letters, Arabic digits, and the controls.
_REORDERING = frozenset({"R", "AL", "AN", "LRE", "LRO", "RLE", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})


def needs_isolation(text: str) -> bool:
    """Whether `text` holds a character that can reorder the text around it (an override such as U+202E, a
    right-to-left letter, an Arabic digit). Text without one is laid out left to right whether it is in a
    ``<bdi>`` or not, so `isolate` leaves it bare.

    Examples:
        >>> needs_isolation("gsm8k"), needs_isolation("a\\u202eb"), needs_isolation("\\u05e9\\u05dc\\u05d5\\u05dd")
        (False, True, True)
    """
    return not text.isascii() and any(unicodedata.bidirectional(c) in _REORDERING for c in text)


def isolate_html(markup: str, text: str) -> str:
    """`markup`, the escaped HTML that shows the user text `text`, in a ``<bdi>`` element when `text` needs one
    (see `needs_isolation`): its direction, and any override it holds, stay inside the element."""
    return f"<bdi>{markup}</bdi>" if needs_isolation(text) else markup


def isolate(value: Any) -> str:
    """`value` escaped (see `esc`) for an element's content, isolated: inside a ``<bdi>`` element when it holds
    a character that can reorder the text around it (U+202E, a right-to-left letter). Every page shows user text
    -- task and run names, parameters, outputs, errors -- through it.

    Examples:
        >>> isolate("<b>gsm8k</b>")
        '&lt;b&gt;gsm8k&lt;/b&gt;'
        >>> isolate("gsm8k\\u202e 0.1") == "<bdi>\\u2068gsm8k\\u202e 0.1\\u2069</bdi>"
        True
    """
    return isolate_html(esc(value), as_text(value))


def number(value: Any) -> float | None:
    """`value` as a finite float, or None when it is not a number (booleans are not).

    Examples:
        >>> number(3), number(0.5), number("0.5"), number(True), number(float("nan")), number(10**400)
        (3.0, 0.5, None, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        result = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return result if math.isfinite(result) else None


def percent(value: Any) -> str:
    """A score in [0, 1] as a percentage with one decimal, or a dash.

    Examples:
        >>> percent(0.932), percent(1), percent(None)
        ('93.2 %', '100.0 %', '—')
    """
    found = number(value)
    return DASH if found is None else f"{found * 100:.1f} %"


def points(value: Any) -> str:
    """A difference of two scores in percentage points, signed, or a dash.

    Examples:
        >>> points(0.1), points(-0.025), points(None)
        ('+10.0 pp', '-2.5 pp', '—')
    """
    found = number(value)
    return DASH if found is None else f"{found * 100:+.1f} pp"


def count(value: Any) -> str:
    """A whole number with thousands separators, or a dash.

    Examples:
        >>> count(12345), count(2.0), count(2.5), count("7")
        ('12,345', '2', '—', '—')
    """
    found = number(value)
    return f"{int(found):,}" if found is not None and found.is_integer() else DASH


def money(value: Any) -> str:
    """A cost in US dollars (four decimals below one cent), or "not known".

    Examples:
        >>> money(0.12), money(0.0012), money(None)
        ('$0.12', '$0.0012', 'not known')
    """
    found = number(value)
    if found is None:
        return "not known"
    return f"${found:,.4f}" if 0 < abs(found) < 0.01 else f"${found:,.2f}"


def as_mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a JSON object, else an empty one.

    Examples:
        >>> as_mapping([1]), as_mapping({"a": 1})
        ({}, {'a': 1})
    """
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    """`value` if it is a JSON array, else an empty list.

    Examples:
        >>> as_list("abc"), as_list((1, 2))
        ([], [1, 2])
    """
    return list(value) if isinstance(value, (list, tuple)) else []
