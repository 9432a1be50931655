"""The README's side-by-side table of the baselines in the SIMULATED world: ``semgrad compare bbh:navigate``.

Run ``python -m tests.experiments.simulated_baselines [DATA_DIR]`` from the repository root to
print it; ``test_simulated_baselines.py`` checks that the README holds exactly this table. The
LLM is the built-in simulated one: the table shows what information each method's calls carry
in that simulation, not how the methods fare with a real model. (Wall time, which
``semgrad compare`` also reports, depends on the machine and is left out here.)

The simulated LLM uses no tokens. The table's tokens are what the requests each method sent (and their replies)
would be at four characters per token, and its dollars those tokens at the paper's models' list prices
(gpt-4o-mini forward, gpt-4-turbo backward and rewrites; `semgrad/data/prices.json`): a measure of how much text
each method moves, not a bill.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from semgrad.backends.simulated import SKILLS, VERIFY
from semgrad.experiments import RunConfig, build_llm, compare, estimate_cost, estimate_tokens, load_run_tasks
from semgrad.experiments._prices import bundled_prices

#: The optimizers compared: ``semgrad compare``'s default, then the Pareto searches.
OPTIMIZERS = ("neighbor-sgd", "textgrad", "optoprime", "copro", "gepa", "pareto-sgd")
ITERATIONS = 4
BREADTH = 4
DATA = (Path(__file__).parents[2] / ".." / "shared" / "data").resolve()


def _skills(text: str) -> str:
    held = [str(i + 1) for i, s in enumerate(SKILLS) if s.rstrip(".").casefold() in text.casefold()]
    held += ["V"] if VERIFY.rstrip(".").casefold() in text.casefold() else []
    return ",".join(held) or "-"


class _Counting:
    """The run's simulated LLM, counting the characters of each request it answers and of its reply, by engine."""

    def __init__(self, llm: Any, counts: dict[str, list[int]]) -> None:
        self.llm, self.counts = llm, counts
        self.identity = llm.identity
        self.is_async = False

    def __call__(self, request: Any) -> Any:
        reply = self.llm(request)
        row = self.counts.setdefault(request.engine, [0, 0])
        row[0] += sum(estimate_tokens(m.content) for m in request.messages)
        row[1] += estimate_tokens(reply if isinstance(reply, str) else reply.text)
        return reply


#: The config whose models price the tokens: the paper's, on an OpenAI-compatible server.
PRICED = RunConfig("bbh:navigate", backend="openai-compatible")


def outcomes(data_dir: Path, out: Path) -> list[dict[str, Any]]:
    """Each method's figures from one `compare` run."""
    config = RunConfig(task="bbh:navigate", data_dir=str(data_dir), iterations=ITERATIONS, breadth=BREADTH)
    tasks = load_run_tasks(config)
    counts: dict[str, dict[str, list[int]]] = {}

    def counting(cfg: RunConfig) -> _Counting:
        return _Counting(build_llm(cfg, tasks), counts.setdefault(cfg.optimizer, {}))

    summary = compare(config, OPTIMIZERS, out, llm_factory=counting)
    found = []
    for method in summary["methods"]:
        results = json.loads((out / method["run_dir"] / "results.json").read_text("utf-8"))
        final = results["tasks"][0]["params"]["final"]
        used = {engine: (row[0], row[1]) for engine, row in counts.get(method["optimizer"], {}).items()}
        dollars = estimate_cost(PRICED, used, bundled_prices().models) or 0.0
        tokens = sum(a + b for a, b in used.values())
        skills = {n.removesuffix(".instruction"): _skills(v) for n, v in final.items()}
        found.append({**method, "skills": skills, "est_tokens": tokens, "est_usd": dollars})
    return found


def table(data_dir: Path = DATA) -> str:
    """The markdown table, one row per method."""
    rows = [
        "| method | train score per iteration, then final | test (initial) | forward / backward / rewrite calls "
        "| tokens (est.) | USD (est.) | steps held: hint_1 / hint_2 / answer |",
        "|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for o in outcomes(data_dir, Path(tmp)):
            scores = " ".join(f"{s:.2f}" for s in o["scores"])
            calls = " / ".join(str(o["calls_by_purpose"].get(p, 0)) for p in ("forward", "backward", "rewrite"))
            held = " / ".join(o["skills"][n] for n in ("hint_1", "hint_2", "answer"))
            rows.append(
                f"| {o['optimizer']} | {scores} | {o['test']:.2f} ({o['initial_test']:.2f}) | {calls} "
                f"| {o['est_tokens']:,} | {o['est_usd']:.2f} | {held} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    print(table(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA))
