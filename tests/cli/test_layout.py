"""The command line's shape: one module per subcommand, and no long function in semgrad/cli/."""

from __future__ import annotations

import ast
from pathlib import Path

from semgrad.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "semgrad" / "cli"

#: The most lines a function of semgrad/cli/ may take (its def line to its last line, nested functions included).
LONGEST = 60


def _long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    """Each function in `source` longer than `limit` lines, with its length (end_lineno - lineno + 1)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > limit:
                found.append((node.name, length))
    return found


def test_no_function_in_the_cli_package_is_longer_than_60_lines():
    """Every function in semgrad/cli/*.py, nested ones too, spans at most 60 lines."""
    modules = sorted(CLI.glob("*.py"))
    assert len(modules) > 1, "semgrad/cli/ is not a package of modules"
    long = {str(p.relative_to(ROOT)): _long_functions(p.read_text("utf-8"), LONGEST) for p in modules}
    assert not {path: found for path, found in long.items() if found}


def test_the_length_rule_counts_from_def_to_last_line_and_sees_nested_functions():
    """The rule finds a 61-line function, passes a 60-line one, and sees a long function nested in a short one."""

    def body(lines: int, indent: str = "    ") -> str:
        return "".join(f"{indent}x{i} = {i}\n" for i in range(lines - 1))

    assert _long_functions("def f():\n" + body(61), LONGEST) == [("f", 61)]
    assert _long_functions("def f():\n" + body(60), LONGEST) == []
    nested = "class C:\n    def m(self):\n        async def inner():\n" + body(61, " " * 12)
    assert [name for name, _ in _long_functions(nested, LONGEST)] == ["m", "inner"]


def test_each_subcommand_is_handled_by_its_own_module():
    """`semgrad X` is handled by the function `command` of the module semgrad.cli._X."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[attr-defined]
    assert sorted(commands) == ["compare", "data", "demo", "graph", "report", "run", "sweep"]
    for name, subparser in commands.items():
        handler = subparser.get_default("func")
        assert (handler.__module__, handler.__name__) == (f"semgrad.cli._{name}", "command"), name
