"""The guides in docs/ and the README: their code runs offline and prints what the pages show."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest

from semgrad.cli import build_parser
from semgrad.sweeps import parse_spec
from semgrad.sweeps._spec import SETTINGS
from semgrad.sweeps._spec_format import SPEC_EXAMPLE, SPEC_HELP

from ._hidden import ROOT, run_without
from ._markdown import python_blocks, run_page

DOCS = ROOT / "docs"
GUIDES = sorted(p for p in DOCS.glob("*.md") if p.name not in ("README.md", "architecture.md"))


def test_the_guides_cover_the_three_uses_and_the_reply_formats():
    """docs/ has a page for embedding, testing with fakes, custom optimizers and reply formats, all linked from
    its index, and each page has Python code with output shown for it."""
    assert [p.name for p in GUIDES] == [
        "cost.md",
        "embedding.md",
        "optimizers.md",
        "python-systems.md",
        "reply-formats.md",
        "testing.md",
        "your-own-system.md",
    ]
    index = (DOCS / "README.md").read_text("utf-8")
    for page in GUIDES:
        assert f"]({page.name})" in index, page.name
        blocks = python_blocks(page.read_text("utf-8"))
        assert blocks and any(b.output is not None for b in blocks), page.name


@pytest.mark.parametrize("page", GUIDES, ids=[p.stem for p in GUIDES])
def test_every_python_block_of_a_guide_runs_and_prints_what_the_page_shows(page):
    """Each guide's Python blocks run in order, offline on fakes, and print exactly the text blocks after them."""
    run_page(page)


def test_a_drifted_output_block_fails(tmp_path):
    """The page checker fails when a text block differs from what its Python block prints."""
    page = tmp_path / "page.md"
    page.write_text("```python\nprint(1 + 1)\n```\n\n```text\n3\n```\n", "utf-8")
    with pytest.raises(AssertionError, match="page.md:2"):
        run_page(page)
    page.write_text("```python\nprint(1 + 1)\n```\n\n```text\n2\n```\n", "utf-8")
    run_page(page)


def test_readme_tour_uses_fit_sync_and_prints_what_it_computes():
    """The README's Python tour calls fit_sync (no anyio.run), prints, and prints exactly what the README shows."""
    blocks = python_blocks((ROOT / "README.md").read_text("utf-8"))
    tour = blocks[0]
    assert "fit_sync(" in tour.code and "anyio" not in tour.code and "print(" in tour.code
    assert tour.output is not None
    namespace = run_page(ROOT / "README.md")
    assert len(namespace["result"].history) == 2


def test_the_readme_and_sweep_help_show_the_same_spec_and_it_parses():
    """The README's TOML block is the spec example, `semgrad sweep --help` shows it, and it is a valid spec that
    names every settings key."""
    readme = (ROOT / "README.md").read_text("utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", readme, re.DOTALL)
    assert blocks == [SPEC_EXAMPLE]
    sweep = build_parser()._subparsers._group_actions[0].choices["sweep"]  # type: ignore[union-attr]
    shown = sweep.format_help()
    assert all(line in shown for line in SPEC_EXAMPLE.splitlines() if line.strip())
    spec = parse_spec(tomllib.loads(SPEC_EXAMPLE), name="example", base_dir=ROOT)
    assert len(spec.runs()) == 8 and spec.backend == "simulated"
    for key in SETTINGS:
        assert key == "simulated_latency" or key in SPEC_HELP, key


def test_sweep_help_from_the_command_line_shows_the_format():
    """`semgrad sweep --help` prints the spec example and exits 0."""
    result = subprocess.run(
        [sys.executable, "-m", "semgrad", "sweep", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "[settings]" in result.stdout and 'tasks = ["bbh:navigate", "gsm8k"]' in result.stdout


def test_semgrad_testing_without_hypothesis_says_which_extra_to_install():
    """`import semgrad.testing` with hypothesis not installed raises ImportError naming the `.[testing]` extra."""
    code = (
        "try:\n    import semgrad.testing\nexcept ImportError as error:\n"
        "    print(type(error).__name__, error)\nelse:\n    print('imported')\n"
        "import semgrad.backends.fake\nprint('fakes ok')\n"
    )
    result = run_without(["hypothesis"], code)
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first.startswith("ImportError ") and "pip install -e '.[testing]'" in first, first
    assert second == "fakes ok"


def test_the_docs_install_from_a_checkout_never_from_the_package_index():
    """No page tells the reader to `pip install semgrad` (it is not on the package index); the README and the
    embedding guide say how to install from a checkout and how to activate `.venv`."""
    pages = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted(DOCS.glob("*.md"))]
    from_index = re.compile(r"pip install\s+[\"']?semgrad\b")
    for page in pages:
        text = page.read_text("utf-8")
        assert not from_index.search(text), f"{page.name}: {from_index.search(text)}"
    for page in (ROOT / "README.md", DOCS / "embedding.md"):
        text = page.read_text("utf-8")
        assert "pip install -e ." in text and "source .venv/bin/activate" in text, page.name
        assert "pip wheel . " in text and "dist/semgrad-*.whl" in text, page.name
