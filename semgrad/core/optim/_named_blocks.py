"""Replies with one named block per item: ``<tag name="item">text</tag>``.

The baselines that return several values in one call (OptoPrime's new value for
every parameter, COPRO's batch of candidate instructions) ask for this form; the
request's ``targets`` name the items the reply must answer for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from returns.result import Failure, Result, Success

from .._frozen import FrozenMap
from .._parse import ParseError

__all__ = ["named_form", "format_named", "parse_named"]


def named_form(tag: str, names: Sequence[str], what: str) -> str:
    """The reply form a prompt shows: one block per name.

    Examples:
        >>> print(named_form("improved", ["a"], "the new text"))
        <improved name="a">
        the new text
        </improved>
    """
    return "\n".join(f'<{tag} name="{n}">\n{what}\n</{tag}>' for n in names)


def format_named(tag: str, values: Mapping[str, str]) -> str:
    """A reply in the canonical named-block form.

    Examples:
        >>> format_named("improved", {"a": "Be brief."})
        '<improved name="a">\\nBe brief.\\n</improved>'
    """
    return "\n".join(f'<{tag} name="{n}">\n{v}\n</{tag}>' for n, v in values.items())


def parse_named(text: str, tag: str, names: Sequence[str]) -> Result[FrozenMap[str, str], ParseError]:
    """The non-empty blocks of a named-block reply for the names asked for, in the order asked.

    Tags and names match in any case and spacing; blocks for unknown names are
    ignored; a later block for the same name wins. A reply with no usable block
    at all is a `Failure`; a reply that answers some names only is a `Success`
    with those (the caller decides what a missing name means).

    Examples:
        >>> parse_named('<Improved name="b">x</improved> <improved name=a>y</improved>', "improved", ["a", "b"])
        <Success: FrozenMap({'a': 'y', 'b': 'x'})>
        >>> parse_named("no blocks", "improved", ["a"]).failure().reason
        'the reply has no <improved name="..."> block for a'
    """
    pattern = re.compile(
        rf"<\s*{re.escape(tag)}\s+(?:name|for|input|target)\s*=\s*[\"']?\s*([^\"'>]+?)\s*[\"']?\s*>"
        rf"(.*?)<\s*/\s*{re.escape(tag)}\s*>",
        re.IGNORECASE | re.DOTALL,
    )
    lookup = {n.casefold(): n for n in names}
    found: dict[str, str] = {}
    for label, body in pattern.findall(text):
        name = lookup.get(label.strip().casefold())
        if name is not None and body.strip():
            found[name] = body.strip()
    if not found:
        missing = tuple(names)
        return Failure(ParseError(f'the reply has no <{tag} name="..."> block for {", ".join(missing)}', missing))
    return Success(FrozenMap((n, found[n]) for n in names if n in found))
