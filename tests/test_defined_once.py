"""Each thing the product says is written in one place: a second copy drifts from the first (issue 30, section 10)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _modules(root: Path = ROOT) -> dict[str, ast.Module]:
    return {
        path.relative_to(root).as_posix(): ast.parse(path.read_text("utf-8"))
        for path in sorted((root / "semgrad").rglob("*.py"))
    }


def _top_level_names(tree: ast.Module) -> Iterator[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id


def _defines_constant(name: str) -> Callable[[ast.Module], int]:
    return lambda tree: sum(1 for found in _top_level_names(tree) if found == name)


def _defines_function(name: str) -> Callable[[ast.Module], int]:
    return lambda tree: sum(
        1 for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
    )


def _per_million_divisions(tree: ast.Module) -> int:
    """Divisions by a million: prices are USD per million tokens, so this is the cost arithmetic."""
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and isinstance(node.right, ast.Constant)
        and node.right.value == 1_000_000
    )


def _texts_containing(fragment: str) -> Callable[[ast.Module], int]:
    return lambda tree: sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and fragment in node.value
    )


#: What must be written once, and the module that holds it.
ONCE = {
    "the paper's published figures (PUBLISHED)": (_defines_constant("PUBLISHED"), "semgrad/report/_summary.py"),
    "the cost estimate (estimate_cost)": (_defines_function("estimate_cost"), "semgrad/experiments/_prices.py"),
    "the cost arithmetic (tokens times USD per million)": (_per_million_divisions, "semgrad/effects/_accounting.py"),
    "TextGrad's view of one LLM call (the <system_prompt> block)": (
        _texts_containing("<system_prompt>"),
        "semgrad/core/_textgrad.py",
    ),
    "HTML escaping (esc)": (_defines_function("esc"), "semgrad/report/_format.py"),
    "a score as a percentage (percent)": (_defines_function("percent"), "semgrad/report/_format.py"),
    "the 0-100 % grid of the charts": (_texts_containing('class="grid"'), "semgrad/report/_chart.py"),
    "the pages' content security policy": (_texts_containing("default-src"), "semgrad/report/_style.py"),
    "the head of a self-contained page": (_texts_containing('<html lang="en"><head>'), "semgrad/report/_style.py"),
}


@pytest.mark.parametrize("what", list(ONCE))
def test_each_thing_is_defined_in_exactly_one_place(what):
    """The thing is written once in all of semgrad/, in the module named for it (others import it from there)."""
    count, home = ONCE[what]
    places = {path: n for path, tree in _modules().items() if (n := count(tree))}
    assert places == {home: 1}, f"{what} is written in {places}; keep one, in {home}, and import it elsewhere"


def test_the_scan_sees_a_second_copy(tmp_path):
    """A constant assigned in two modules, or a function defined in two, is seen in both: the check can fail."""
    (tmp_path / "semgrad").mkdir()
    (tmp_path / "semgrad" / "a.py").write_text("PUBLISHED = {}\ndef esc(x):\n    return x / 1e6\n")
    (tmp_path / "semgrad" / "b.py").write_text("PUBLISHED: dict = {}\nclass C:\n    def esc(self): ...\n")
    modules = _modules(tmp_path)
    assert {p: _defines_constant("PUBLISHED")(t) for p, t in modules.items()} == {"semgrad/a.py": 1, "semgrad/b.py": 1}
    assert {p: _defines_function("esc")(t) for p, t in modules.items()} == {"semgrad/a.py": 1, "semgrad/b.py": 1}
    assert _per_million_divisions(modules["semgrad/a.py"]) == 1
