"""Run Python in a subprocess in which some installed packages cannot be imported."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Installed into the child's ``sys.meta_path`` first: importing a hidden package (or any
#: submodule of one) raises ModuleNotFoundError, as if it were not installed.
_PRELUDE = """
import importlib.abc, sys
HIDDEN = frozenset({hidden!r})
class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _Hide())
for _name in [m for m in sys.modules if m.partition(".")[0] in HIDDEN]:
    del sys.modules[_name]
"""


def run_without(hidden: Sequence[str], code: str, *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `code` with ``python -c`` in the repository root, with the packages `hidden` made unimportable."""
    script = _PRELUDE.format(hidden=sorted(hidden)) + code
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False
    )
