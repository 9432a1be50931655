#!/usr/bin/env python3
"""Developer entry point that works on a fresh machine with only Python 3.11 and pip.

    python3 dev.py demo [ARGS...]   # the offline demo (simulated LLM); installs only the package
    python3 dev.py test [ARGS...]   # the whole test suite; installs the package with its test extras
    python3 dev.py semgrad ARGS...  # any semgrad command; installs the package with the http extra

The tests run in the repository's folder; the demo and semgrad commands run in the
folder you call dev.py from, so the relative paths you type resolve there.

It creates ``.venv`` beside this file on first use and installs into it what the
command needs: the demo needs nothing but the package (attrs, returns, anyio),
so it does not pull in Ray, hypothesis or pytest. A stamp file records the
extras installed for the current pyproject.toml; a command installs again only
when pyproject.toml changed or it needs an extra that is not installed yet.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".semgrad-install-stamp"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")

#: The package extras each command needs (the demo: none).
EXTRAS = {"demo": (), "test": ("test",), "semgrad": ("http",)}


def _installed(wanted: str) -> frozenset[str] | None:
    """The extras the stamp records for the pyproject.toml digest `wanted` (None: stale or no stamp)."""
    try:
        stamp = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("pyproject") != wanted:
        return None
    return frozenset(e for e in stamp.get("extras", ()) if isinstance(e, str))


def ensure_env(extras: tuple[str, ...] = ()) -> None:
    """Create the virtual environment and install the package with `extras` if needed."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    installed = _installed(wanted) if PYTHON.exists() else None
    if installed is not None and installed >= set(extras):
        return
    if not PYTHON.exists():
        print("dev.py: creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    what = f"semgrad with its {', '.join(extras)} extras" if extras else "semgrad (the package only)"
    print(f"dev.py: installing {what} into .venv ...", flush=True)
    pip = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    target = f"{ROOT}[{','.join(extras)}]" if extras else str(ROOT)
    subprocess.run([*pip, "-e", target], check=True)
    STAMP.write_text(json.dumps({"pyproject": wanted, "extras": sorted((installed or set()) | set(extras))}))


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in EXTRAS:
        print(__doc__)
        return 2
    command, rest = argv[0], argv[1:]
    ensure_env(EXTRAS[command])
    if command == "test":
        code = subprocess.call([str(PYTHON), "-m", "pytest", *rest], cwd=ROOT)
        if code == 5:
            print("dev.py: pytest collected no tests; that is a failure here.", file=sys.stderr)
            return 1
        return code
    args = ["demo", *rest] if command == "demo" else rest
    # In the caller's working directory: the paths they type (--out, --data-dir, a spec) resolve where they typed them.
    return subprocess.call([str(PYTHON), "-m", "semgrad", *args])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
