"""Architecture rules that keep the core pure and the import direction one-way."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

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
_LAZY_ONLY = ("semgrad.backends", "httpx", "openai", "anthropic", "opentelemetry")


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
    """import semgrad imports no HTTP client nor OpenTelemetry, starts no thread and prints nothing."""
    code = (
        "import sys, threading; import semgrad, semgrad.core, semgrad.effects, semgrad.backends;"
        "assert 'httpx' not in sys.modules, 'httpx imported';"
        "assert 'opentelemetry' not in sys.modules, 'opentelemetry imported';"
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


# --------------------------------------------------------------------------- import circles and layers


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, tuple[Path, bool]]:
    """Every module of `packages` under `root` by dotted name, with whether it is a package's __init__."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _targets(name: str, is_package: bool, node: ast.AST, modules: dict[str, Any]) -> list[str]:
    """The absolute names an import statement of module `name` reaches (``from X import y``: X.y when that is a
    module, else X)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = name.split(".") if is_package else name.split(".")[:-1]
    if node.level:
        base = base[: len(base) - node.level + 1]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    return [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module for alias in node.names]


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports: every import, those inside functions (lazy) included."""
    modules = _modules(root, packages)
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            for target in _targets(name, is_package, node, modules):
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same imports between packages (a module's first two name parts: semgrad.core, benchmarks._suite)."""
    packages: dict[str, set[str]] = {}
    for source, targets in edges.items():
        for target in targets:
            a, b = ".".join(source.split(".")[:2]), ".".join(target.split(".")[:2])
            packages.setdefault(a, set())
            if a != b:
                packages[a].add(b)
    return packages


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each group of nodes that import one another (directly or around a circle), as one sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                other = stack.pop()
                group.append(other)
                if other == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_among_modules_or_packages():
    """No module of semgrad/ or benchmarks/ imports itself around a circle, counting imports inside functions, and
    neither does a package (semgrad.report -> semgrad.experiments -> semgrad.report is one)."""
    edges = import_graph(ROOT, ("semgrad", "benchmarks"))
    assert not cycles(edges), f"import circles among modules: {cycles(edges)}"
    assert not cycles(package_graph(edges)), f"import circles among packages: {cycles(package_graph(edges))}"


def test_the_circle_finder_sees_lazy_relative_and_package_circles(tmp_path):
    """The finder above reports a circle closed by an import inside a function, one through a package's __init__,
    and one between packages; a tree without circles has none."""
    files = {
        "p/__init__.py": "from .a import x\n",
        "p/a.py": "x = 1\ndef f():\n    from . import b\n",
        "p/b.py": "from .a import x\n",
        "p/c.py": "from p import x\n",
        "p/q/__init__.py": "",
        "p/q/d.py": "def g():\n    import p.r.e\n",
        "p/r/__init__.py": "",
        "p/r/e.py": "from ..q import d\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = import_graph(tmp_path, ("p",))
    assert cycles(edges) == [["p.a", "p.b"], ["p.q.d", "p.r.e"]]
    assert ["p.q", "p.r"] in cycles(package_graph(edges))
    (tmp_path / "p" / "a.py").write_text("x = 1\n")
    (tmp_path / "p" / "r" / "e.py").write_text("y = 2\n")
    assert cycles(import_graph(tmp_path, ("p",))) == []


#: The layers of semgrad, lowest first (DESIGN.md section 2): a module imports only its own package and the
#: packages of lower layers. Report never imports experiments; sweeps sit above experiments; cli on top.
LAYERS = (
    ("semgrad.core",),
    (
        "semgrad._files",
        "semgrad._loaded_systems",
        "semgrad._lock",
        "semgrad._bundled_pairs",
        "semgrad.diagrams",
        "semgrad.topologies",
    ),
    ("semgrad.effects",),
    ("semgrad.backends",),
    ("semgrad",),  # the package's face: DESIGN section 3's names, from core, effects and backends
    ("semgrad.tasks", "semgrad.report", "semgrad.testing", "semgrad._offline_demo", "semgrad.graphviz"),
    ("semgrad.experiments",),
    ("semgrad.sweeps",),
    ("semgrad.cli",),
    ("semgrad.__main__",),
)


def test_each_layer_imports_only_the_layers_below_it():
    """Every import between semgrad's packages goes down the layers (lazy imports included): tasks and report
    import no experiments, experiments no sweeps or cli, sweeps no cli, and nothing below imports the product."""
    rank = {package: i for i, layer in enumerate(LAYERS) for package in layer}
    graph = package_graph(import_graph(ROOT, ("semgrad",)))
    unplaced = sorted(set(graph) - set(rank))
    assert not unplaced, f"packages in no layer of LAYERS (place them there): {unplaced}"
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if rank[b] >= rank[a])
    assert not upward, f"imports that do not go down the layers: {upward}"


def test_the_layer_rule_sees_an_import_up_the_layers(tmp_path):
    """A report module that imports experiments inside a function is an edge report -> experiments."""
    (tmp_path / "semgrad" / "report").mkdir(parents=True)
    (tmp_path / "semgrad" / "experiments").mkdir()
    (tmp_path / "semgrad" / "report" / "_fit.py").write_text("def f():\n    from ..experiments._run import g\n")
    (tmp_path / "semgrad" / "experiments" / "_run.py").write_text("g = 1\n")
    graph = package_graph(import_graph(tmp_path, ("semgrad",)))
    assert graph["semgrad.report"] == {"semgrad.experiments"}
