"""The README's side-by-side table of the baselines in the SIMULATED world: ``semgrad compare bbh:navigate``.

Run ``python -m tests.experiments.simulated_baselines [DATA_DIR]`` from the repository root to
print it; ``test_simulated_baselines.py`` checks that the README holds exactly this table. The
LLM is the built-in simulated one: the table shows what information each method's calls carry
in that simulation, not how the methods fare with a real model. (Wall time, which
``semgrad compare`` also reports, depends on the machine and is left out here.)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from semgrad.backends.simulated import SKILLS, VERIFY
from semgrad.experiments import RunConfig, compare

#: The optimizers compared, in the order of ``semgrad compare``'s default.
OPTIMIZERS = ("neighbor-sgd", "textgrad", "optoprime", "copro")
ITERATIONS = 4
BREADTH = 4
DATA = (Path(__file__).parents[2] / ".." / "shared" / "data").resolve()


def _skills(text: str) -> str:
    held = [str(i + 1) for i, s in enumerate(SKILLS) if s.rstrip(".").casefold() in text.casefold()]
    held += ["V"] if VERIFY.rstrip(".").casefold() in text.casefold() else []
    return ",".join(held) or "-"


def outcomes(data_dir: Path, out: Path) -> list[dict[str, Any]]:
    """Each method's figures from one `compare` run."""
    config = RunConfig(task="bbh:navigate", data_dir=str(data_dir), iterations=ITERATIONS, breadth=BREADTH)
    summary = compare(config, OPTIMIZERS, out)
    found = []
    for method in summary["methods"]:
        results = json.loads((out / method["run_dir"] / "results.json").read_text("utf-8"))
        final = results["tasks"][0]["params"]["final"]
        found.append({**method, "skills": {n.removesuffix(".instruction"): _skills(v) for n, v in final.items()}})
    return found


def table(data_dir: Path = DATA) -> str:
    """The markdown table, one row per method."""
    rows = [
        "| method | train score per iteration, then final | test (initial) | forward / backward / rewrite calls "
        "| steps held: hint_1 / hint_2 / answer |",
        "|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for o in outcomes(data_dir, Path(tmp)):
            scores = " ".join(f"{s:.2f}" for s in o["scores"])
            calls = " / ".join(str(o["calls_by_purpose"].get(p, 0)) for p in ("forward", "backward", "rewrite"))
            held = " / ".join(o["skills"][n] for n in ("hint_1", "hint_2", "answer"))
            rows.append(
                f"| {o['optimizer']} | {scores} | {o['test']:.2f} ({o['initial_test']:.2f}) | {calls} | {held} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    print(table(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA))
