"""Lint and layout are part of the test run: `ruff check` and `ruff format --check` pass over the tree."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ._hidden import ROOT

pytest.importorskip("ruff", reason="ruff is in the test extra (python dev.py test installs it)")


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_check_finds_nothing() -> None:
    """`ruff check .` (the rules in pyproject.toml) reports no finding anywhere in the repository."""
    done = _ruff("check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_file_is_formatted() -> None:
    """`ruff format --check .` would change no file."""
    done = _ruff("format", "--check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr
