"""The official protocol's training items are the official scripts' own (seed 0), without their leak."""

from __future__ import annotations

import json
import random

import pytest

from semgrad.tasks import load_task

from ._official import DATA, official, official_datasets, skip_module_without_official

skip_module_without_official()


def _jsonl(path):
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_bbh_training_items_are_the_official_scripts():
    """For seed 0, `load_task(..., protocol="official")` trains on the 20 items the official BBH script drew."""
    mods = official()
    path = DATA / "bbh" / "navigate.json"
    if not path.is_file():
        pytest.skip(f"BBH data is absent: {path}")
    rows = json.loads(path.read_text("utf-8"))["examples"]
    random.seed(0)  # what the official script does before its first get_split
    with official_datasets(lambda name, category: {"test": [dict(r) for r in rows]}):
        theirs = mods.bbh_data.get_split("train", "navigate")
    ours = load_task("bbh:navigate", DATA, protocol="official", seed=0)
    assert [e.inputs["question"] for e in ours.split.train] == [q["input"] for q in theirs]


def test_gsm8k_training_items_are_the_official_scripts_and_the_test_file_is_whole():
    """For seed 0, the official GSM8K protocol trains on the official script's 128 items and tests on all 1,319."""
    mods = official()
    if not (DATA / "gsm8k" / "train.jsonl").is_file():
        pytest.skip("GSM8K data is absent")
    files = {split: _jsonl(DATA / "gsm8k" / f"{split}.jsonl") for split in ("train", "test")}
    random.seed(0)
    with official_datasets(lambda name, config: {s: [dict(r) for r in rows] for s, rows in files.items()}):
        theirs = mods.gsm8k_data.get_split("train")
    ours = load_task("gsm8k", DATA, protocol="official", seed=0)
    assert [e.inputs["question"] for e in ours.split.train] == [q["question"] for q in theirs]
    assert [e.target for e in ours.split.train] == [q["label"].replace(",", "").strip() for q in theirs]
    assert ours.split.sizes == (128, 0, 1319)
