"""``semgrad demo``: the paper's graph, offline, on the built-in simulated LLM."""

from __future__ import annotations

import textwrap

from ._samples import gsm8k_sample
from .backends.simulated import SimulatedLLM
from .core import forward, gather
from .effects import Runner
from .topologies import paper_graph


def main(*, quiet: bool = False) -> int:
    """Forward the paper's graph over the bundled GSM8K items and print every node."""
    graph, params = paper_graph()
    samples = gsm8k_sample()[:3]
    runner = Runner(SimulatedLLM())
    print("semgrad demo -- the LLM is SIMULATED (offline, deterministic); no real model is called.\n")
    program = gather(*(forward(graph, params, {"question": q}, sample=i) for i, (q, _) in enumerate(samples)))
    traces = runner.run_sync(program)
    for (question, target), trace in zip(samples, traces):
        print(f"Question {trace.sample}: " + textwrap.shorten(question, 100))
        if not quiet:
            for name in ("hint_1", "hint_2"):
                print(f"  {name}: {trace.value(name)}")
        print(f"  answer: {trace.output_value}   (expected {target})\n")
    stats = runner.statistics()
    print(f"{stats.calls} simulated LLM calls ({dict(stats.calls_by_purpose)}), {stats.errors} errors.")
    return 0
