"""The README's tables of SIMULATED ablation outcomes: ``semgrad run bbh:navigate --optimizer X``
(4 iterations) and ``semgrad run liar --optimizer X`` (the paper's 8).

Run ``python -m tests.experiments.simulated_ablations [DATA_DIR]`` from the repository root to
print them (``... DATA_DIR liar`` for the LIAR one alone); ``test_simulated_ablations.py``
checks that the README holds exactly these tables. The LLM is the built-in simulated one: a
table shows what each ablation removes from the mechanism in that simulation, not how the method
fares with a real model.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from semgrad.backends.simulated import SKILLS, VERIFY
from semgrad.experiments import RunConfig, run_experiment

#: The optimizers compared (``--optimizer``), and what each removes.
OPTIMIZERS = {
    "neighbor-sgd": "nothing (the full method)",
    "no-gradients": "the feedback: rewrites see inputs and outputs only",
    "no-neighbors": "the siblings: each hint's feedback is asked for alone",
    "one-parameter": "all but one parameter (`--param hint_1.instruction`)",
    "no-gate": "the update gate",
}
ITERATIONS = 4
#: The parameter the one-parameter ablation trains alone.
ALONE = "hint_1.instruction"
#: The same ablations on LIAR (``semgrad run liar``, the paper's 8 iterations, official protocol).
LIAR_OPTIMIZERS = {
    "neighbor-sgd": "nothing (the full method)",
    "no-gradients": "the feedback: rewrites see inputs and outputs only",
    "no-neighbors": "the siblings: each analysis's feedback is asked for alone",
    "one-parameter": "all but one parameter (`--param statement_analysis.instruction`)",
    "no-gate": "the update gate",
}
LIAR_ITERATIONS = 8
LIAR_ALONE = "statement_analysis.instruction"
#: The nodes whose steps each table shows, in order.
NODES = {
    "bbh:navigate": ("hint_1", "hint_2", "answer"),
    "liar": (
        "statement_analysis",
        "party_analysis",
        "job_title_analysis",
        "source_analysis",
        "state_analysis",
        "answer",
    ),
}
DATA = (Path(__file__).parents[2] / ".." / "shared" / "data").resolve()


def _skills(text: str) -> str:
    held = [str(i + 1) for i, s in enumerate(SKILLS) if s.rstrip(".").casefold() in text.casefold()]
    held += ["V"] if VERIFY.rstrip(".").casefold() in text.casefold() else []
    return ",".join(held) or "-"


def outcome(optimizer: str, data_dir: Path, run_dir: Path, task: str = "bbh:navigate") -> dict[str, Any]:
    """One simulated run's figures: decisions, accuracies, the skills each instruction ends with, the final
    instructions and each iteration's record (as results.json has it)."""
    liar = task == "liar"
    param = (LIAR_ALONE if liar else ALONE) if optimizer == "one-parameter" else None
    iterations = LIAR_ITERATIONS if liar else ITERATIONS
    config = RunConfig(task=task, data_dir=str(data_dir), optimizer=optimizer, param=param, iterations=iterations)
    results = run_experiment(config, run_dir, check_backend=False)
    task = results["tasks"][0]
    return {
        "decisions": "".join({True: "A", False: "r", None: "a"}[r["accepted"]] for r in task["iterations"]),
        "train": task["accuracy"]["train"],
        "test": task["accuracy"]["test"],
        "initial_test": task["accuracy"]["initial_test"],
        "skills": {name.removesuffix(".instruction"): _skills(v) for name, v in task["params"]["final"].items()},
        "final": task["params"]["final"],
        "iterations": task["iterations"],
    }


def table(data_dir: Path = DATA, task: str = "bbh:navigate") -> str:
    """The markdown table for `task` (``bbh:navigate`` or ``liar``), one row per optimizer."""
    nodes = NODES[task]
    short = [n.removesuffix("_analysis") for n in nodes]
    rows = [
        f"| `--optimizer` | removes | decisions | train | test (initial) | steps held: {' / '.join(short)} |",
        "|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name, removes in (LIAR_OPTIMIZERS if task == "liar" else OPTIMIZERS).items():
            o = outcome(name, data_dir, Path(tmp) / name, task)
            held = " / ".join(o["skills"][n] for n in nodes)
            rows.append(
                f"| {name} | {removes} | {o['decisions']} | {o['train']:.2f} | "
                f"{o['test']:.2f} ({o['initial_test']:.2f}) | {held} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    tasks = sys.argv[2:] or ["bbh:navigate", "liar"]
    print("\n\n".join(table(where, task) for task in tasks))
