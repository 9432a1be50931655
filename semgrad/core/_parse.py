"""Reply parsing and the reply formats the parsers accept.

Parsers are pure and tolerant (tags in any case and spacing, labelled or
numbered sections, extra prose around them) and return `Result` values: a
reply they cannot read is a `Failure(ParseError)` that says why, never an
exception and never a silent "take the whole reply" fallback. The ``format_*``
functions write replies in the canonical form; `semgrad.backends.fake` uses them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import attrs
from returns.result import Failure, Result, Success

from ._frozen import FrozenMap, to_frozen_map
from ._requests import _success

__all__ = [
    "ParseError",
    "format_backward",
    "format_result",
    "format_tagged",
    "parse_backward",
    "parse_result",
    "parse_tagged",
]


@attrs.frozen
class ParseError:
    """A reply that could not be read, as data.

    Attributes:
        reason: What was wrong, in one sentence.
        missing: For backward replies, the targets with no usable feedback.
        found: For backward replies, the feedback that could be read.
    """

    reason: str
    missing: tuple[str, ...] = ()
    found: FrozenMap[str, str] = attrs.field(default=FrozenMap(), converter=to_frozen_map)


def format_tagged(tag: str, text: str) -> str:
    """``<tag>text</tag>``.

    Examples:
        >>> format_tagged("improved", "Be brief.")
        '<improved>\\nBe brief.\\n</improved>'
    """
    return f"<{tag}>\n{text}\n</{tag}>"


def parse_tagged(text: str, tags: Sequence[str], *, first: bool = False) -> Result[str, ParseError]:
    """The content of the last (with `first`, the first) non-empty ``<tag>...</tag>`` block for any of `tags`.

    Tags match in any case and with spaces inside the brackets; a final opening
    tag whose closing tag was cut off takes the rest of the reply.

    Examples:
        >>> parse_tagged("Sure. <Improved >Be brief.</improved>", ["improved"])
        <Success: Be brief.>
        >>> parse_tagged("Be brief.", ["improved"])
        <Failure: ParseError(reason='the reply has no <improved> block', missing=(), found=FrozenMap({}))>
        >>> parse_tagged("<improved> </improved>", ["improved"]).failure().reason
        'the <improved> block is empty'
        >>> parse_tagged("<improved>A</improved> or <improved>B</improved>", ["improved"], first=True)
        <Success: A>
    """
    names = "|".join(re.escape(t) for t in tags)
    closed = re.findall(rf"<\s*(?:{names})\s*>(.*?)<\s*/\s*(?:{names})\s*>", text, re.IGNORECASE | re.DOTALL)
    candidates = [c.strip() for c in closed]
    if not candidates:
        opened = re.search(rf"<\s*(?:{names})\s*>(.*)\Z", text, re.IGNORECASE | re.DOTALL)
        if opened:
            candidates = [opened.group(1).strip()]
    filled = [c for c in candidates if c]
    if not filled:
        shown = " or ".join(f"<{t}>" for t in tags)
        return Failure(ParseError(f"the {shown} block is empty" if candidates else f"the reply has no {shown} block"))
    return Success(filled[0] if first else filled[-1])


RESULT_TAG = "result"


def format_result(value: object, reasoning: str = "") -> str:
    """A forward reply in canonical form: the reasoning, then the result between tags.

    Examples:
        >>> format_result("(B)", "B is the only option left.")
        'B is the only option left.\\n<result>\\n(B)\\n</result>'
    """
    body = f"<{RESULT_TAG}>\n{value}\n</{RESULT_TAG}>"
    return f"{reasoning}\n{body}" if reasoning else body


def parse_result(text: str) -> Result[str, ParseError]:
    """The result of a forward reply: the content of its last ``<result>`` block.

    Tolerant as `parse_tagged` (any case, spaces in the tags, an unclosed last
    block); a reply without one is a `Failure`, never the whole reply.

    Examples:
        >>> parse_result("Two and two make four.\\n<result>4</result>")
        <Success: 4>
        >>> parse_result("< RESULT >4")
        <Success: 4>
        >>> parse_result("4").failure().reason
        'the reply has no <result> block'
        >>> parse_result("<result> </result>").failure().reason
        'the <result> block is empty'
    """
    end = text.rfind("</result>")
    if end > 0 and "<" not in text[end + 9 :]:  # the canonical form, without a regular expression
        start = text.rfind("<result>", 0, end)
        if start >= 0:
            value = text[start + 8 : end].strip()
            if value:
                return _success(value)
    return parse_tagged(text, (RESULT_TAG,))


FEEDBACK_TAG = "feedback"


def format_backward(feedback: Mapping[str, str]) -> str:
    """A backward reply in canonical form: one ``<feedback input="name">`` block per target.

    Examples:
        >>> print(format_backward({"hint_1": "Check the sign."}))
        <feedback input="hint_1">
        Check the sign.
        </feedback>
    """
    return "\n".join(f'<{FEEDBACK_TAG} input="{name}">\n{text}\n</{FEEDBACK_TAG}>' for name, text in feedback.items())


# A block is ``<feedback input="name">body</feedback>`` (any case, spaces, quotes, and
# ``for``/``name``/``target`` for ``input``); the body runs to the first closing tag. The
# body is written as an "unrolled loop" -- runs of non-``<`` characters, and ``<`` only when
# no closing tag starts there -- rather than a lazy ``(.*?)``, which retries the closing tag
# at every character: the same matches, several times faster on long replies.
_TAG_RE = re.compile(
    r"<\s*feedback\s+(?:input|for|name|target)\s*=\s*[\"']?\s*([^\"'>]+?)\s*[\"']?\s*>"
    r"([^<]*(?:<(?!\s*/\s*feedback\s*>)[^<]*)*)<\s*/\s*feedback\s*>",
    re.IGNORECASE,
)
#: A block exactly as `format_backward` writes it (a label without spaces or quotes, a body
#: without ``<``). Its two ``<`` are the only ones in a reply made of such blocks and prose, and
#: then `_TAG_RE` reads the same blocks, labels and bodies from it -- three times slower.
_CANONICAL_RE = re.compile(r"<feedback input=\"([^\s\"'<>]+)\">([^<]*)</feedback>")


def parse_backward(
    text: str, targets: Sequence[str], numbering: Mapping[int, str] | None = None
) -> Result[FrozenMap[str, str], ParseError]:
    """Read one feedback text per target from a backward reply.

    Accepts ``<feedback input="name">`` blocks, or sections headed by a target's
    name or number (``hint_1:``, ``**[2] hint_1** -``, ``2. hint_1:``, ``Input 2:``),
    in any case and with prose around them. `numbering` maps the numbers the prompt
    showed to input names. Empty feedback counts as missing.

    Examples:
        >>> parse_backward('<feedback input="b">More detail.</feedback>', ["b"])
        <Success: FrozenMap({'b': 'More detail.'})>
        >>> parse_backward("Thoughts first.\\n**B**: more detail\\n[1] A - fine", ["a", "b"], {1: "a", 2: "b"})
        <Success: FrozenMap({'a': 'fine', 'b': 'more detail'})>
        >>> parse_backward("a: ok", ["a", "b"]).failure().missing
        ('b',)
    """
    return _parse_backward(text, targets, _backward_lookup(targets, numbering))


def _backward_lookup(targets: Sequence[str], numbering: Mapping[int, str] | None = None) -> dict[str, str]:
    """The labels `parse_backward` accepts for each target: its name in any case, and the
    numbers `numbering` gives it. Callers that parse many replies for the same targets
    build it once and call `_parse_backward`."""
    lookup = {t.casefold(): t for t in targets}
    if numbering:
        for number, name in numbering.items():
            if name in targets:
                lookup.setdefault(str(number), name)
    return lookup


def _parse_backward(
    text: str, targets: Sequence[str], lookup: Mapping[str, str]
) -> Result[FrozenMap[str, str], ParseError]:
    """`parse_backward` with the labels (`_backward_lookup`) already built; `lookup` is only read."""
    found: dict[str, str] = {}
    get = lookup.get
    blocks = _CANONICAL_RE.findall(text)
    if not blocks or text.count("<") != 2 * len(blocks):  # not only canonical blocks: the general reading
        blocks = _TAG_RE.findall(text)
    for label, body in blocks:
        # The label as written is usually a key already (a name in lower case); otherwise it is
        # looked up in any case (a name such as "[Hint] B"), then as "[2]", "2".
        name = get(label) or get(label.casefold()) or get(label.strip("[]").casefold())
        if name is not None:
            body = body.strip()
            if body:
                found[name] = body
    if len(found) < len(targets):
        for name, body in _sections(text, lookup).items():
            found.setdefault(name, body)
    # `found`'s names are targets: when it has them all in order, it is the result as it is.
    ordered = found if tuple(found) == tuple(targets) else {t: found[t] for t in targets if t in found}
    if len(ordered) < len(targets):
        missing = tuple(t for t in targets if t not in found)
        if missing:
            reason = f"no feedback for {', '.join(map(repr, missing))}"
            return Failure(ParseError(reason, missing, FrozenMap(ordered)))
    return _success(FrozenMap(ordered))


def _sections(text: str, lookup: Mapping[str, str]) -> dict[str, str]:
    keys = sorted(lookup, key=len, reverse=True)
    alternatives = "|".join(re.escape(k) for k in keys)
    header = re.compile(
        rf"^[\s#*_>\-]*(?:(?:input|variable)\s+)?(?:\[\s*(?P<num>\d+)\s*\]|(?P<num2>\d+)[.)])?[\s*_`\"']*"
        rf"(?P<label>{alternatives})?[\s*_`\"']*(?:\([^)\n]*\))?[\s*_`\"']*(?:[:\-\u2013\u2014]|$)(?P<rest>.*)$",
        re.IGNORECASE,
    )
    sections: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []

    def close() -> None:
        body = "\n".join(lines).strip()
        if current is not None and body and current not in sections:
            sections[current] = body

    for line in text.splitlines():
        match = header.match(line)
        name = None
        if match:
            label = (match.group("label") or "").casefold()
            number = match.group("num") or match.group("num2") or ""
            name = lookup.get(label) if label else lookup.get(number)
            if label and number and lookup.get(number) not in (None, name):
                name = None
        if name is not None:
            close()
            current, lines = name, [match.group("rest").strip()]  # type: ignore[union-attr]
        elif current is not None:
            lines.append(line)
    close()
    return sections
