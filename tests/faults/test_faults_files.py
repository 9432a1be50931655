"""Fault injection, files (engineer 15-files): crafted and damaged checkpoints, caches and other run files.

What it tries, and the figure it holds -- *nothing is executed from a file, and no bad file fails silently*:

* checkpoint.json naming code (``semgrad._files:write_text_atomically``, a sentinel callable, ``os:system``)
  and arbitrary JSON from hypothesis: the decoder calls nothing outside its allow-list of run-state types
  (``importlib.import_module`` and the sentinel are never hit) and refuses with one line naming the file;
* every field of a real checkpoint replaced by a value of another type: refused, one line naming the file;
* ``"iteration": -5``, a missing ``state``, truncated JSON, deep nesting: refused, one line, what to do;
* another run's checkpoint (other optimizer, other settings, other data, other loss): refused, naming what differs;
* a damaged cache file, a cache row or cassette line with values of the wrong type: one line naming the file and
  what to do, not ``file is not a database``;
* a SIGKILL during an atomic write: its ``.tmp`` file is removed by the next write beside it;
* the package's file readers: no module of semgrad imports or evaluates anything by a name it read.
"""

from __future__ import annotations

import ast
import importlib
import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import semgrad
import semgrad._files
from semgrad._bundled_pairs import gsm8k_sample
from semgrad.backends.simulated import SimulatedLLM
from semgrad.core import Example, optim
from semgrad.core.scoring import normalized_match, numeric_match
from semgrad.effects import CheckpointError, fit_sync
from semgrad.effects._checkpoint import decode, read_checkpoint
from semgrad.topologies import paper_graph

ROOT = Path(__file__).resolve().parents[2]
CALLED: list[object] = []


def sentinel(*args, **kwargs):
    """A callable a crafted checkpoint names; it must never run."""
    CALLED.append((args, kwargs))
    return "called"


def _demo(checkpoint=None, resume=None, optimizer=None, iterations=1, **options):
    samples = gsm8k_sample()
    examples = [Example({"question": q}, a, id=i) for i, (q, a) in enumerate(samples)]
    graph, params = paper_graph()
    options = {"train": examples[:5], "validation": examples[5:], "loss": numeric_match(), **options}
    return fit_sync(
        graph,
        params,
        optimizer or optim.neighbor_sgd(k=2),
        llm=SimulatedLLM(dict(samples), seed=5),
        iterations=iterations,
        checkpoint=checkpoint,
        resume=resume,
        **options,
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict:
    """A real two-iteration checkpoint, as parsed JSON."""
    path = tmp_path_factory.mktemp("ckpt") / "checkpoint.json"
    _demo(checkpoint=path, iterations=2)
    return json.loads(path.read_text())


def _write(path: Path, data) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def _one_line_naming(exc: BaseException, path: Path) -> None:
    text = str(exc)
    assert "\n" not in text and str(path) in text, text


#: The run-state tags a real checkpoint holds, and tags naming code.
RUN_STATE = [
    "semgrad.core._graph:Parameter",
    "semgrad.core._graph:Params",
    "semgrad.core.optim._base:EmptyState",
    "semgrad.core.optim._base:StageReport",
    "semgrad.core.optim._stages:GateState",
    "semgrad.core.optim._stages:SelectState",
    "semgrad.core.optim._combining:EveryKState",
    "semgrad.effects._fit:IterationRecord",
    "semgrad.effects._fit:_RunState",
]
TAGS = st.sampled_from(
    [
        *RUN_STATE,
        "semgrad._files:write_text_atomically",
        "tests.faults.test_faults_files:sentinel",
        "semgrad.cli:main",
        "os:system",
        "builtins:eval",
        "semgrad.effects._checkpoint:CheckpointError",
    ]
)
KEYS = st.sampled_from(["$attrs", "fields", "$tuple", "$map", "$dict", "state", "format", "path", "text", "argv"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8) | TAGS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(KEYS | st.text(max_size=4), inner, max_size=4)
        | st.builds(
            lambda tag, fields: {"$attrs": tag, "fields": fields}, TAGS, st.dictionaries(KEYS, inner, max_size=4)
        )
    ),
    max_leaves=25,
)


@given(JSON)
def test_decoding_arbitrary_json_never_imports_or_calls_anything_outside_the_allow_list(data):
    """Arbitrary JSON, crafted tags included, decodes to a value or a CheckpointError; nothing is imported or run."""
    imported: list[str] = []
    CALLED.clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(importlib, "import_module", lambda name, *a: imported.append(name))
        try:
            value = decode(data)
        except CheckpointError as exc:
            assert "\n" not in str(exc)
        else:
            assert not isinstance(value, str) or value == data
    assert imported == [] and CALLED == []


@pytest.mark.parametrize(
    "tag",
    ["semgrad._files:write_text_atomically", "tests.faults.test_faults_files:sentinel", "semgrad.testing:sentinel"],
)
def test_a_checkpoint_naming_a_function_is_refused_and_the_function_never_runs(tmp_path, monkeypatch, tag):
    """A crafted checkpoint.json naming a semgrad function (or a planted sentinel) is refused in one line; no call."""
    import semgrad.testing

    monkeypatch.setattr(semgrad.testing, "sentinel", sentinel, raising=False)
    CALLED.clear()
    victim = tmp_path / "written-by-the-checkpoint.txt"
    fields = {"path": str(victim), "text": "owned"}
    path = _write(
        tmp_path / "checkpoint.json", {"format": "semgrad.checkpoint/1", "state": {"$attrs": tag, "fields": fields}}
    )
    with pytest.raises(CheckpointError) as caught:
        read_checkpoint(path)
    _one_line_naming(caught.value, path)
    assert not victim.exists() and CALLED == []


def _paths(value, at=()):
    """Every (path, leaf) of a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*at, i))
    yield at, value


def _replace(value, at, new):
    if not at:
        return new
    copy = list(value) if isinstance(value, list) else dict(value)
    copy[at[0]] = _replace(value[at[0]], at[1:], new)
    return copy


def _typed(saved, at):
    """Whether the field at `at` has a type hint other than Any."""
    from semgrad.effects._checkpoint import _field_types, allowed_types

    owner = saved["state"]
    for key in at[:-2]:
        owner = owner[key]
    return _field_types(allowed_types()[owner["$attrs"]])[at[-1]][1] is not Any


def test_every_field_of_a_checkpoint_with_a_value_of_the_wrong_type_is_refused(saved, tmp_path):
    """Each typed field of a real checkpoint (all but those typed Any), replaced by a dict, is refused in one line."""
    fields = [at for at, v in _paths(saved["state"]) if len(at) >= 2 and at[-2] == "fields" and _typed(saved, at)]
    assert len(fields) > 30
    for at in fields:
        path = _write(tmp_path / "checkpoint.json", {**saved, "state": _replace(saved["state"], at, {"$dict": []})})
        with pytest.raises(CheckpointError) as caught:
            read_checkpoint(path)
        _one_line_naming(caught.value, path)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda s: {**s, "state": {**s["state"], "fields": {**s["state"]["fields"], "iteration": -5}}}, "negative"),
        (lambda s: {**s, "state": {**s["state"], "fields": {**s["state"]["fields"], "iteration": 7}}}, "iteration 7"),
        (lambda s: {k: v for k, v in s.items() if k != "state"}, "no run state"),
        (lambda s: json.dumps(s)[:500], "damaged"),
        (lambda s: "[" * 100_000 + "]" * 100_000, "damaged"),
        (lambda s: {**s, "format": "other"}, "not a semgrad checkpoint"),
        (lambda s: {**s, "state": {"$tuple": [1, 2]}}, "no run state"),
    ],
    ids=["negative-iteration", "iteration-past-history", "no-state", "truncated", "deep", "format", "not-state"],
)
def test_a_damaged_or_edited_checkpoint_is_refused_in_one_line_naming_the_file(saved, tmp_path, change, words):
    """fit(resume=...) refuses a damaged or edited checkpoint with one line that names it and says what to do."""
    path = _write(tmp_path / "checkpoint.json", change(saved))
    with pytest.raises(CheckpointError, match=words) as caught:
        _demo(resume=path, iterations=3)
    _one_line_naming(caught.value, path)
    assert "remove" in str(caught.value)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"optimizer": optim.tgd(2)}, "optimizer"),
        ({"optimizer": optim.neighbor_sgd(k=3)}, "optimizer"),
        ({"optimizer": optim.neighbor_sgd(k=2, seed=9)}, "optimizer"),
        ({"loss": normalized_match()}, "loss"),
        ({"train": [Example({"question": "2+2?"}, "4")]}, "training data"),
        ({"validation": ()}, "validation data"),
        ({"options": {"forward": {"temperature": 0.7}}}, "sampling options"),
    ],
    ids=["tgd", "k", "seed", "loss", "train", "validation", "options"],
)
def test_another_runs_checkpoint_is_refused_saying_what_differs(tmp_path, options, words):
    """Another run's checkpoint (same graph and params; other optimizer, settings, loss, data or options) is refused."""
    path = tmp_path / "checkpoint.json"
    _demo(checkpoint=path, iterations=1)
    with pytest.raises(CheckpointError, match=words) as caught:
        _demo(resume=path, iterations=2, **options)
    _one_line_naming(caught.value, path)


def test_the_same_runs_checkpoint_still_resumes(tmp_path):
    """The fingerprint is stable: a run rebuilt from the same factories resumes its own checkpoint."""
    path = tmp_path / "checkpoint.json"
    _demo(checkpoint=path, iterations=1)
    assert len(_demo(resume=path, iterations=2).history) == 2


def test_a_damaged_cache_file_is_refused_in_one_line_naming_it(tmp_path):
    """A cache that is not an SQLite database gives one line naming it and what to do, not 'file is not a database'."""
    from semgrad.effects import cached

    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"this is not a database, just some text" * 100)
    with pytest.raises(ValueError) as caught:
        cached(lambda request: "4", path=path)
    _one_line_naming(caught.value, path)
    assert "delete" in str(caught.value)


def test_a_sigkill_during_an_atomic_write_leaves_no_tmp_file_after_the_next_write(tmp_path):
    """A process SIGKILLed between writing and renaming leaves a .tmp; the next write beside it removes it."""
    target = tmp_path / "checkpoint.json"
    script = textwrap.dedent(
        f"""
        import os, signal
        os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
        from semgrad._files import write_text_atomically
        write_text_atomically({str(target)!r}, "half")
        """
    )
    killed = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    semgrad._files.write_text_atomically(target, "whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.json"]
    assert target.read_text() == "whole"


def test_a_tmp_file_of_a_live_writer_is_left_alone(tmp_path):
    """Only a dead writer's temporary file is removed: one whose process still runs (this one) is kept."""
    target = tmp_path / "results.json"
    live = semgrad._files.temporary_path(target)
    live.write_text("in flight")
    semgrad._files.write_text_atomically(target, "whole")
    assert live.exists()


#: Modules allowed to import by name, and why: none. Only what the user types may name code to load.
NAME_LOADERS = {
    "importlib.import_module",
    "__import__",
    "eval",
    "exec",
    "pickle.load",
    "pickle.loads",
    "marshal.loads",
    "runpy.run_path",
    "runpy.run_module",
    "compile",
}


#: The one module that imports code by name: `semgrad run FILE.py:build --data ... --llm L.py --metric M.py:fn`
#: loads the system, LLM and metric the user TYPED (never those a file names; tests/cli/test_custom_system.py and
#: tests/cli/test_own_llm_and_metric.py check a config.json naming other code).
TYPED_SYSTEM_LOADER = Path(semgrad.__file__).parent / "experiments" / "_user_code.py"


def test_no_module_of_semgrad_loads_or_evaluates_code_by_a_name_it_read():
    """An audit of every reader (checkpoint, cache, cassette, config, results, sweeps, report): no dynamic import,
    eval, exec or unpickling anywhere in the package (but the loader of the system the user types)."""
    found = []
    for file in Path(semgrad.__file__).parent.rglob("*.py"):
        if file == TYPED_SYSTEM_LOADER:
            continue
        for node in ast.walk(ast.parse(file.read_text("utf-8"))):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name in NAME_LOADERS or name.endswith(".import_module"):
                    found.append(f"{file.name}:{node.lineno}: {name}")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                if "import_module" in names or any(
                    n in ("pickle", "marshal", "runpy", "shelve", "dill") for n in names
                ):
                    found.append(f"{file.name}:{node.lineno}: import {names}")
            if isinstance(node, ast.Import) and any(a.name == "importlib" for a in node.names):
                found.append(f"{file.name}:{node.lineno}: import importlib")
    assert found == []


@pytest.mark.parametrize(
    "record",
    [
        {"key": "k", "response": {"text": {"$attrs": "semgrad.cli:main"}, "usage": {}, "model": "m"}},
        {"key": "k", "response": {"text": "4", "usage": ["os:system"], "model": "m"}},
        {"key": "k", "response": {"text": "4", "usage": {"input_tokens": "many"}, "model": "m"}},
        {"key": ["k"], "response": {"text": "4"}},
    ],
    ids=["text-object", "usage-list", "usage-text", "key-list"],
)
def test_a_cassette_record_with_values_of_the_wrong_type_is_refused_naming_the_file(tmp_path, record):
    """replayed() refuses a cassette line whose key, text, usage or model has the wrong type, naming file and line."""
    from semgrad.effects import replayed

    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(ValueError) as caught:
        replayed(path)
    _one_line_naming(caught.value, path)


def test_a_cache_row_with_a_damaged_usage_is_refused_naming_the_file(tmp_path):
    """A cache row whose usage is not an object is refused with one line naming the cache and what to do."""
    import sqlite3

    from semgrad.effects._cache import SqliteStore

    path = tmp_path / "cache.sqlite"
    store = SqliteStore(path)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO replies VALUES ('k', 'text', '[\"os:system\"]', 'm', NULL, NULL, 0)")
    with pytest.raises(ValueError) as caught:
        store.get_sync("k")
    store.close()
    _one_line_naming(caught.value, path)
    assert "delete" in str(caught.value)


def test_a_checkpoint_without_a_run_fingerprint_is_refused_saying_so(saved, tmp_path):
    """A checkpoint from before run fingerprints (no belongs_to) is refused as unbound, not as another run's."""
    fields = {k: v for k, v in saved["state"]["fields"].items() if k != "belongs_to"}
    path = _write(tmp_path / "checkpoint.json", {**saved, "state": {**saved["state"], "fields": fields}})
    with pytest.raises(CheckpointError, match="older semgrad") as caught:
        _demo(resume=path, iterations=3)
    _one_line_naming(caught.value, path)
