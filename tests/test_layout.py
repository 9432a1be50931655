"""Layout rules for the product layers: no function there does several phases in one long body."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The packages where a function holds one phase: issue 30 asks for none over about 60 lines.
PACKAGES = ("cli", "experiments", "sweeps", "effects")

#: The most lines a function's body may take, its docstring left out.
MAX_BODY_LINES = 60


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of `node`'s body, from its first statement after the docstring to its last line."""
    body = node.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            body = body[1:]
    end = node.end_lineno or body[-1].lineno
    return end - body[0].lineno + 1


def function_lengths(path: Path) -> list[tuple[int, str]]:
    """Each function (methods and nested functions too) of the file at `path`: its body lines and its place."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(ROOT).as_posix()
    return [
        (body_lines(node), f"{where}:{node.lineno} {node.name}")
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def test_body_lines_counts_code_after_the_docstring() -> None:
    """A function's length counts the lines of its body after the docstring, nothing else."""
    source = 'def f(\n    a,\n):\n    """Doc.\n\n    More.\n    """\n    x = 1\n    return (\n        x\n    )\n'
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    assert body_lines(node) == 4


def test_no_long_functions_in_the_product_layers() -> None:
    """No function in semgrad/cli, experiments, sweeps or effects has a body over MAX_BODY_LINES lines."""
    found = [
        length
        for package in PACKAGES
        for path in sorted((ROOT / "semgrad" / package).rglob("*.py"))
        for length in function_lengths(path)
    ]
    long = sorted((item for item in found if item[0] > MAX_BODY_LINES), reverse=True)
    shown = "; ".join(f"{place} ({lines} lines)" for lines, place in long[:10])
    assert not long, f"{len(long)} functions over {MAX_BODY_LINES} lines, the longest: {shown}"
