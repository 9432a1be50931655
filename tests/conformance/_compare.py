"""Comparing recorded calls: counts per phase, and the information each official prompt shows."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from ._world import FIX, REASONING, SKILL, Call, Item

_NOTES = re.compile(r"Notes[ (][^\n]*")
_ATTEMPT = re.compile(r"Output attempt in response to the task:\n\t([^\n]*)|Answered: ([^\n]*)")


def phase_index(phase: str) -> int:
    """The iteration a phase belongs to; the official initial forward counts in iteration 0 (as ours does)."""
    return 0 if phase == "initial" else int(phase.rsplit(" ", 1)[1])


def calls_per_iteration(calls: Sequence[Call]) -> list[Counter]:
    """Calls by purpose, one Counter per iteration."""
    result: list[Counter] = []
    for call in calls:
        i = phase_index(call.phase)
        while len(result) <= i:
            result.append(Counter())
        result[i][call.purpose] += 1
    return result


def pieces(call: Call, items: Sequence[Item]) -> list[str]:
    """What an official prompt shows that ours must show too: the item's question or record
    fields, every hint output, the answer attempt and the expected answer (as text)."""
    found = [m.group(0) for m in _NOTES.finditer(call.text)]
    shown = [i for i in items if i.marker in call.text]
    for item in shown:
        found += [v for v in item.fields.values()]
        if call.purpose != "forward" and any(
            f in call.text for f in (f'"{item.target}"', f"be {item.target}.", f"answer is {item.target}.")
        ):
            found.append(item.target)
    attempt = _ATTEMPT.search(call.text)
    if attempt:
        found.append((attempt.group(1) or attempt.group(2)).strip())
    return found


def tokens(text: str) -> tuple[frozenset[str], frozenset[str], bool]:
    """The instruction and feedback content the fake reads: skill tokens, fix tokens, CAREFUL."""
    return frozenset(SKILL.findall(text)), frozenset(FIX.findall(text)), "CAREFUL" in text


def assert_same_information(official: Sequence[Call], ours: Sequence[Call]) -> None:
    """Every official call has a semgrad call of the same iteration, purpose and node kind, about the
    same item, that shows each of its `pieces` and the same instruction and feedback tokens."""
    items = list({c.item.key: c.item for c in [*official, *ours] if c.item is not None}.values())
    for theirs in official:
        wanted = pieces(theirs, items)
        candidates = [
            c
            for c in ours
            if phase_index(c.phase) == phase_index(theirs.phase)
            and c.purpose == theirs.purpose
            and (c.node == theirs.node or theirs.node == "param")
            and (theirs.item is None or (c.item is not None and c.item.key == theirs.item.key))
        ]
        assert candidates, f"no semgrad {theirs.purpose} call in {theirs.phase} for {theirs.node}"
        if REASONING not in theirs.text:  # the official code passes on the tagged output, not the reasoning
            shown = [c for c in candidates if REASONING in c.text]
            assert not shown, f"{theirs.phase}, {theirs.purpose}: semgrad passes on a forward reply's reasoning"
        matching = [c for c in candidates if tokens(c.text) == tokens(theirs.text) and all(p in c.text for p in wanted)]
        if not matching:
            best = candidates[0]
            missing = [p for p in wanted if p not in best.text]
            raise AssertionError(
                f"{theirs.phase}, {theirs.purpose} ({theirs.node}): no semgrad prompt shows all of it; "
                f"e.g. missing {missing[:3]}, tokens official {tokens(theirs.text)} vs ours {tokens(best.text)}"
            )
