"""Credentials that never show themselves: `Secret`, its scrubbing, and `check_key`.

A server may echo a key back in any form: as it is, JSON-escaped (``\\u0073\\u006b``), URL-encoded,
HTML-escaped (``&#115;``), inside a base64 blob (an ``Authorization`` header echoed as a whole), split
across two lines, or cut short. `Secret.scrub` hides *every run of 8 or more consecutive characters* of
the key (the whole key, when it is shorter) in any of these forms, so what is left of a key after a cut,
or beside a line break, is never enough to use it.

How: the text is read in several *views*, each a decoding of it that keeps, for every character, the
span of the original it came from: the text itself, its escapes decoded (JSON/Python ``\\u``, ``\\x``
and backslash escapes, ``%XX``, HTML character references) once and twice, and each of those with its
line breaks (and the spaces around them) left out. Every 8-character window of the key is looked up in
every view, and every window of its base64 encoding (at each of the three byte alignments a key can
have inside a longer string); the spans of the original that the matches come from are joined and each
replaced by ``***``.
"""

from __future__ import annotations

import base64
import re
from typing import Any

__all__ = ["MIN_RUN", "Secret", "check_key"]

#: The shortest run of a key's characters that `Secret.scrub` hides wherever it shows.
MIN_RUN = 8

_ESCAPE = re.compile(
    r"\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})|\\x([0-9a-fA-F]{2})|\\([nrtbf\"'\\/])"
    r"|%([0-9a-fA-F]{2})|&#([0-9]{1,7});?|&#[xX]([0-9a-fA-F]{1,6});?|&(amp|lt|gt|quot|apos);"
)
_BACKSLASHED = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_BREAK = re.compile(r"[ \t]*[\r\n\u2028\u2029\x0b\x0c\x85]+[ \t]*")

#: A view of a text: its characters, and for each the span ``[start, end)`` of the original it came from.
_View = tuple[str, list[int], list[int]]


class Secret:
    """A credential that never shows itself.

    Examples:
        >>> key = Secret("sk-live-123")
        >>> key, str(key), f"{key}", bool(key), key.reveal()
        (Secret('***'), '***', '***', True, 'sk-live-123')
    """

    __slots__ = ("_needles", "_value")

    def __init__(self, value: str | None) -> None:
        self._value = value or None
        self._needles = _needles(self._value) if self._value else ()

    def reveal(self) -> str | None:
        """The credential itself; use it only to build a request header."""
        return self._value

    def scrub(self, text: str) -> str:
        r"""`text` with every run of 8 or more of the credential's characters (all of it, when shorter) replaced by
        ``***``, as it is and in the forms messages show it (see the module's docstring).

        Examples:
            >>> Secret("sk-a/b\r").scrub("key sk-a/b\\r, sk-a%2Fb%0D, sk-a/b.")
            'key ***, ***, ***.'
            >>> key = Secret("sk-LIVE-0123456789")
            >>> key.scrub("a cut sk-LIVE-01, a tail LIVE-0123456789, \\u0073\\u006b-LIVE-0, sk-LI\n  VE-0123")
            'a cut ***, a tail ***, ***, ***'
        """
        if not self._needles or not text:
            return text
        spans = []
        for view, starts, ends in _views(text):
            for needle in self._needles:
                at = view.find(needle)
                while at >= 0:
                    spans.append((starts[at], ends[at + len(needle) - 1]))
                    at = view.find(needle, at + 1)
        return _masked(text, spans)

    def __bool__(self) -> bool:
        return self._value is not None

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret(None)"

    def __str__(self) -> str:
        return "***" if self._value else ""

    def __format__(self, spec: str) -> str:
        return str(self)

    def __reduce__(self) -> Any:
        if self._value:
            raise TypeError("an API key is not pickled; build the backend again where it is needed")
        return (Secret, (None,))


def _needles(value: str) -> tuple[str, ...]:
    """What `Secret.scrub` looks for: each `MIN_RUN`-character window of `value` (and of it stripped), and each
    window of their base64 encodings; longest first."""
    found: set[str] = set()
    for raw in {value, value.strip()}:
        if not raw:
            continue
        size = min(MIN_RUN, len(raw))
        found.update(raw[i : i + size] for i in range(len(raw) - size + 1))
        data = raw.encode("utf-8", "surrogatepass")
        if len(data) < MIN_RUN:  # too short for windows: its whole encoding, as the start of a blob has it
            whole = base64.b64encode(data).decode("ascii").rstrip("=")
            found.update((whole, whole.translate(_URLSAFE)))
            continue
        for i in range(len(data) - MIN_RUN + 1):
            for alignment in range(3):
                stable = _base64_inside(data[i : i + MIN_RUN], alignment)
                found.update((stable, stable.translate(_URLSAFE)))
    return tuple(sorted(found, key=len, reverse=True))


_URLSAFE = str.maketrans("+/", "-_")


def _base64_inside(data: bytes, alignment: int) -> str:
    """The base64 characters that `data` alone decides when it starts `alignment` bytes into a 3-byte group of a
    longer string: whatever comes before and after it, its base64 holds them.

    Examples:
        >>> import base64
        >>> inner = _base64_inside(b"sk-LIVE-0123", 1)  # "Bearer " is 7 bytes: 2 groups and 1 byte
        >>> inner in base64.b64encode(b"Bearer sk-LIVE-0123 and more").decode()
        True
    """
    encoded = base64.b64encode(bytes(alignment) + data).decode("ascii")
    first = -(-8 * alignment // 6)  # the first character whose 6 bits all lie in `data`
    last = 8 * (alignment + len(data)) // 6  # one past the last such character
    return encoded[first:last]


def _views(text: str) -> list[_View]:
    """`text` as it is and decoded once and twice, each with and without its line breaks; no view twice."""
    plain: _View = (text, list(range(len(text))), list(range(1, len(text) + 1)))
    once = _decoded(plain)
    twice = _decoded(once)
    found: list[_View] = []
    seen: set[str] = set()
    for view in (plain, once, twice):
        for candidate in (view, _unbroken(view)):
            if candidate[0] not in seen:
                seen.add(candidate[0])
                found.append(candidate)
    return found


def _decoded(view: _View) -> _View:
    """`view` with its escapes decoded, each decoded character spanning its whole escape."""
    text, starts, ends = view
    chars: list[str] = []
    new_starts: list[int] = []
    new_ends: list[int] = []
    done = 0
    for match in _ESCAPE.finditer(text):
        chars.extend(text[done : match.start()])
        new_starts.extend(starts[done : match.start()])
        new_ends.extend(ends[done : match.start()])
        chars.append(_unescaped(match))
        new_starts.append(starts[match.start()])
        new_ends.append(ends[match.end() - 1])
        done = match.end()
    chars.extend(text[done:])
    new_starts.extend(starts[done:])
    new_ends.extend(ends[done:])
    return "".join(chars), new_starts, new_ends


def _unescaped(match: re.Match[str]) -> str:
    hex4, hex8, hex2, char, percent, decimal, hexadecimal, named = match.groups()
    if char is not None:
        return _BACKSLASHED.get(char, char)
    if named is not None:
        return _NAMED[named]
    number = (
        next(int(found, 16) for found in (hex4, hex8, hex2, percent, hexadecimal) if found is not None)
        if (decimal is None)
        else int(decimal)
    )
    return chr(number) if number <= 0x10FFFF else "\ufffd"


def _unbroken(view: _View) -> _View:
    """`view` without its line breaks and the spaces around them (a key split across two lines is whole in it)."""
    text, starts, ends = view
    keep = [True] * len(text)
    for match in _BREAK.finditer(text):
        keep[match.start() : match.end()] = [False] * (match.end() - match.start())
    return (
        "".join(c for c, k in zip(text, keep, strict=True) if k),
        [s for s, k in zip(starts, keep, strict=True) if k],
        [e for e, k in zip(ends, keep, strict=True) if k],
    )


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each run of overlapping or touching `spans` replaced by ``***``."""
    if not spans:
        return text
    pieces = []
    done = 0
    start, end = None, 0
    for s, e in sorted(spans):
        if start is not None and s <= end:
            end = max(end, e)
            continue
        if start is not None:
            pieces += [text[done:start], "***"]
            done = end
        start, end = s, e
    pieces += [text[done:start], "***", text[end:]]
    return "".join(pieces)


def check_key(value: str | None, source: str) -> None:
    r"""Refuse a key with whitespace, control or non-ASCII characters in one line that never shows the key.

    A key read from a CRLF ``.env`` file ends in ``\r``: sent as a header it breaks
    the request, and the error would carry it.

    Examples:
        >>> check_key("sk-live-123", "OPENAI_API_KEY")
        >>> check_key("sk-live-123\r", "KEY")
        Traceback (most recent call last):
        ...
        ValueError: the API key from KEY or api_key= ends with a carriage return (\r; a CRLF .env file?): remove it
    """
    if not value:
        return
    for position, char in enumerate(value):
        if char.isascii() and char.isprintable() and not char.isspace():
            continue
        where = "starts" if position == 0 else "ends" if position == len(value) - 1 else "contains"
        if char in _NAMED_CHARS:
            what = _NAMED_CHARS[char]
        elif char.isspace():
            what = "a whitespace character"
        elif not char.isascii():
            what = "a non-ASCII character"
        else:
            what = "a control character"
        place = f"{where} {what}" if where == "contains" else f"{where} with {what}"
        raise ValueError(f"the API key from {source} or api_key= {place}: remove it")


_NAMED_CHARS = {
    "\r": "a carriage return (\\r; a CRLF .env file?)",
    "\n": "a line feed (\\n)",
    "\t": "a tab",
    " ": "a space",
}
