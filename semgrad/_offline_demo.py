"""``semgrad demo``: optimise the paper's graph offline on the built-in simulated LLM."""

from __future__ import annotations

import textwrap

from ._bundled_pairs import gsm8k_sample
from .backends.simulated import SimulatedLLM
from .core import Example, forward, gather, optim
from .core.scoring import numeric_match
from .effects import FitProgress, Runner, fit, run_loop
from .topologies import paper_graph

BANNER = "semgrad demo -- the LLM is SIMULATED (offline, deterministic); no real model is called."


def main(*, quiet: bool = False, iterations: int = 3) -> int:
    """Show a forward pass, then run `iterations` of neighbor_sgd on the bundled GSM8K items."""
    graph, params = paper_graph()
    samples = gsm8k_sample()
    llm = SimulatedLLM(dict(samples), seed=5)  # a seed under which each skill helps one validation item
    examples = [Example({"question": q}, a, id=f"gsm8k/test/{i}") for i, (q, a) in enumerate(samples)]
    train, validation = examples[:5], examples[5:]
    print(BANNER + "\n")
    traces = Runner(llm).run_sync(gather(*(forward(graph, params, e.inputs, sample=e.id) for e in train[:2])))
    print("A forward pass of the paper's graph (two hint nodes feed a final solver):")
    for example, trace in zip(train, traces):
        print(f"  Q: {textwrap.shorten(example.inputs['question'], 90)}")
        if not quiet:
            for name in ("hint_1", "hint_2"):
                print(f"    {name}: {trace.value(name)}")
        print(f"    answer: {trace.output_value!r}  (expected {example.target})")

    def show(event: FitProgress) -> None:
        if event.phase == "done" and not quiet:
            print(f"  iteration {event.iteration}/{event.iterations} finished, {event.calls} calls so far")

    print(
        f"\nOptimising with neighbor_sgd(k=2) for {iterations} iterations"
        f" (train {len(train)}, validation {len(validation)}):"
    )
    result = run_loop(
        lambda: fit(
            graph,
            params,
            optim.neighbor_sgd(k=2),
            train=train,
            validation=validation,
            llm=llm,
            iterations=iterations,
            loss=numeric_match(),
            on_progress=show,
        )
    )
    print(f"\n  initial validation score: {result.initial_score:.2f}")
    for record in result.history:
        verdict = {True: "accepted", False: "rejected", None: "applied"}[record.accepted]
        val = "-" if record.validation_score is None else f"{record.validation_score:.2f}"
        print(
            f"  iteration {record.iteration}: train {record.train_score:.2f}, candidate validation {val} -> {verdict}"
        )
    print("\nFinal instructions:")
    for name, value in result.params.texts().items():
        print(f"  {name}: {value}")
    stats = result.statistics
    print(f"\n{stats.calls} simulated LLM calls {dict(stats.calls_by_purpose)}, {stats.errors} errors.")
    return 0
