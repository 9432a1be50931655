"""Architecture rules that keep the core pure and the import direction one-way."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = sorted((ROOT / "semgrad" / "core").rglob("*.py"))
FORBIDDEN_IN_CORE = {
    "anyio",
    "asyncio",
    "trio",
    "socket",
    "ssl",
    "http",
    "urllib",
    "httpx",
    "requests",
    "aiohttp",
    "time",
    "datetime",
    "os",
    "pathlib",
    "io",
    "shutil",
    "tempfile",
    "sqlite3",
    "threading",
    "multiprocessing",
    "subprocess",
    "concurrent",
    "signal",
    "select",
    "selectors",
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append(("." * node.level) + (node.module or ""))
    return names


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_imports_no_io_clock_or_concurrency_module(path):
    """A core module imports nothing that does I/O, reads a clock, or runs concurrently."""
    bad = [name for name in _imports(path) if name.split(".")[0] in FORBIDDEN_IN_CORE]
    effects = [name for name in _imports(path) if re.search(r"(^|\.)(effects|backends)(\.|$)", name)]
    assert not bad and not effects, f"{path.name} imports {bad + effects}"


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_has_no_async_code_no_open_and_no_unseeded_randomness(path):
    """A core module has no async def, no await, no open(), no module-level random calls and no Random()
    without a seed; it takes nothing from random but Random."""
    tree = ast.parse(path.read_text("utf-8"))
    for node in ast.walk(tree):
        assert not isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)), path.name
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in ("open", "input", "print"), f"{path.name} calls {node.func.id}()"
            if node.func.id == "Random":
                assert node.args or node.keywords, f"{path.name} makes a Random() without a seed"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id == "random":
                assert node.func.attr == "Random", f"{path.name} uses random.{node.func.attr}() (unseeded)"
                assert node.args or node.keywords, f"{path.name} makes a random.Random() without a seed"
        if isinstance(node, ast.ImportFrom) and node.module == "random" and not node.level:
            names = [alias.name for alias in node.names]
            assert names == ["Random"] or not names, f"{path.name} imports {names} from random"


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, made absolute from `path`'s package."""
    if not node.level:
        return node.module or ""
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_imports_nothing_of_semgrad_outside_the_core(path):
    """What a core module imports of semgrad is core: not semgrad._files (I/O), not tasks, experiments or the
    rest, however the import is written."""
    tree = ast.parse(path.read_text("utf-8"))
    found = [_absolute(path, n) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    found += [alias.name for n in ast.walk(tree) if isinstance(n, ast.Import) for alias in n.names]
    outside = [name for name in found if name.split(".")[0] == "semgrad" and not name.startswith("semgrad.core")]
    assert not outside, f"{path.name} imports {outside}"


def test_the_core_import_rule_sees_relative_imports():
    """The rule above resolves relative imports: '.._files' from a core module is semgrad._files."""
    module = ast.parse("from .._files import x\nfrom ._graph import y\nfrom ..core._graph import z")
    froms = [n for n in module.body if isinstance(n, ast.ImportFrom)]
    names = [_absolute(ROOT / "semgrad" / "core" / "_x.py", n) for n in froms]
    assert names == ["semgrad._files", "semgrad.core._graph", "semgrad.core._graph"]
    nested = _absolute(ROOT / "semgrad" / "core" / "optim" / "_x.py", froms[0])
    assert nested == "semgrad.core._files"


#: What semgrad.effects may import only inside a function: the backends and the HTTP client or provider SDKs.
_LAZY_ONLY = ("semgrad.backends", "httpx", "openai", "anthropic")


def _imported_at_import_time(path: Path, tree: ast.Module) -> list[str]:
    """Absolute names of what a module imports when it is imported: every import outside a function body (inside
    ``try``, ``if`` or a class too), ``from .. import backends`` read as ``semgrad.backends``."""
    names: list[str] = []
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            names += [module] + [f"{module}.{alias.name}" for alias in node.names]
        stack.extend(ast.iter_child_nodes(node))
    return names


def _lazy_only(name: str) -> bool:
    return any(name == banned or name.startswith(banned + ".") for banned in _LAZY_ONLY)


def test_effects_never_import_backends_except_lazily():
    """semgrad.effects modules import neither semgrad.backends nor any provider SDK at module level."""
    for path in sorted((ROOT / "semgrad" / "effects").rglob("*.py")):
        found = [n for n in _imported_at_import_time(path, ast.parse(path.read_text("utf-8"))) if _lazy_only(n)]
        assert not found, f"{path.name} imports {found} at module level"


def test_the_lazy_import_rule_sees_every_import_run_at_module_level():
    """The rule above sees 'from .. import backends', 'import httpx' inside try or if, and skips function bodies."""
    code = (
        "from .. import backends\ntry:\n    import httpx\nexcept ImportError:\n    pass\n"
        "if True:\n    from ..backends.fake import HashLLM\ndef f():\n    import openai\n"
    )
    path = ROOT / "semgrad" / "effects" / "_x.py"
    found = [n for n in _imported_at_import_time(path, ast.parse(code)) if _lazy_only(n)]
    assert sorted(found) == ["httpx", "semgrad.backends", "semgrad.backends.fake", "semgrad.backends.fake.HashLLM"]


def test_importing_semgrad_is_light_and_has_no_side_effects():
    """import semgrad imports no HTTP client, starts no thread and prints nothing."""
    code = (
        "import sys, threading; import semgrad, semgrad.core, semgrad.effects, semgrad.backends;"
        "assert 'httpx' not in sys.modules, 'httpx imported';"
        "assert threading.active_count() == 1, 'a thread was started'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


def test_public_namespaces_declare_all_and_every_name_exists():
    """Each public package lists __all__, and every listed name is importable from it."""
    import importlib

    for name in ("semgrad", "semgrad.core", "semgrad.effects", "semgrad.backends"):
        module = importlib.import_module(name)
        assert hasattr(module, "__all__"), name
        for attr in module.__all__:
            assert hasattr(module, attr), f"{name}.{attr}"


def test_tests_cannot_reach_beyond_loopback():
    """The test suite's socket guard refuses any non-loopback address."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(ConnectionRefusedError, match="only connect to loopback"):
            sock.connect(("192.0.2.1", 80))
