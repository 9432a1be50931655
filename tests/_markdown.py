"""Run the Python code of a Markdown page, and check what it prints against the page.

A page's ```` ```python ```` blocks run in order in one namespace (like a notebook). A
```` ```text ```` block that directly follows a Python block is the exact output that block
prints: the page shows what the code computes, and a test fails when they drift apart.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import attrs

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


@attrs.frozen
class Block:
    """One Python block of a page, the line it starts on, and the output the page shows for it (or None)."""

    code: str
    line: int
    output: str | None


def python_blocks(text: str) -> list[Block]:
    """The Python blocks of a Markdown text, each with the ```text block right after it, if any."""
    fences = [
        (m.group(1).strip().split(" ")[0], m.group(2), text.count("\n", 0, m.start()) + 2, m.start(), m.end())
        for m in _FENCE.finditer(text)
    ]
    found = []
    for i, (language, code, line, _, end) in enumerate(fences):
        if language != "python":
            continue
        follows = i + 1 < len(fences) and fences[i + 1][0] == "text" and not text[end : fences[i + 1][3]].strip()
        found.append(Block(code, line, fences[i + 1][1] if follows else None))
    return found


def run_page(path: Path, namespace: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every Python block of the page at `path`; assert each shown output is what the block prints."""
    namespace = {"__name__": f"docs_{path.stem.replace('-', '_')}"} if namespace is None else namespace
    for block in python_blocks(path.read_text("utf-8")):
        printed = io.StringIO()
        code = compile("\n" * (block.line - 1) + block.code, str(path), "exec")
        with contextlib.redirect_stdout(printed):
            exec(code, namespace)  # noqa: S102
        if block.output is not None:
            shown, got = _lines(block.output), _lines(printed.getvalue())
            assert got == shown, f"{path.name}:{block.line}: the block prints\n{got}\nbut the page shows\n{shown}"
    return namespace


def _lines(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())
