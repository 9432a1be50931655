"""The prompts the core writes and the parsers that read the replies (public namespace).

Examples:
    >>> from semgrad.core.prompts import parse_tagged
    >>> parse_tagged("<result>7</result>", ["result"]).unwrap()
    '7'
"""

from ._parse import ParseError, parse_backward, parse_tagged
from ._prompts import render_forward

__all__ = ["ParseError", "parse_backward", "parse_tagged", "render_forward"]
