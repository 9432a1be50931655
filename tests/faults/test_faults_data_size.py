"""Big data files: a data file is capped (`semgrad.tasks.MAX_ITEMS`, `--max-items N` on run, compare and sweep,
``max_items`` in a sweep spec); a larger one stops in one line naming the file, the limit and the flag, and is
refused as its reading passes the limit, not after the whole file is read."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from semgrad.experiments import RunConfig
from semgrad.experiments._custom import SystemSpecError, read_items
from semgrad.experiments._resume import resumed_config
from semgrad.tasks import MAX_ITEMS, DataError, load_task
from tests.cli.conftest import SYSTEM, items

from ._servers import semgrad

LIMIT = 5


def _says_the_limit(message: str, file: Path) -> None:
    """One line naming the file, the limit and the flag."""
    assert "\n" not in message
    assert f"{file} holds more than {LIMIT} items" in message and "--max-items N" in message, message


def _gsm8k(root: Path, n: int) -> Path:
    (root / "gsm8k").mkdir(parents=True, exist_ok=True)
    for part in ("train", "test"):
        rows = [{"question": f"{i} + {i}?", "answer": f"so\n#### {2 * i}"} for i in range(n)]
        (root / "gsm8k" / f"{part}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _bbh(root: Path, n: int) -> Path:
    (root / "bbh").mkdir(parents=True, exist_ok=True)
    rows = [{"input": f"Is {i} even?", "target": "Yes" if i % 2 == 0 else "No"} for i in range(n)]
    (root / "bbh" / "navigate.json").write_text(json.dumps({"canary": "x", "examples": rows}))
    return root


def _liar(root: Path, n: int) -> Path:
    (root / "liar").mkdir(parents=True, exist_ok=True)
    for part in ("train", "valid", "test"):
        rows = [
            [f"{i}.json", "false" if i % 2 else "true", f"claim {i}", "s", "ann", "mayor", "ohio", "dem"]
            + ["0"] * 5
            + ["a speech"]
            for i in range(n)
        ]
        (root / "liar" / f"{part}.tsv").write_text("".join("\t".join(r) + "\n" for r in rows))
    return root


def test_the_default_limit_is_a_million_items():
    """`semgrad.tasks.MAX_ITEMS` is one million, and a run with no max_items takes it."""
    assert MAX_ITEMS == 1_000_000 and RunConfig("gsm8k").items_limit == MAX_ITEMS
    assert RunConfig("gsm8k", max_items=7).items_limit == 7


@pytest.mark.parametrize(
    ("task", "make", "file"),
    [
        ("gsm8k", _gsm8k, "gsm8k/train.jsonl"),
        ("bbh:navigate", _bbh, "bbh/navigate.json"),
        ("liar", _liar, "liar/train.tsv"),
    ],
)
def test_a_paper_task_file_over_the_limit_is_refused_naming_it(tmp_path, task, make, file):
    """A paper task's data file of LIMIT + 1 items is refused with one line naming it, the limit and the flag;
    one of LIMIT items passes the check."""
    make(tmp_path / "over", LIMIT + 1)
    with pytest.raises(DataError) as caught:
        load_task(task, tmp_path / "over", train=1, test=1, max_items=LIMIT)
    _says_the_limit(str(caught.value), tmp_path / "over" / file)
    make(tmp_path / "at", LIMIT)
    assert load_task(task, tmp_path / "at", train=1, test=1, max_items=LIMIT).split.train


def _write_items(path: Path, n: int) -> Path:
    rows = items(n)
    if path.suffix == ".csv":
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["question", "target"])
            writer.writerows([r["inputs"]["question"], r["target"]] for r in rows)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_your_own_data_over_the_limit_is_refused_before_the_rest_is_read(tmp_path, suffix):
    """Your --data file past the limit is refused as soon as its reading passes it: a malformed line after the
    limit is never reached (the file is not read whole first)."""
    path = _write_items(tmp_path / f"items{suffix}", LIMIT + 1)
    with path.open("a") as handle:
        handle.write("{not json, not csv,,,,\n")
    with pytest.raises(SystemSpecError) as caught:
        read_items(path, max_items=LIMIT)
    _says_the_limit(str(caught.value), path)
    assert len(read_items(_write_items(tmp_path / f"ok{suffix}", LIMIT), max_items=LIMIT)) == LIMIT


def _system(tmp_path: Path) -> Path:
    path = tmp_path / "my_system.py"
    path.write_text(SYSTEM)
    return path


def _one_line(result, file: Path) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("semgrad:")]
    assert len(lines) == 1 and lines[0].startswith("semgrad: error: "), result.stderr
    _says_the_limit(lines[0], file)


def test_semgrad_run_takes_max_items(tmp_path):
    """`semgrad run --max-items N` refuses a larger --data file in one line, before anything runs or is
    written; a limit the file fits in lets it run."""
    data = _write_items(tmp_path / "items.jsonl", 9)
    system = str(_system(tmp_path))
    refused = semgrad("run", system, "--data", str(data), "--max-items", str(LIMIT), "--out", str(tmp_path / "o"))
    _one_line(refused, data)
    assert not (tmp_path / "o").exists()
    dry = semgrad("run", system, "--data", str(data), "--max-items", "9", "--dry-run")
    assert dry.returncode == 0, dry.stderr


def test_semgrad_compare_takes_max_items(tmp_path):
    """`semgrad compare --max-items N` refuses a paper task's larger data file in one line."""
    root = _gsm8k(tmp_path / "data", LIMIT + 1)
    result = semgrad(
        "compare", "gsm8k", "--data-dir", str(root), "--train", "1", "--test", "1", "--max-items", str(LIMIT),
        "--dry-run", "--out", str(tmp_path / "cmp"),
    )  # fmt: skip
    _one_line(result, root / "gsm8k" / "train.jsonl")


def test_a_sweep_takes_max_items_from_its_spec_and_the_flag_over_it(tmp_path):
    """A sweep spec's settings.max_items refuses a larger file in one line before any run; `--max-items` on
    the command line overrides the spec's."""
    root = _gsm8k(tmp_path / "data", LIMIT + 1)
    spec = tmp_path / "s.toml"
    spec.write_text(
        'tasks = ["gsm8k"]\nseeds = [0]\noptimizers = ["tgd"]\n[settings]\n'
        f'data_dir = "{root}"\ntrain = 1\ntest = 1\niterations = 1\nmax_items = {LIMIT}\n'
    )
    _one_line(semgrad("sweep", str(spec), "--local", "--out", str(tmp_path / "a")), root / "gsm8k" / "train.jsonl")
    assert not (tmp_path / "a").exists()
    raised = semgrad("sweep", str(spec), "--local", "--max-items", str(LIMIT + 1), "--out", str(tmp_path / "b"))
    assert raised.returncode == 0, raised.stderr


def test_max_items_may_change_on_resume():
    """--max-items changes how a run reads its files, not what it computes: --resume takes a new one."""
    saved = RunConfig("gsm8k", data_dir="d")
    assert resumed_config(saved, {"max_items": 10}, "DIR").max_items == 10
    assert not RunConfig("gsm8k", data_dir="d", max_items=3).differs_from(saved)
