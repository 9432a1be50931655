"""Word-level diffs of parameter text as HTML ``<del>`` / ``<ins>`` markup, in bounded time.

`difflib`'s matcher is quadratic at worst (a prompt of 50,000 equal lines took
minutes), and the texts come from ``results.json``, which is untrusted. So the
common start and end are set aside, and the rest is matched by words, else by
lines, with the work counted before each step of the matcher: past `_MAX_WORK`
steps the attempt is given up. When both give up, the changed middle is shown
whole, as one deletion and one insertion, after a note that says so.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections import Counter
from collections.abc import Sequence

from ._format import esc

__all__ = ["diff_html"]

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")

#: The most steps of the matcher one attempt may take (well under a second of work).
_MAX_WORK = 1_000_000

_COARSE_NOTE = (
    '<span class="diff-note">(Too long to compare in detail: the part between the common start and end '
    "is shown whole, as removed, then added.)</span>\n"
)

#: A run of equal units: its start in the old text, in the new text, and its length.
Block = tuple[int, int, int]


def _tokens(text: str, *, by_line: bool) -> list[str]:
    return text.splitlines(keepends=True) if by_line else _TOKEN.findall(text)


def _common(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """The number of units `a` and `b` share at their start, and then (of the rest) at their end."""
    limit = min(len(a), len(b))
    head = 0
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    return head, tail


def _blocks(a: Sequence[str], b: Sequence[str], budget: int) -> list[Block] | None:
    """The blocks `SequenceMatcher` would match, or None when that takes more than `budget` steps.

    One search over ``a[alo:ahi]`` costs at most, per unit of `a` in it, one step plus
    the unit's occurrences in `b`: that is charged before each search.
    """
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    occurrences = Counter(b)
    cost = [0, *itertools.accumulate(occurrences[unit] + 1 for unit in a)]
    spent, blocks, pending = 0, [], [(0, len(a), 0, len(b))]
    while pending:
        alo, ahi, blo, bhi = pending.pop()
        spent += cost[ahi] - cost[alo] + (bhi - blo)
        if spent > budget:
            return None
        i, j, k = matcher.find_longest_match(alo, ahi, blo, bhi)
        if k:
            blocks.append((i, j, k))
            pending += [r for r in ((alo, i, blo, j), (i + k, ahi, j + k, bhi)) if r[0] < r[1] and r[2] < r[3]]
    return sorted(blocks)


def _marked(a: Sequence[str], b: Sequence[str], blocks: list[Block]) -> str:
    parts, i, j = [], 0, 0
    for ai, bj, size in [*blocks, (len(a), len(b), 0)]:
        if i < ai:
            parts.append(f"<del>{esc(''.join(a[i:ai]))}</del>")
        if j < bj:
            parts.append(f"<ins>{esc(''.join(b[j:bj]))}</ins>")
        parts.append(esc("".join(a[ai : ai + size])))
        i, j = ai + size, bj + size
    return "".join(parts)


def _coarse(old: str, new: str) -> str:
    a, b = _tokens(old, by_line=True), _tokens(new, by_line=True)
    head, tail = _common(a, b)
    return _COARSE_NOTE + _marked(a, b, [(0, 0, head), (len(a) - tail, len(b) - tail, tail)])


def diff_html(old: str, new: str) -> str:
    """The change from `old` to `new`: escaped text with deletions in ``<del>`` and
    insertions in ``<ins>``.

    Words, runs of white space and punctuation marks are the units compared; texts
    too long for that are compared line by line, and texts too long for lines show
    their changed middle whole, after a note that says so.

    Examples:
        >>> diff_html("Solve the problem.", "Solve the problem step by step.")
        'Solve the problem<ins> step by step</ins>.'
        >>> diff_html("a <b>", "a <i>")
        'a &lt;<del>b</del><ins>i</ins>&gt;'
        >>> diff_html("x\\n" * 2000, "y\\n" + "x\\n" * 1999 + "z\\n").startswith('<span class="diff-note">')
        True
    """
    for by_line in (False, True):
        a, b = _tokens(old, by_line=by_line), _tokens(new, by_line=by_line)
        head, tail = _common(a, b)
        middle = _blocks(a[head : len(a) - tail], b[head : len(b) - tail], _MAX_WORK)
        if middle is not None:
            inner = [(i + head, j + head, k) for i, j, k in middle]
            return _marked(a, b, [(0, 0, head), *inner, (len(a) - tail, len(b) - tail, tail)])
    return _coarse(old, new)
