"""The data directory the tests read: the real data sets when ``../shared/data`` is beside the repository, else a
small synthetic copy that this module writes itself.

The synthetic copy has the real layout and formats (see ``semgrad data get`` and the README's data section): the 27
BBH task files with the real example counts, GSM8K's ``train.jsonl`` / ``test.jsonl`` and LIAR's three TSV files
with the real row counts, label counts and incomplete rows. Its text is made up here (no line of the real data sets
is in this repository). It is written once per content version into the system's temporary folder, atomically, so
parallel test processes share it. Tests that are about the real files themselves (their exact content, the
published tables computed from them) ask for `REAL_DATA` with `needs_real_data` and skip without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

from semgrad.tasks import BBH_CHOICE_TASKS, BBH_TASKS

ROOT = Path(__file__).resolve().parents[1]
#: The real data sets: ``$SEMGRAD_TEST_DATA`` when set (a folder `semgrad data get bbh gsm8k liar --dir DIR`
#: wrote), else ``../shared/data`` beside the repository.
REAL_DATA = Path(os.environ.get("SEMGRAD_TEST_DATA") or ROOT.parent / "shared" / "data").resolve()
needs_real_data = pytest.mark.skipif(
    not REAL_DATA.is_dir(),
    reason=f"needs the real data sets in {REAL_DATA}: `semgrad data get bbh gsm8k liar --dir DIR`, "
    "then SEMGRAD_TEST_DATA=DIR",
)

#: Examples per BBH task file (250 unless listed), as in the real files.
BBH_COUNTS = {"causal_judgement": 187, "penguins_in_a_table": 146, "snarks": 178}
GSM8K_COUNTS = {"train": 7473, "test": 1319}
#: Per LIAR file: rows in all, rows labelled false, rows labelled true, and of those complete (kept by default).
LIAR_COUNTS = {"train": (10269, 1998, 1683, 2343), "valid": (1284, 0, 0, 276), "test": (1283, 0, 0, 296)}
LIAR_BINARY = {"valid": 432, "test": 461}
_OTHER_LABELS = ("half-true", "mostly-true", "barely-true", "pants-fire")
_WORDS = "apple brook cedar delta ember fjord grove harbor island jasper kettle lantern meadow nectar orchid".split()


def _bbh_example(task: str, i: int, rng: random.Random) -> dict[str, str]:
    question = f"Synthetic {task.replace('_', ' ')} question {i}: {' '.join(rng.sample(_WORDS, 4))}."
    if task in BBH_CHOICE_TASKS:
        options = "\n".join(f"({letter}) option {letter.lower()}{i}" for letter in "ABCDE")
        return {"input": f"{question}\nOptions:\n{options}", "target": f"({rng.choice('ABCDE')})"}
    target = {
        "boolean_expressions": lambda: rng.choice(("True", "False")),
        "causal_judgement": lambda: rng.choice(("Yes", "No")),
        "navigate": lambda: rng.choice(("Yes", "No")),
        "web_of_lies": lambda: rng.choice(("Yes", "No")),
        "sports_understanding": lambda: rng.choice(("yes", "no")),
        "formal_fallacies": lambda: rng.choice(("valid", "invalid")),
        "dyck_languages": lambda: " ".join(rng.sample((")", "]", "}", ">"), rng.randint(1, 4))),
        "multistep_arithmetic_two": lambda: str(rng.randint(-500, 500)),
        "object_counting": lambda: str(rng.randint(2, 20)),
        "word_sorting": lambda: " ".join(sorted(rng.sample(_WORDS, rng.randint(2, 8)))) + f" z{i}",
    }[task]()
    return {"input": question, "target": target}


def _liar_row(file: str, i: int, label: str, complete: bool, rng: random.Random) -> str:
    quote = '"' if i % 7 == 0 else ""  # an unbalanced quote, as in the real files
    statement = f"{quote}Synthetic claim {file} {i} about {' and '.join(rng.sample(_WORDS, 2))}."
    job, state, party, context = "Governor", rng.choice(("Texas", "Ohio", "Florida")), "independent", "a speech"
    if not complete:
        state = rng.choice(("", "none"))
    counts = [str(rng.randint(0, 9)) for _ in range(5)]
    return "\t".join([f"{i}.json", label, statement, "topic", "a-speaker", job, state, party, *counts, context])


def _liar_lines(file: str, rng: random.Random) -> list[str]:
    total, false, true, complete = LIAR_COUNTS[file]
    if file != "train":
        binary = LIAR_BINARY[file]
        false, true = binary // 2 + 1, binary - binary // 2 - 1
    labels = ["false"] * false + ["true"] * true
    rest = total - len(labels)
    if file == "train":  # the real train file's label counts
        labels += ["half-true"] * 2123 + ["mostly-true"] * 1966 + ["barely-true"] * 1657 + ["pants-fire"] * 842
    else:
        labels += [_OTHER_LABELS[k % 4] for k in range(rest)]
    rng.shuffle(labels)
    binary_at = [k for k, label in enumerate(labels) if label in ("false", "true")]
    keep = set(rng.sample(binary_at, complete))
    return [
        _liar_row(file, k + 1, label, k in keep or label not in ("false", "true"), rng)
        for k, label in enumerate(labels)
    ]


def write_data(root: Path) -> Path:
    """Write the synthetic bbh/, gsm8k/ and liar/ folders under `root` and return `root`."""
    rng = random.Random(2017)
    (root / "bbh").mkdir(parents=True)
    for task in BBH_TASKS:
        examples = [_bbh_example(task, i, rng) for i in range(BBH_COUNTS.get(task, 250))]
        payload = {"canary": "synthetic test data", "examples": examples}
        (root / "bbh" / f"{task}.json").write_text(json.dumps(payload), "utf-8")
    (root / "gsm8k").mkdir()
    for file, count in GSM8K_COUNTS.items():
        lines = []
        for i in range(count):
            a, b = rng.randint(1, 999), rng.randint(1, 999)
            question = f"Synthetic {file} problem {i}: a crate holds {a} apples and another {b}. How many in all?"
            answer = f"They hold {a} + {b} = <<{a}+{b}={a + b}>>{a + b} apples.\n#### {a + b:,}"
            lines.append(json.dumps({"question": question, "answer": answer}))
        (root / "gsm8k" / f"{file}.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    (root / "liar").mkdir()
    for file in LIAR_COUNTS:
        (root / "liar" / f"{file}.tsv").write_text("\n".join(_liar_lines(file, rng)) + "\n", "utf-8")
    return root


def synthetic_data() -> Path:
    """The synthetic data directory, written on first use into the temporary folder (shared, atomic)."""
    version = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    final = Path(tempfile.gettempdir()) / f"semgrad-test-data-{version}"
    if not final.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
        write_data(staging / "data")
        try:
            os.replace(staging / "data", final)
        except OSError:  # another process finished first
            if not final.is_dir():
                raise
        shutil.rmtree(staging, ignore_errors=True)
    return final


def data_dir() -> Path:
    """The real data sets when they are beside the repository, else the synthetic copy."""
    return REAL_DATA if REAL_DATA.is_dir() else synthetic_data()
