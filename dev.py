#!/usr/bin/env python3
"""Developer entry point that works on a fresh machine with only Python 3.11 and pip.

    python3 dev.py demo [ARGS...]   # the offline demo (simulated LLM)
    python3 dev.py test [ARGS...]   # the whole test suite
    python3 dev.py semgrad ARGS...  # any semgrad command

It creates ``.venv`` beside this file on first use and installs the package with
its test extras into it (again whenever pyproject.toml changes).
"""

from __future__ import annotations

import hashlib
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


def ensure_env() -> None:
    """Create the virtual environment and install the package if needed."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted and PYTHON.exists():
        return
    if not PYTHON.exists():
        print("dev.py: creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("dev.py: installing semgrad and its test dependencies into .venv ...", flush=True)
    pip = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "-e", f"{ROOT}[test]"], check=True)
    STAMP.write_text(wanted)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test", "semgrad"):
        print(__doc__)
        return 2
    ensure_env()
    command, rest = argv[0], argv[1:]
    if command == "test":
        code = subprocess.call([str(PYTHON), "-m", "pytest", *rest], cwd=ROOT)
        if code == 5:
            print("dev.py: pytest collected no tests; that is a failure here.", file=sys.stderr)
            return 1
        return code
    args = ["demo", *rest] if command == "demo" else rest
    return subprocess.call([str(PYTHON), "-m", "semgrad", *args], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
