"""One deterministic fake, answered the same way for the official code and for semgrad.

Each reply is a function of what the prompt *shows*, reduced to a few facts that both
implementations' prompts carry whatever their wording: which item it is about, which
``SKILL-n`` and ``FIX-n`` tokens appear in it, and whether it shows an expected answer.

* A forward call on a hint (analysis) node writes notes that name the item and repeat the
  skill tokens its prompt shows (those of its instruction).
* A forward call on the final node answers an item right unless the item needs a skill
  whose token the prompt does not show (in the instruction or a hint's notes), or the
  item is *fragile* and the prompt shows ``CAREFUL``.
* A backward call tells one hint per item (chosen by the skill number) to ``add FIX-n``
  when it sees every hint at once; a call that sees one hint alone tells that hint.
* A rewrite appends ``SKILL-n`` for every ``FIX-n`` it is shown; a rewrite of the final
  node that is shown an expected answer also appends ``CAREFUL``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

SKILL = re.compile(r"\bSKILL-(\d+)\b")
FIX = re.compile(r"\bFIX-(\d+)\b")
#: The reasoning a forward reply gives before its tagged output; only the output flows on.
REASONING = "Thinking it through, one step at a time."


def shows(text: str, piece: str) -> bool:
    """Whether `text` shows `piece`: every non-empty line of it, whatever the indentation."""
    lines = [line.strip() for line in str(piece).splitlines() if line.strip()]
    return bool(lines) and all(line in text for line in lines)


@attrs.frozen
class Item:
    """One dataset item as both sides see it.

    Attributes:
        key: semgrad's example id.
        text: The question (BBH) or the record as the official loader writes it (LIAR).
        target: The expected answer.
        fields: semgrad's inputs.
        marker: A line of `text` that identifies the item in any prompt.
    """

    key: str
    text: str
    target: str
    fields: Mapping[str, str]
    marker: str


@attrs.frozen
class Call:
    """One recorded LLM call: its phase, purpose, node kind (or name), item and full text."""

    phase: str
    purpose: str
    node: str
    item: Item | None
    text: str


def _flip(answer: str) -> str:
    return {"Yes": "No", "No": "Yes", "True": "False", "False": "True"}.get(answer, f"not {answer}")


@attrs.frozen
class World:
    """The shared fake's rules (see the module doc).

    Attributes:
        needs: The skill number each item needs, by key (absent: none).
        fragile: Keys of the items that ``CAREFUL`` makes wrong.
        hints: How many hint nodes feed the final node.
    """

    needs: Mapping[str, int]
    fragile: frozenset[str] = frozenset()
    hints: int = 2

    def find_item(self, text: str, items: Sequence[Item]) -> Item | None:
        """The one item whose marker `text` shows (None when none or several do).

        A marker that only shows because a longer one holds it (a question whose first line begins
        another's: BBH navigate has five) does not count: the longer one is the item shown."""
        found = [i for i in items if i.marker in text]
        if len(found) > 1:
            found = [i for i in found if not any(i.marker in j.marker and i.marker != j.marker for j in found)]
        if not found:  # a prompt that shows no record but a hint's notes, which name their item
            found = [i for i in items if f"Notes ({i.key})" in text]
        return found[0] if len(found) == 1 else None

    # --- values -----------------------------------------------------------------------------

    def notes(self, item: Item | None, text: str) -> str:
        """A hint node's output: the skill tokens its prompt shows."""
        skills = sorted(set(SKILL.findall(text)), key=int)
        about = f" ({item.key})" if item is not None else ""
        return f"Notes{about}: " + (" ".join(f"SKILL-{n}" for n in skills) if skills else "no method")

    def answer(self, item: Item, text: str) -> str:
        """The final node's answer for `item` given what its prompt shows."""
        need = self.needs.get(item.key)
        wrong = need is not None and str(need) not in SKILL.findall(text)
        wrong = wrong or (item.key in self.fragile and "CAREFUL" in text)
        return _flip(item.target) if wrong else item.target

    def partials(self, item: Item, count: int, *, alone: bool) -> list[str]:
        """Backward feedback for each of `count` hints (`alone`: the call sees one hint only)."""
        need = self.needs.get(item.key)
        if need is None:
            return ["keep this hint"] * count
        if alone:
            return [f"add FIX-{need}"] * count
        return [f"add FIX-{need}" if i == need % count else "keep this hint" for i in range(count)]

    def improved(self, current: str, text: str, *, final: bool) -> str:
        """A rewrite's new instruction."""
        added = [f"SKILL-{n}" for n in sorted(set(FIX.findall(text)), key=int) if f"SKILL-{n}" not in current]
        if final and ("expected output" in text.casefold() or "answer should be" in text.casefold()):
            added += [] if "CAREFUL" in current else ["CAREFUL"]
        return " ".join([current.strip(), *added]).strip()

    # --- the official side ------------------------------------------------------------------

    def official_reply(self, call: Call) -> str:
        """The reply text the official code parses."""
        text = call.text
        liar = text.startswith("# Task") or "desired answer is" in text
        if call.purpose == "forward":
            if call.node == "hint" and liar:
                return self.notes(call.item, text)
            if call.node == "hint":
                return f"{REASONING}\n<output statement>{self.notes(call.item, text)}</output statement>"
            assert call.item is not None
            value = self.answer(call.item, text)
            if liar:  # the official LIAR prompt asks for the label alone, and its reply is passed on whole
                return value
            return f"{REASONING}\n<output statement>{value}</output statement>"
        if call.purpose == "backward":
            assert call.item is not None
            alone = "One of the hints is:" in text
            count = 1 if alone else (5 if liar else self.hints)
            lines = self.partials(call.item, count, alone=alone)
            return lines[0] if alone else "\n".join(f"Hint {i + 1}: {line}" for i, line in enumerate(lines)) + "\n"
        current = re.search(r'My current prompt is:\n"(.*?)"\n', text, re.S)
        assert current is not None, text[:200]
        final = "Consider the following hints:" in text or "# Hints" in text
        return f"Thinking.\n<prompt>{self.improved(current.group(1), text, final=final)}</prompt>"


def piece_lines(values: Sequence[Any]) -> list[str]:
    """The non-empty lines of each value, for `shows` checks."""
    return [line.strip() for v in values for line in str(v).splitlines() if line.strip()]
