"""Fault injection, files read whole (issue 32, point 4): every file semgrad reads goes through the bounded
regular-file reader.

What it tries, and what must hold -- *no read hangs, none fills the memory, and each refusal is one line that
names the file*:

* a FIFO, ``/dev/zero`` and a directory in the place of a ``--prices`` table, a sweep spec, a ``--data`` file, a
  data file under ``--data-dir``, a cassette, a checkpoint and a run's JSON (in a child process with a deadline and
  a memory cap): refused, naming the file;
* each of those files over its size limit (the limit made small for the test): refused, naming the file and the
  limit; a cassette line over its own limit likewise;
* the command line: ``--prices`` on a FIFO and on ``/dev/zero``, a sweep spec on ``/dev/zero``, and ``--resume`` of
  a run whose ``config.json`` names a data directory holding a 3 GB data file (sparse: nothing is written) end with
  exit 1 and one line, within seconds and under a 2 GB memory cap.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from semgrad.effects import _cassette
from semgrad.effects._cassette import replayed
from semgrad.effects._checkpoint import read_checkpoint
from semgrad.experiments import _prices
from semgrad.experiments._custom import read_items
from semgrad.report._io import read_json
from semgrad.sweeps import _spec
from semgrad.tasks import _files as data_files
from semgrad.tasks._gsm8k import load_gsm8k

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "semgrad" / "data" / "gsm8k_sample.jsonl"


def _gsm8k(folder: Path) -> Any:
    return load_gsm8k(folder)


#: Each reader: (where its file goes under a folder, how it is read, the module and name of its size limit).
READERS: dict[str, tuple[str, Callable[[Path], Any], Any, str]] = {
    "prices": ("prices.json", lambda path: _prices.load_prices(str(path)), _prices, "MAX_BYTES"),
    "sweep spec": ("sweep.toml", _spec.load_spec, _spec, "MAX_SPEC_BYTES"),
    "--data": ("items.jsonl", read_items, data_files, "MAX_BYTES"),
    "data file": ("gsm8k/train.jsonl", lambda path: _gsm8k(path.parents[1]), data_files, "MAX_BYTES"),
    "cassette": ("replies.jsonl", replayed, _cassette, "MAX_BYTES"),
}

#: Readers of run-folder files bounded before this round: kept in the special-file check.
ALSO = {
    "checkpoint": ("checkpoint.json", read_checkpoint),
    "results": ("results.json", read_json),
}

_SPECIAL = """
import os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31))  # a regression fails here, not the machine
from pathlib import Path
from tests.faults.test_faults_bounded_reads import ALSO, READERS
root, kind = Path(sys.argv[1]), sys.argv[2]
for name, (where, read, *_) in {**READERS, **ALSO}.items():
    path = root / name.replace(" ", "_").strip("-") / where
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    try:
        read(path)
    except Exception as error:
        print(f"{name}\\t{path}\\t{type(error).__name__}: {error}")
    else:
        print(f"{name}\\t{path}\\tread")
"""


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_fifo_dev_zero_or_a_folder_in_any_file_s_place_is_refused_naming_it(tmp_path, kind):
    """A FIFO, /dev/zero or a directory where any reader expects a file is refused in one line naming the file:
    the read neither blocks nor fills memory (a child process, with a 60 s deadline and a 2 GB memory cap)."""
    done = subprocess.run(
        [sys.executable, "-c", _SPECIAL, str(tmp_path), kind], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == [*READERS, *ALSO], done.stdout
    for line in lines:
        name, path, said = line.split("\t")
        assert said != "read", f"{name} read a {kind}"
        assert "Error" in said.split(":")[0] and path in said, line
        assert "regular file" in said or "directory" in said.lower(), line


def _content(name: str) -> str:
    if name == "sweep spec":
        return 'tasks = ["gsm8k"]\nseeds = [0]\noptimizers = ["tgd"]\n# ' + "x" * 300 + "\n"
    if name == "prices":
        return json.dumps({"models": {"m": [1, 2]}, "note": "x" * 300})
    if name == "cassette":
        return json.dumps({"key": "k", "response": {"text": "x" * 300, "usage": {}, "model": ""}}) + "\n"
    if name == "--data":
        return "".join(json.dumps({"inputs": {"question": f"{i}" * 50}, "target": "1"}) + "\n" for i in range(5))
    return SAMPLE.read_text()


@pytest.mark.parametrize("name", list(READERS))
def test_a_file_over_its_limit_is_refused_naming_the_file_and_the_limit(tmp_path, monkeypatch, name):
    """Each reader reads at most its limit: a larger file is refused in one line naming the file and the limit
    (the limit made 100 bytes here, so the test writes no gigabytes), and the same file is read under the real one."""
    where, read, module, limit = READERS[name]
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_content(name))
    read(path)  # under the real limit it is a good file
    monkeypatch.setattr(module, limit, 100)
    with pytest.raises(Exception) as caught:
        read(path)
    said = str(caught.value)
    assert str(path) in said and "larger than 100 bytes" in said and "\n" not in said, said


def test_a_cassette_line_over_its_limit_is_refused_naming_the_file_and_the_limit(tmp_path, monkeypatch):
    """A cassette line is read up to its own limit: a longer one is refused naming the file, the line and the limit."""
    path = tmp_path / "replies.jsonl"
    path.write_text(_content("cassette") * 3)
    monkeypatch.setattr(_cassette, "MAX_LINE_BYTES", 200)
    with pytest.raises(ValueError) as caught:
        replayed(path)
    assert str(path) in str(caught.value) and "line 1 is longer than 200 bytes" in str(caught.value)


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31))


def _semgrad(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "semgrad", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        preexec_fn=_capped,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _one_line(done: subprocess.CompletedProcess[str], *says: str) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("semgrad: error:"), done.stderr
    for word in says:
        assert word in lines[0], lines[0]


def _data_dir(root: Path) -> Path:
    data = root / "data"
    (data / "gsm8k").mkdir(parents=True)
    for file in ("train.jsonl", "test.jsonl"):
        (data / "gsm8k" / file).write_text(SAMPLE.read_text())
    return data


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_prices_on_a_fifo_or_dev_zero_ends_at_once_with_one_line(tmp_path, kind):
    """`semgrad run --prices` on a FIFO or /dev/zero exits 1 with one line naming the file, neither hanging nor
    filling memory (it hung forever, and exhausted memory)."""
    prices = tmp_path / "prices.json"
    os.mkfifo(prices) if kind == "fifo" else prices.symlink_to("/dev/zero")
    data = _data_dir(tmp_path)
    done = _semgrad("run", "gsm8k", "--data-dir", str(data), "--prices", str(prices), "--dry-run", cwd=tmp_path)
    _one_line(done, str(prices), "not a regular file")


def test_a_sweep_spec_on_dev_zero_ends_at_once_with_one_line(tmp_path):
    """`semgrad sweep` of a spec that is /dev/zero exits 1 with one line naming it (it exhausted memory)."""
    spec = tmp_path / "sweep.toml"
    spec.symlink_to("/dev/zero")
    _one_line(_semgrad("sweep", str(spec), "--local", "--out", str(tmp_path / "out"), cwd=tmp_path), str(spec))


def test_resume_refuses_a_huge_data_file_under_the_data_dir_its_config_names(tmp_path):
    """`--resume` of a run whose config.json names a data directory holding a 3 GB data file (sparse) refuses it in
    one line naming the file and the limit, at once and under a 2 GB memory cap (the file was read whole)."""
    data = _data_dir(tmp_path)
    run = tmp_path / "run"
    small = ("--train", "2", "--validation", "2", "--test", "2", "--iterations", "1", "-q")
    first = _semgrad("run", "gsm8k", "--data-dir", str(data), "--out", str(run), *small, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    huge = data / "gsm8k" / "test.jsonl"
    with huge.open("r+b") as file:
        file.truncate(3 * 2**30)  # sparse: no disk is used
    done = _semgrad("run", "--resume", "--out", str(run), "--iterations", "2", cwd=tmp_path)
    _one_line(done, str(huge), f"larger than {data_files.MAX_BYTES:,} bytes")
