"""Aggregation: how the partials a node receives become its one gradient.

Aggregators are small frozen values called as ``aggregator(node, role, partials)``
and return a `Program` (a pure one for concatenation and sums; an LLM call for
summaries). They see partials already ordered by source, so results are
deterministic whatever order replies arrived in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs
from returns.result import Success

from ._frozen import FrozenMap, to_frozen_map
from ._gradients import Partial
from ._parse import parse_tagged
from ._program import Program, ask, map_, pure
from ._prompts import render_summarize

__all__ = ["Concat", "Summarize", "Total", "concat", "concat_texts", "summarize", "total"]

TRUNCATED = "[... earlier feedback truncated]"
TRUNCATED_TAIL = "[... further feedback truncated]"


def concat_texts(
    texts: Sequence[str],
    *,
    dedupe: bool = True,
    max_chars: int | None = None,
    keep: Literal["recent", "first"] = "recent",
    separator: str = "\n\n",
) -> str:
    """Join texts in order, dropping exact repeats and bounding the size.

    With `max_chars`, the result is at most that long: ``keep="recent"`` keeps
    the last texts (dropping the earliest, marked), ``keep="first"`` keeps the
    first ones (cutting the tail, marked). A bound too small for the mark and a
    character of text cuts the text alone, unmarked.

    Examples:
        >>> concat_texts(["a", " a ", "b"])
        'a\\n\\nb'
        >>> concat_texts(["first", "second"], max_chars=40)
        'first\\n\\nsecond'
        >>> concat_texts(["x" * 40, "recent"], max_chars=45)
        '[... earlier feedback truncated]\\n\\nrecent'
    """
    items: list[str] = []
    for text in texts:
        text = text.strip()
        if text and not (dedupe and text in items):
            items.append(text)
    joined = separator.join(items)
    if max_chars is None or len(joined) <= max_chars:
        return joined
    if keep == "first":
        room = max_chars - len(TRUNCATED_TAIL) - 1
        return joined[:room].rstrip() + " " + TRUNCATED_TAIL if room > 0 else joined[: max(0, max_chars)]
    kept: list[str] = []
    budget = max_chars - len(TRUNCATED) - len(separator)
    for text in reversed(items):
        if len(text) + (len(separator) if kept else 0) > budget:
            break
        budget -= len(text) + (len(separator) if kept else 0)
        kept.insert(0, text)
    if not kept:
        last = items[-1]
        room = max_chars - len(TRUNCATED) - 1
        return TRUNCATED + " " + last[-room:] if room > 0 else last[-max_chars:] if max_chars > 0 else ""
    return separator.join([TRUNCATED, *kept])


@attrs.frozen
class Concat:
    """Ordered concatenation with de-duplication and an optional size bound (the default)."""

    dedupe: bool = True
    max_chars: int | None = None
    keep: Literal["recent", "first"] = "recent"
    separator: str = "\n\n"

    def __call__(self, node: str, role: str, partials: Sequence[Partial]) -> Program[str]:
        if len(partials) == 1:  # most nodes have one successor: `concat_texts` of one text, written out
            text = partials[0].text.strip()
            if self.max_chars is None or len(text) <= self.max_chars:
                return pure(text)
        texts = [p.text for p in partials]
        return pure(
            concat_texts(texts, dedupe=self.dedupe, max_chars=self.max_chars, keep=self.keep, separator=self.separator)
        )


@attrs.frozen
class Summarize:
    """An LLM summary (``purpose="summarize"``) when there is more than one distinct text.

    A failed or unreadable summary falls back to concatenation, with a visible note.
    """

    engine: str = "backward"
    fallback: Concat = Concat()
    options: FrozenMap[str, Any] = attrs.field(factory=FrozenMap, converter=to_frozen_map)

    def __call__(self, node: str, role: str, partials: Sequence[Partial]) -> Program[str]:
        texts = concat_texts([p.text for p in partials], separator="\x00").split("\x00")
        if len(texts) <= 1:
            return pure(texts[0] if texts else "")
        sample = partials[0].sample
        request = render_summarize(node, role, texts, sample=sample, engine=self.engine, options=self.options)

        def fold(reply: Any) -> str:
            if isinstance(reply, Success):
                parsed = parse_tagged(reply.unwrap().text, ["summary"])
                if isinstance(parsed, Success):
                    return parsed.unwrap()
                reason = parsed.failure().reason
            else:
                reason = f"the call failed ({reply.failure().kind})"
            joined = concat_texts(texts, dedupe=self.fallback.dedupe, max_chars=self.fallback.max_chars)
            return f"{joined}\n\n[summary unavailable: {reason}; feedback concatenated instead]"

        return map_(ask(request), fold)


@attrs.frozen
class Total:
    """The sum of numeric partials: reverse-mode autodiff's aggregation."""

    def __call__(self, node: str, role: str, partials: Sequence[Partial]) -> Program[Any]:
        return pure(sum((p.value for p in partials), 0.0))


def concat(*, dedupe: bool = True, max_chars: int | None = None, keep: Literal["recent", "first"] = "recent") -> Concat:
    """Ordered concatenation with de-duplication (the default aggregation)."""
    if max_chars is not None and max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    return Concat(dedupe, max_chars, keep)


def summarize(*, engine: str = "backward", options: Mapping[str, Any] | None = None) -> Summarize:
    """Aggregate with an LLM summary when several distinct texts arrive (`options`: its sampling options)."""
    return Summarize(engine, Concat(), FrozenMap(options or {}))


def total() -> Total:
    """Sum numeric partials (autodiff)."""
    return Total()
