"""A paper task's split is said at the start of `semgrad run`, as your own data's is: one line for one task, one
summary line for many."""

from __future__ import annotations

import pytest

from semgrad.experiments import RunConfig
from semgrad.experiments._run_tasks import load_run_tasks
from tests._data import data_dir

from .conftest import semgrad


def _sizes(task: str, protocol: str) -> tuple[int, int, int]:
    tasks = load_run_tasks(RunConfig(task, data_dir=str(data_dir()), protocol=protocol))
    return tuple(sum(len(getattr(t.split, part)) for t in tasks) for part in ("train", "validation", "test"))  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("task", "protocol", "head", "said"),
    [
        ("bbh:navigate", "official", "Split:", "official protocol: the gate scores on the training items"),
        ("gsm8k", "heldout", "Split:", "held-out protocol: the gate scores on the validation items"),
        ("bbh:all", "official", "Split of 27 tasks:", "official protocol: the gate scores on the training items"),
    ],
)
def test_a_paper_task_run_says_its_split_at_the_start(tmp_path, task, protocol, head, said):
    """The second line of a paper task's run is its split: the train, validation and test sizes the run loaded
    (summed over bbh:all's tasks, in one line), and what the protocol scores the gate on."""
    out = tmp_path / "run"
    args = ["run", task, "--protocol", protocol, "--iterations", "1", "--max-calls", "5", "--out", str(out)]
    result = semgrad(*args, "--data-dir", str(data_dir()))
    lines = result.stdout.splitlines()
    train, validation, test = _sizes(task, protocol)
    assert lines[0] == f"Writing the run in {out}", result.stdout + result.stderr
    assert lines[1] == f"{head} train {train:,}, validation {validation:,}, test {test:,} ({said})", lines[:3]
    assert sum(line.startswith("Split") for line in lines) == 1
