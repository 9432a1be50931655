"""dev.py installs what each command needs: the demo only the package, the tests the test extras."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ._hidden import ROOT, run_without


def load_dev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, list[list[str]]]:
    """dev.py as a module whose .venv lives under `tmp_path`, with pip and venv creation recorded, not run."""
    spec = importlib.util.spec_from_file_location("semgrad_dev_script", ROOT / "dev.py")
    assert spec and spec.loader
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    venv_dir = tmp_path / ".venv"
    python = venv_dir / "bin" / "python"
    monkeypatch.setattr(dev, "VENV", venv_dir)
    monkeypatch.setattr(dev, "STAMP", venv_dir / ".semgrad-install-stamp")
    monkeypatch.setattr(dev, "PYTHON", python)
    installs: list[list[str]] = []

    class FakeBuilder:
        def __init__(self, **options: Any) -> None:
            pass

        def create(self, path: Path) -> None:
            python.parent.mkdir(parents=True)
            python.write_text("")

    def fake_run(command: list[str], check: bool = False) -> None:
        installs.append(command)

    monkeypatch.setattr(dev.venv, "EnvBuilder", FakeBuilder)
    monkeypatch.setattr(dev.subprocess, "run", fake_run)
    return dev, installs


def targets(installs: list[list[str]]) -> list[str]:
    """The ``pip install -e`` target of each recorded install, relative to the repository."""
    return [command[-1].replace(str(ROOT), ".") for command in installs]


def test_demo_installs_only_the_package_and_test_adds_the_test_extras(tmp_path, monkeypatch):
    """On a fresh machine, the demo installs `.` (no extras), then the tests install `.[test]`; repeating either
    installs nothing, and a demo after the tests reuses the test environment."""
    dev, installs = load_dev(tmp_path, monkeypatch)
    dev.ensure_env(dev.EXTRAS["demo"])
    assert targets(installs) == ["."]
    dev.ensure_env(dev.EXTRAS["demo"])
    dev.ensure_env(dev.EXTRAS["test"])
    assert targets(installs) == [".", ".[test]"]
    dev.ensure_env(dev.EXTRAS["test"])
    dev.ensure_env(dev.EXTRAS["demo"])
    assert targets(installs) == [".", ".[test]"]


def test_a_changed_pyproject_installs_again(tmp_path, monkeypatch):
    """A stamp written for another pyproject.toml (or an old plain-text stamp) makes the next command install."""
    dev, installs = load_dev(tmp_path, monkeypatch)
    dev.ensure_env(dev.EXTRAS["test"])
    dev.STAMP.write_text('{"pyproject": "other", "extras": ["test"]}')
    dev.ensure_env(dev.EXTRAS["demo"])
    dev.STAMP.write_text("0123abcd")
    dev.ensure_env(dev.EXTRAS["test"])
    assert targets(installs) == [".[test]", ".", ".[test]"]


def test_the_demo_runs_with_no_extra_installed():
    """`semgrad demo` succeeds when hypothesis, pytest, Ray and httpx cannot be imported: it needs only the package."""
    code = "import runpy, sys; sys.argv = ['semgrad', 'demo']; runpy.run_module('semgrad', run_name='__main__')"
    result = run_without(["hypothesis", "pytest", "ray", "httpx"], code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "SIMULATED" in result.stdout and "Final instructions:" in result.stdout


def test_unknown_dev_command_prints_usage():
    """`python3 dev.py` with an unknown command exits 2 with the usage text, installing nothing."""
    result = subprocess.run([sys.executable, str(ROOT / "dev.py"), "frobnicate"], capture_output=True, text=True)
    assert result.returncode == 2 and "python3 dev.py demo" in result.stdout


def test_semgrad_and_demo_run_in_the_callers_folder_and_tests_in_the_repository(tmp_path, monkeypatch):
    """`dev.py semgrad ...` and `dev.py demo` start semgrad in the caller's working directory (relative paths resolve
    where the user typed them); `dev.py test` runs pytest in the repository."""
    dev, _ = load_dev(tmp_path, monkeypatch)
    calls: list[tuple[list[str], Path]] = []

    def fake_call(command: list[str], cwd: Path | str | None = None) -> int:
        calls.append((command, Path(cwd).resolve() if cwd is not None else Path.cwd().resolve()))
        return 0

    monkeypatch.setattr(dev.subprocess, "call", fake_call)
    here = tmp_path / "somewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    assert dev.main(["semgrad", "run", "bbh:navigate", "--out", "runs"]) == 0
    assert dev.main(["demo"]) == 0
    assert dev.main(["test", "-q"]) == 0
    assert [(command[-2:], cwd) for command, cwd in calls] == [
        (["--out", "runs"], here.resolve()),
        (["semgrad", "demo"], here.resolve()),
        (["pytest", "-q"], ROOT.resolve()),
    ]


@pytest.mark.slow
def test_a_clone_without_the_official_code_skips_each_conformance_module_once_and_says_how_to_get_it(tmp_path):
    """Without the official code a conformance module is one skip (not also a doctest skip), whose reason names
    SEMGRAD_REFERENCE, and the data tests' reason names SEMGRAD_TEST_DATA."""
    absent = str(tmp_path / "absent")
    env = {**os.environ, "SEMGRAD_REFERENCE": absent, "SEMGRAD_TEST_DATA": absent}
    env.pop("PYTEST_ADDOPTS", None)
    module = "tests/conformance/test_splits.py"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", module, "tests/tasks/test_gsm8k.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    summary = done.stdout.splitlines()[-1]
    assert done.returncode == 0 and " 2 skipped" in summary, done.stdout[-2000:]
    assert "SKIPPED [1] tests/conformance/_official.py" in done.stdout and "SEMGRAD_REFERENCE=DIR" in done.stdout
    assert "SKIPPED [1] tests/tasks/test_gsm8k.py" in done.stdout and "SEMGRAD_TEST_DATA=DIR" in done.stdout
