"""``python -m benchmarks.plan_scale``: how long `semgrad.experiments.plan` takes on a large data file.

Writes a data file of N items (default 100,000 arithmetic questions) and the
three-node system of the command-line tests to a temporary folder, plans a run
of it (one iteration, the default splits: 20 train, 20 validation, the rest
test) and prints one line: the items, the seconds to plan, the calls planned.
Before the plan was a value, ``semgrad run --dry-run`` replayed every item
twice: 107 s and 740 MB for 100,000 items.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from semgrad.experiments import RunConfig, plan

SYSTEM = """
from semgrad.core import GraphBuilder


def build():
    b = GraphBuilder()
    q = b.input("question")
    plan = b.llm("plan", inputs=[q], instruction="Plan how to solve the problem.")
    check = b.llm("check", inputs=[q], instruction="Say what to watch out for.")
    b.llm("respond", inputs=[q, plan, check], instruction="Answer the question.")
    return b.build(output="respond")
"""


def plan_seconds(items: int, folder: Path) -> tuple[float, int]:
    """Seconds to plan a run over `items` items written to `folder`, and the calls planned."""
    (folder / "system.py").write_text(SYSTEM)
    data = folder / "items.jsonl"
    with data.open("w") as file:
        for i in range(items):
            file.write(json.dumps({"inputs": {"question": f"What is {i} plus {i}?"}, "target": str(2 * i)}) + "\n")
    started = time.perf_counter()
    planned = plan(RunConfig(f"{folder / 'system.py'}:build", data=str(data), iterations=1))
    return time.perf_counter() - started, planned.total_calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        seconds, calls = plan_seconds(args.items, Path(folder))
    print(f"plan of {args.items:,} items: {seconds:.2f} s, {calls:,} calls planned")


if __name__ == "__main__":
    main()
