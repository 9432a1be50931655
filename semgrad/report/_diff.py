"""Word-level diffs of parameter text as HTML ``<del>`` / ``<ins>`` markup."""

from __future__ import annotations

import difflib
import re

from ._format import esc

__all__ = ["diff_html"]

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")

#: Above this many characters in all, diff by lines (word diffs grow quadratically).
_MAX_CHARS = 20_000


def _tokens(text: str, *, by_line: bool) -> list[str]:
    return text.splitlines(keepends=True) if by_line else _TOKEN.findall(text)


def diff_html(old: str, new: str) -> str:
    """The change from `old` to `new`: escaped text with deletions in ``<del>`` and
    insertions in ``<ins>``.

    Words, runs of white space and punctuation marks are the units compared; very
    long texts are compared line by line.

    Examples:
        >>> diff_html("Solve the problem.", "Solve the problem step by step.")
        'Solve the problem<ins> step by step</ins>.'
        >>> diff_html("a <b>", "a <i>")
        'a &lt;<del>b</del><ins>i</ins>&gt;'
    """
    by_line = len(old) + len(new) > _MAX_CHARS
    a, b = _tokens(old, by_line=by_line), _tokens(new, by_line=by_line)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    parts = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(esc("".join(a[i1:i2])))
        if op in ("delete", "replace"):
            parts.append(f"<del>{esc(''.join(a[i1:i2]))}</del>")
        if op in ("insert", "replace"):
            parts.append(f"<ins>{esc(''.join(b[j1:j2]))}</ins>")
    return "".join(parts)
