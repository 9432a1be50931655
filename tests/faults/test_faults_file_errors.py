"""Fault injection, errors that named no file (issue 32, point 6): each says which file.

What it tries, and what must hold -- *one line, and the file in it*:

* JSON nested 100,000 deep and a 5,000-digit integer in a ``--data`` file, a data file under ``--data-dir``, a
  ``--prices`` table, a sweep spec (TOML), a cassette, a checkpoint and a run's JSON;
* a lone surrogate (``\\ud800``) in a ``--data`` file and in a data file; a CSV field over the csv module's limit
  in a ``--data`` CSV and in LIAR's TSV;
* ``[Errno 28]`` (a full disk) while writing a run's files, a cassette line, and through ``semgrad run``;
* "disk I/O error", "database or disk is full" and "unable to open database file" from the SQLite cache.
"""

from __future__ import annotations

import errno
import pathlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import semgrad._files
from semgrad._files import WriteFailed, write_text_atomically
from semgrad.cli import main
from semgrad.core import LLMRequest, Message
from semgrad.effects import _cache
from semgrad.effects._cache import CacheError, SqliteStore, cached
from semgrad.effects._cassette import recorded, replayed
from semgrad.effects._checkpoint import read_checkpoint
from semgrad.experiments import _prices
from semgrad.experiments._custom import read_items
from semgrad.report._io import read_json
from semgrad.sweeps import _spec
from semgrad.tasks._bbh import load_bbh
from semgrad.tasks._gsm8k import load_gsm8k
from semgrad.tasks._liar import load_liar

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "semgrad" / "data" / "gsm8k_sample.jsonl"

DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5000


def _bbh(value: str) -> str:
    return '{"examples": [{"input": "x", "target": ' + value + "}]}"


#: Each reader: (its file under a folder, how it is read, the file's text holding `value` where a JSON value goes).
READERS: dict[str, tuple[str, Callable[[Path], Any], Callable[[str], str]]] = {
    "--data": (
        "items.jsonl",
        read_items,
        lambda value: '{"inputs": {"q": "ok"}, "target": "1"}\n{"inputs": {"q": ' + value + '}, "target": "1"}\n',
    ),
    "gsm8k data file": (
        "gsm8k/train.jsonl",
        lambda path: load_gsm8k(path.parents[1]),
        lambda value: '{"question": ' + value + ', "answer": "#### 1"}\n',
    ),
    "bbh data file": ("bbh/navigate.json", lambda path: load_bbh(path.parents[1], "navigate"), _bbh),
    "prices": ("prices.json", lambda path: _prices.load_prices(str(path)), lambda value: '{"m": ' + value + "}"),
    "sweep spec": ("sweep.toml", _spec.load_spec, lambda value: "tasks = " + value + "\n"),
    "cassette": ("replies.jsonl", replayed, lambda value: '{"key": "k", "response": ' + value + "}\n"),
    "checkpoint": ("checkpoint.json", read_checkpoint, lambda value: '{"format": ' + value + "}"),
    "results": ("results.json", read_json, lambda value: '{"tasks": ' + value + "}"),
}


def _refused(tmp_path: Path, name: str, value: str) -> str:
    where, read, text = READERS[name]
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text(value))
    with pytest.raises(Exception) as caught:
        read(path)
    said = str(caught.value)
    assert str(path) in said and "\n" not in said, said
    assert not isinstance(caught.value, (RecursionError, sqlite3.Error)), said
    return said


@pytest.mark.parametrize("name", list(READERS))
def test_json_nested_too_deeply_is_refused_naming_the_file(tmp_path, name):
    """Nesting 100,000 deep (RecursionError in the parser) is refused in one line naming the file and saying so."""
    assert "nested too deeply" in _refused(tmp_path, name, DEEP)


@pytest.mark.parametrize("name", list(READERS))
def test_a_5000_digit_integer_is_refused_naming_the_file(tmp_path, name):
    """A 5,000-digit integer (past Python's int-conversion limit) is refused in one line naming the file and the
    limit's digits, not Python's own advice to raise it."""
    said = _refused(tmp_path, name, HUGE)
    assert "4,300 digits" in said and "set_int_max_str_digits" not in said, said


@pytest.mark.parametrize("name", ["--data", "gsm8k data file", "bbh data file"])
def test_a_lone_surrogate_in_a_data_file_is_refused_where_it_is_read(tmp_path, name):
    """A ``\\ud800`` escape in a data file is refused when the file is read, naming the file (and the line of a
    JSON Lines file), not later by an encoder that names nothing."""
    said = _refused(tmp_path, name, '"half an emoji \\ud83d"')
    assert "lone surrogate" in said
    if name != "bbh data file":
        assert f"{READERS[name][0].split('/')[-1]}:" in said, said


def test_a_csv_field_over_the_limit_is_refused_naming_the_file_and_line(tmp_path):
    """A --data CSV field over the csv module's limit is refused naming the file and its line."""
    path = tmp_path / "items.csv"
    path.write_text("question,target\nshort,1\n" + "x" * 200_000 + ",1\n")
    with pytest.raises(ValueError, match="field larger than field limit") as caught:
        read_items(path)
    assert f"{path}:3" in str(caught.value)


def test_a_liar_field_over_the_limit_is_refused_naming_the_file_and_line(tmp_path):
    """A LIAR TSV field over the csv module's limit is refused naming the file and its line."""
    path = tmp_path / "liar" / "train.tsv"
    path.parent.mkdir()
    path.write_text("\t".join(["1.json", "false", "x" * 200_000, *["y"] * 11]) + "\n")
    with pytest.raises(ValueError, match="field larger than field limit") as caught:
        load_liar(tmp_path)
    assert f"{path}:1" in str(caught.value)


def _full_disk(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_names_the_file_being_written_and_leaves_no_temporary(tmp_path, monkeypatch):
    """[Errno 28] while writing a run's file names that file and keeps errno 28; the old file and no .tmp remain."""
    target = tmp_path / "run" / "results.json"
    write_text_atomically(target, "old")
    monkeypatch.setattr(semgrad._files.os, "fsync", _full_disk)
    with pytest.raises(WriteFailed) as caught:
        write_text_atomically(target, "new")
    assert caught.value.errno == errno.ENOSPC and isinstance(caught.value, OSError)
    assert str(caught.value).startswith(f"cannot write {target}: No space left on device")
    assert target.read_text() == "old" and sorted(p.name for p in target.parent.iterdir()) == ["results.json"]


def test_a_full_disk_while_recording_names_the_cassette(tmp_path, monkeypatch):
    """[Errno 28] while appending a cassette line names the cassette."""
    path = tmp_path / "replies.jsonl"
    llm = recorded(lambda request: "4", path)
    real_open = pathlib.Path.open

    class _Full:
        def __init__(self, file):
            self.file = file

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def write(self, text):
            _full_disk()

    monkeypatch.setattr(pathlib.Path, "open", lambda self, *a, **k: _Full(real_open(self, *a, **k)))
    with pytest.raises(WriteFailed, match="No space left on device") as caught:
        anyio.run(llm, LLMRequest((Message("user", "2+2?"),)))
    assert str(path) in str(caught.value) and caught.value.errno == errno.ENOSPC


def test_semgrad_run_on_a_full_disk_says_which_file_in_one_line(tmp_path, monkeypatch, capsys):
    """`semgrad run` on a full disk exits 1 with one line naming the file it could not write (it said only
    "[Errno 28] No space left on device")."""
    data = tmp_path / "data" / "gsm8k"
    data.mkdir(parents=True)
    for file in ("train.jsonl", "test.jsonl"):
        (data / file).write_text(SAMPLE.read_text())
    monkeypatch.setattr(semgrad._files.os, "fsync", _full_disk)
    run = tmp_path / "run"
    small = ["--train", "2", "--validation", "2", "--test", "2", "--iterations", "1", "-q"]
    code = main(["run", "gsm8k", "--data-dir", str(data.parent), "--out", str(run), *small])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"semgrad: error: cannot write {run}") and "No space left on device" in lines[0]


class _Failing:
    """A real SQLite connection whose statements fail with `error` once `armed`."""

    def __init__(self, conn: sqlite3.Connection, error: str) -> None:
        self._conn, self._error, self.armed = conn, error, False

    def execute(self, *args: Any) -> Any:
        if self.armed:
            raise sqlite3.OperationalError(self._error)
        return self._conn.execute(*args)

    def __enter__(self) -> Any:
        return self._conn.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._conn.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@pytest.mark.parametrize("error", ["disk I/O error", "database or disk is full"])
def test_an_sqlite_error_from_the_cache_names_the_cache_file(tmp_path, monkeypatch, error):
    """A "disk I/O error" or a full disk under the cache, when a reply is looked up or stored, fails in one line
    naming the cache file (it said only "disk I/O error"); it is still an sqlite3.OperationalError."""
    path = tmp_path / "cache.sqlite"
    store = SqliteStore(path)
    store._conn = _Failing(store._conn, error)  # type: ignore[assignment]
    store._conn.armed = True
    for attempt in (lambda: store.get_sync("k"), lambda: len(store)):
        with pytest.raises(CacheError) as caught:
            attempt()
        assert str(path) in str(caught.value) and error in str(caught.value)
        assert isinstance(caught.value, sqlite3.OperationalError)
    store._conn.armed = False
    store.close()


def test_a_disk_io_error_through_cached_names_the_cache_file(tmp_path, monkeypatch):
    """A cached LLM whose cache file fails with "disk I/O error" raises one line naming that file."""
    path = tmp_path / "cache.sqlite"
    llm = cached(lambda request: "4", path)
    llm.store._conn = _Failing(llm.store._conn, "disk I/O error")
    llm.store._conn.armed = True
    with pytest.raises(CacheError, match="disk I/O error") as caught:
        anyio.run(llm, LLMRequest((Message("user", "2+2?"),)))
    assert str(path) in str(caught.value)


def test_a_cache_that_cannot_be_opened_names_the_file(tmp_path, monkeypatch):
    """SQLite's "unable to open database file" and a "disk I/O error" while the cache is set up name the file."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(_cache.sqlite3, "connect", refuse)
    with pytest.raises(CacheError, match="unable to open database file") as caught:
        SqliteStore(tmp_path / "a.sqlite")
    assert str(tmp_path / "a.sqlite") in str(caught.value)
    monkeypatch.undo()
    real = sqlite3.connect

    def failing(*args: Any, **kwargs: Any) -> Any:
        conn = _Failing(real(*args, **kwargs), "disk I/O error")
        conn.armed = True
        return conn

    monkeypatch.setattr(_cache.sqlite3, "connect", failing)
    with pytest.raises(CacheError, match="disk I/O error") as caught:
        SqliteStore(tmp_path / "b.sqlite")
    assert str(tmp_path / "b.sqlite") in str(caught.value)
