"""`semgrad run my_system.py:build --data items.jsonl`: your own system and data, end to end, offline."""

from __future__ import annotations

import csv
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.core import Example
from semgrad.experiments._custom import (
    SystemSpecError,
    canonical_spec,
    is_system_spec,
    load_system,
    parse_system_spec,
    read_items,
)

from .conftest import items, one_line_error, semgrad

identifiers = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=20)


@given(st.lists(identifiers, min_size=1, max_size=3), identifiers)
def test_a_spec_names_its_module_or_file_and_function(parts, function):
    """MODULE:FUNCTION and FILE.py:FUNCTION split at the last colon; without a function, build() is meant."""
    module = ".".join(parts)
    assert parse_system_spec(f"{module}:{function}") == (module, function)
    assert parse_system_spec(f"dir/{module}.py") == (f"dir/{module}.py", "build")
    assert is_system_spec(f"{module}.py:{function}")


@given(st.lists(st.fixed_dictionaries({"inputs": st.fixed_dictionaries({"question": texts}), "target": texts})))
def test_json_lines_items_read_back_as_the_examples_written(tmp_path_factory, rows):
    """Every JSON Lines item reads back with its inputs and target, ids by position."""
    path = tmp_path_factory.mktemp("items") / "items.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    if not rows:
        with pytest.raises(SystemSpecError, match="no items"):
            read_items(path)
        return
    assert read_items(path) == tuple(Example(r["inputs"], r["target"], i) for i, r in enumerate(rows))


@given(st.lists(st.tuples(texts, texts), min_size=1))
def test_csv_items_take_every_column_but_target_and_id_as_inputs(tmp_path_factory, rows):
    """A CSV's target column is the target, every other column but id an input."""
    path = tmp_path_factory.mktemp("items") / "items.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "target"])
        writer.writerows(rows)
    assert read_items(path) == tuple(Example({"question": q}, t, i) for i, (q, t) in enumerate(rows))


def test_a_malformed_item_names_the_file_and_line(tmp_path):
    """A line that is not JSON, or lacks inputs/target, is a one-line error naming file:line."""
    path = tmp_path / "items.jsonl"
    path.write_text('{"inputs": {"q": "a"}, "target": "1"}\n{"inputs": oops\n')
    with pytest.raises(SystemSpecError, match=r"items.jsonl:2: not valid JSON"):
        read_items(path)
    path.write_text('{"inputs": {"q": "a"}}\n')
    with pytest.raises(SystemSpecError, match=r"items.jsonl:1: expected"):
        read_items(path)


def test_a_build_that_returns_something_else_is_refused(tmp_path):
    """A function that does not return (graph, params) is a clear error, not a crash later."""
    (tmp_path / "bad_system.py").write_text("def build():\n    return 42\n")
    with pytest.raises(SystemSpecError, match=r"must return \(graph, params\)"):
        load_system(str(tmp_path / "bad_system.py"))
    with pytest.raises(SystemSpecError, match="has no function 'make'"):
        load_system(f"{tmp_path / 'bad_system.py'}:make")


def test_own_system_runs_offline_and_writes_the_same_run_folder(tmp_path, system_file, items_file):
    """`semgrad run FILE.py:build --data items.jsonl` on the simulated backend writes config, checkpoint, results
    and report like a paper task, answers from the items' targets, and the optimisation improves the system."""
    out = tmp_path / "run"
    result = semgrad("run", f"{system_file}:build", "--data", str(items_file), "--iterations", "3", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert {"config.json", "checkpoint.json", "results.json", "report.html"} <= {p.name for p in out.iterdir()}
    results = json.loads((out / "results.json").read_text())
    (task,) = results["tasks"]
    assert task["task"] == canonical_spec(f"{system_file}:build")
    assert task["sizes"] == {"train": 4, "validation": 0, "test": 8}  # official: no validation split unless asked
    assert task["iterations"] and task["best_score"] > task["initial_score"]
    assert task["accuracy"]["test"] > task["accuracy"]["initial_test"]
    assert "respond.instruction" in (out / "report.html").read_text()


def test_a_module_spec_and_csv_items_and_the_judge_metric_work_offline(tmp_path, system_file):
    """MODULE:FUNCTION imports from the path, CSV items load, --metric judge scores with (simulated) evaluate calls."""
    with (tmp_path / "items.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "target"])
        writer.writerows([row["inputs"]["question"], row["target"]] for row in items(9))
    out = tmp_path / "run"
    result = semgrad(
        "run", "my_system:build", "--data", str(tmp_path / "items.csv"), "--metric", "judge",
        "--iterations", "2", "--out", str(out), env={"PYTHONPATH": f"{tmp_path}"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["calls"]["by_purpose"]["evaluate"] > 0
    (task,) = results["tasks"]
    assert task["best_score"] > task["initial_score"]
    assert task["metric"] == "judge"  # what scored the run, not the normalized match it falls back to


def test_resuming_your_own_system_needs_the_spec_typed_again(tmp_path, system_file, items_file):
    """`--resume --out DIR` alone does not load the code config.json names; typing the same spec continues the run."""
    out = tmp_path / "run"
    spec = f"{system_file}:build"
    assert semgrad("run", spec, "--data", str(items_file), "--iterations", "1", "--out", str(out)).returncode == 0
    one_line_error(semgrad("run", "--resume", "--out", str(out), "--iterations", "2"), "type its spec yourself")
    resumed = semgrad("run", spec, "--resume", "--out", str(out), "--iterations", "2")
    assert resumed.returncode == 0, resumed.stderr
    first = next(line for line in resumed.stderr.splitlines() if "iteration 2/2 forward: " in line)
    assert not first.split("forward: ")[1].startswith("0/")  # the progress counts the first process's calls
    assert len(json.loads((out / "results.json").read_text())["tasks"][0]["iterations"]) == 2


def test_a_config_json_naming_another_module_is_never_imported(tmp_path, system_file, items_file):
    """When config.json is edited to name other code, neither `--resume` alone nor the typed spec imports it."""
    out = tmp_path / "run"
    spec = f"{system_file}:build"
    assert semgrad("run", spec, "--data", str(items_file), "--iterations", "1", "--out", str(out)).returncode == 0
    marker = tmp_path / "imported"
    (tmp_path / "evil.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n\n"
        "def build():\n    raise SystemExit('evil build ran')\n"
    )
    config = json.loads((out / "config.json").read_text())
    config["task"] = canonical_spec(str(tmp_path / "evil.py"))
    (out / "config.json").write_text(json.dumps(config))
    one_line_error(semgrad("run", "--resume", "--out", str(out)), "evil.py")
    one_line_error(semgrad("run", spec, "--resume", "--out", str(out)), "not " + canonical_spec(spec))
    assert not marker.exists()
    typed = semgrad(
        "run", str(tmp_path / "evil.py"), "--data", str(items_file), "--resume", "--out", str(tmp_path / "x")
    )
    assert typed.returncode != 0 and not marker.exists()  # a typed spec is loaded only when a run is there to resume


def test_write_html_writes_the_report_of_any_fit(tmp_path):
    """`semgrad.report.write_html(fit_result, path, graph=graph)` writes a report with the params and the graph."""
    from semgrad.backends import fake
    from semgrad.core import GraphBuilder, optim
    from semgrad.effects import fit_sync
    from semgrad.report import write_html

    b = GraphBuilder()
    q = b.input("question")
    h = b.llm("hint", inputs=[q], instruction="Give a hint.")
    b.llm("solve", inputs=[q, h], instruction="Solve it.")
    graph, params = b.build(output="solve")
    train = [{"inputs": {"question": "1+1?"}, "target": "2"}]
    validation = [{"inputs": {"question": "2+2?"}, "target": "4", "id": "v"}]
    result = fit_sync(
        graph, params, optim.neighbor_sgd(k=1), train=train, validation=validation, llm=fake.HashLLM(), iterations=2
    )
    page = write_html(result, tmp_path / "r.html", graph=graph).read_text()
    assert "hint.instruction" in page and "solve.instruction" in page and "Solve it." in page
    assert "<svg" in page and "digraph" in page


def test_a_system_is_loaded_once_inside_a_block_and_anew_outside_it(tmp_path):
    """Inside systems_loaded_once a spec's code runs once; outside one, every load runs it again."""
    from semgrad._loaded_systems import systems_loaded_once

    runs = tmp_path / "runs.txt"
    system = tmp_path / "counted.py"
    system.write_text(
        "from pathlib import Path\n"
        "from semgrad.core import GraphBuilder\n"
        f"RUNS = Path({str(runs)!r})\n"
        "def build():\n"
        "    RUNS.write_text(RUNS.read_text() + 'x' if RUNS.exists() else 'x')\n"
        "    b = GraphBuilder(); q = b.input('question')\n"
        "    b.llm('answer', inputs=[q], instruction='Answer.')\n"
        "    return b.build(output='answer')\n"
    )
    spec = f"{system}:build"
    with systems_loaded_once():
        first = load_system(spec)
        with systems_loaded_once():  # nested blocks share the outer one's systems
            assert load_system(spec) is first
        assert load_system(spec) is first
    assert runs.read_text() == "x"
    load_system(spec)
    load_system(spec)
    assert runs.read_text() == "xxx"
