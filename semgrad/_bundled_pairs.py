"""The small sample data bundled with the package (see semgrad/data/ATTRIBUTION.md)."""

from __future__ import annotations

import json
import re
from importlib import resources

__all__ = ["gsm8k_sample", "bbh_sample"]


def gsm8k_sample() -> tuple[tuple[str, str], ...]:
    """``(question, numeric answer)`` for the bundled GSM8K items."""
    text = resources.files("semgrad.data").joinpath("gsm8k_sample.jsonl").read_text("utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return tuple((row["question"], re.split(r"####\s*", row["answer"])[-1].strip()) for row in rows)


def bbh_sample(task: str) -> tuple[tuple[str, str], ...]:
    """``(input, target)`` for the bundled items of one BBH task."""
    path = resources.files("semgrad.data").joinpath(f"bbh_{task}_sample.json")
    data = json.loads(path.read_text("utf-8"))
    return tuple((ex["input"], ex["target"]) for ex in data["examples"])
