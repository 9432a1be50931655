"""docs/architecture.md stays true to the tree: the files it names exist and its drawing has every package."""

from __future__ import annotations

import re
from pathlib import Path

from .test_architecture import LAYERS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"

#: A path into the repository as the page writes it: a file or a folder (ending in "/").
_PATH = re.compile(r"(?<![\w/.])((?:semgrad|tests|docs|benchmarks)/[\w./-]*[\w/]|pyproject\.toml)")


def named_paths(text: str) -> list[str]:
    """Every repository path the page names, in order, once each."""
    return list(dict.fromkeys(_PATH.findall(text)))


def drawing(text: str) -> str:
    """The page's layer drawing: its first mermaid block."""
    found = re.search(r"```mermaid\n(.*?)```", text, re.S)
    assert found, "docs/architecture.md has no mermaid drawing of the layers"
    return found.group(1)


def parts_of(package: Path) -> list[str]:
    """The packages under `package` (as ``core/``, ``core/optim/``) and its top-level modules (``_files.py``)."""
    packages = sorted(p.parent.relative_to(package).as_posix() + "/" for p in package.rglob("__init__.py"))
    modules = sorted(p.name for p in package.glob("*.py"))
    return [p for p in packages if p != "./"] + modules


def missing_from(picture: str, parts: list[str]) -> list[str]:
    """The parts the drawing does not name (``core/`` is not named by ``core/optim/``)."""
    return [p for p in parts if not re.search(rf"(?<![\w/]){re.escape(p)}(?!\w)", picture)]


def test_every_path_the_page_names_exists():
    """Each file or folder docs/architecture.md names (the walk of one run names many) is in the tree."""
    paths = named_paths(PAGE.read_text("utf-8"))
    assert len(paths) > 40, "the page should follow a run file by file"
    gone = [p for p in paths if not (ROOT / p).exists()]
    assert not gone, f"docs/architecture.md names files that do not exist: {gone}"


def test_the_drawing_has_every_package_and_top_level_module_of_semgrad():
    """The mermaid drawing of the layers names every package of semgrad/ (core/optim/ and data/ too) and every
    module at its top (a new one must be placed in a layer)."""
    parts = parts_of(ROOT / "semgrad")
    assert "core/optim/" in parts and "_files.py" in parts
    assert not missing_from(drawing(PAGE.read_text("utf-8")), parts)


def test_the_layer_table_is_the_layer_rule_of_the_architecture_test():
    """Row i of the page's table of layers holds exactly the packages and modules of LAYERS[i], which
    tests/test_architecture.py enforces: the page cannot describe another order than the one checked."""
    rows = re.findall(r"^\| (\d+) \| (.*) \|$", PAGE.read_text("utf-8"), re.M)
    assert [int(n) for n, _ in rows] == list(range(len(LAYERS)))
    for (_, cells), layer in zip(rows, LAYERS):
        shown = {name for name in re.findall(r"`([^`]+)`", cells) if name != "semgrad/core/optim/"}
        expected = {
            "semgrad/__init__.py"
            if name == "semgrad"
            else name.replace(".", "/") + ("/" if (ROOT / name.replace(".", "/")).is_dir() else ".py")
            for name in layer
        }
        assert shown == expected


def test_the_checks_see_a_missing_file_and_an_undrawn_package(tmp_path):
    """A page naming a file that is not there, and a drawing without a package, are both caught."""
    text = "See `semgrad/nothing_here.py` and semgrad/cli/.\n```mermaid\nflowchart BT\n  a[core/optim/]\n```\n"
    assert named_paths(text) == ["semgrad/nothing_here.py", "semgrad/cli/"]
    assert not (ROOT / "semgrad/nothing_here.py").exists()
    assert missing_from(drawing(text), ["core/", "core/optim/", "cli/"]) == ["core/", "cli/"]
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("pkg/__init__.py", "pkg/sub/__init__.py", "pkg/top.py"):
        (tmp_path / name).write_text("")
    assert parts_of(tmp_path / "pkg") == ["sub/", "__init__.py", "top.py"]
