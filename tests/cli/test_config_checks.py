"""Run configs and data files refused in one clear line where they would have run quietly wrong: options a paper
task ignores, a protocol contradicted by the sizes, data files Excel writes, clashing ids, the wrong encoding."""

from __future__ import annotations

import json

import pytest

from semgrad.experiments import RunConfig, dry_run
from semgrad.experiments._custom import SystemSpecError, custom_task, read_items


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"metric": "judge"}, "--metric and --criteria are for your own system"),
        ({"criteria": "Is it kind?"}, "--metric and --criteria are for your own system"),
        ({"validation": 4, "protocol": "official"}, "drop --validation, or pass --protocol heldout"),
    ],
)
def test_options_a_paper_task_would_ignore_or_contradict_are_refused(changes, says):
    """A paper task refuses --metric judge / --criteria (it is scored by its protocol) and a validation size
    under the official protocol, which has no validation split."""
    with pytest.raises(ValueError, match=says):
        RunConfig("gsm8k", **changes)


def test_criteria_without_the_judge_metric_is_refused(items_file):
    """--criteria is read only by --metric judge: with another metric it is refused, not ignored."""
    with pytest.raises(ValueError, match="--criteria is for --metric judge"):
        RunConfig("my_system.py:build", data=str(items_file), criteria="Is it kind?")


def test_a_paper_task_given_data_says_data_is_for_your_own_system(items_file):
    """`bbh:navigate --data FILE` says --data is for your own system instead of failing to import 'bbh'."""
    with pytest.raises(SystemSpecError, match="one of the paper's tasks, which read --data-dir"):
        custom_task(RunConfig("bbh:navigate", data=str(items_file)))


@pytest.mark.parametrize("protocol", ["official", "heldout"])
def test_your_own_system_s_task_has_the_run_s_protocol(system_file, items_file, protocol):
    """The task of your own system carries the config's protocol, so results.json says what was run."""
    config = RunConfig(f"{system_file}:build", data=str(items_file), protocol=protocol)
    assert custom_task(config).protocol == protocol


def test_a_dry_run_on_the_simulated_backend_costs_nothing(system_file, items_file):
    """The simulated backend's plan is priced at $0.00, not 'unknown (a model has no price)'."""
    report = dry_run(RunConfig(f"{system_file}:build", data=str(items_file), iterations=1), prices={"m": (1.0, 1.0)})
    assert report.cost_usd == 0.0 and "estimated cost: $0.00" in report.table()


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_file_starting_with_a_byte_order_mark_reads_as_without_one(tmp_path, suffix):
    """A UTF-8 file with a BOM (Excel's "CSV UTF-8") reads like the same file without it."""
    path = tmp_path / f"items{suffix}"
    body = (
        "target,question\n2,one plus one\n4,two plus two\n"
        if suffix == ".csv"
        else "".join(
            json.dumps({"inputs": {"question": q}, "target": t}) + "\n" for q, t in (("1+1", "2"), ("2+2", "4"))
        )
    )
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    plain = tmp_path / f"plain{suffix}"
    plain.write_text(body)
    assert read_items(path) == read_items(plain) and len(read_items(path)) == 2


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        ([{"inputs": {"q": "a"}, "target": "1", "id": 1}, {"inputs": {"q": "b"}, "target": "2"}],
         "items 1 and 2 share the id 1 (an item without one has its position from 0 as its id)"),
        ([{"inputs": {"q": "a"}, "target": "1", "id": [1]}], "item 1's id is [1]: an id is text or a whole number"),
    ],
)  # fmt: skip
def test_clashing_or_unusable_ids_are_named_with_their_items(tmp_path, lines, says):
    """Two items with one id, or an id that is not text or a number, are refused naming the file and the items."""
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(SystemSpecError) as caught:
        read_items(path)
    assert str(path) in str(caught.value) and says in str(caught.value)


def test_a_file_in_another_encoding_or_with_a_repeated_column_is_named(tmp_path):
    """A Latin-1 file says it is not UTF-8 and names itself; a CSV column given twice is refused, not dropped."""
    latin = tmp_path / "latin.csv"
    latin.write_bytes("target,question\n1,caf\xe9\n".encode("latin-1"))
    with pytest.raises(SystemSpecError, match=f"{latin}: not UTF-8 text"):
        read_items(latin)
    twice = tmp_path / "twice.csv"
    twice.write_text("question,target,question\na,1,b\n")
    with pytest.raises(SystemSpecError, match="'question' appear more than once"):
        read_items(twice)


def test_a_dry_run_prints_the_split_whose_calls_it_counts(system_file, items_file, capsys):
    """`semgrad run ... --dry-run` prints the split line (train, validation and test sizes) before its table."""
    from semgrad.cli import main

    assert main(["run", f"{system_file}:build", "--data", str(items_file), "--iterations", "1", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Split: train ") and "validation" in out.splitlines()[0] and "Dry run" in out
