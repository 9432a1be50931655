"""The same workloads in TextGrad (W1, W2, W4, and W3's overhead), with the same fake latency.

TextGrad is never a dependency of semgrad. Install it in its own environment::

    python -m venv /tmp/tgvenv
    /tmp/tgvenv/bin/pip install textgrad
    /tmp/tgvenv/bin/pip install -e .          # from the repository root
    /tmp/tgvenv/bin/python -m benchmarks.textgrad_compare --merge benchmarks/results/latest.json

`python -m benchmarks` also adds these rows by itself when `textgrad` is importable.

How the equivalent programs are written (TextGrad 0.1.x):

* The fake is an `EngineLM` subclass (`LatencyEngine`) whose ``generate`` sleeps
  the latency (``time.sleep``: TextGrad is synchronous) and answers with a CRC-32
  of the prompt: about a microsecond, like semgrad's `ScaleLLM`. It counts calls by purpose (``backward``
  when TextGrad passes its backward system prompt, ``evaluate`` for the loss) and
  the peak number in flight.
* W1: per sample, ``hint_1`` and ``hint_2`` are `FormattedLLMCall`s of the
  question with trainable instruction `Variable`s as system prompts, and
  ``answer`` a `FormattedLLMCall` of the question and both hints.
* W2: one TGD iteration with a validation gate, as in TextGrad's prompt
  optimization example: forward over the training batch, a `TextLoss` on the
  first k wrong answers, ``tg.sum(losses).backward()``, ``TextualGradientDescent.step()``
  over the 3 instructions (the fake answers between TGD's tags), then forward over
  the validation set and a revert unless the score improved; `tg_w2`.
* W4: the same layered graph; TextGrad seeds feedback through a loss, so each
  sample adds a `TextLoss` call (``evaluate``) and calls ``loss.backward(engine)``.
  TextGrad's backward is per edge and sends a partial to every predecessor that
  requires a gradient, the instructions included (that is how its prompt
  optimization works), one call at a time.
* ``textgrad``: samples one after another, as TextGrad's training examples loop
  over a batch. ``textgrad_threads``: one thread per sample (the most a user can
  get without changing TextGrad); within a sample calls stay sequential. The
  threaded W4 gives each sample its own instruction Variables (shared ones would
  race in TextGrad's gradient sets).
* The limit is the workload's own critical path (the same figure semgrad's row
  uses), so ``wall_over_limit`` compares both systems with the same ideal.
* TextGrad's default logging (a JSON line per call into ``$TEXTGRAD_LOG_DIR``)
  stays on, pointed at a temporary directory.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = ["LatencyEngine", "add_rows", "available", "main", "tg_overhead", "tg_w1", "tg_w2", "tg_w4"]

HINT = "Work out an intermediate step that helps solve the problem."
#: TextGrad's default tags around a TGD update's new value.
TGD_TAGS = ("<IMPROVED_VARIABLE>", "</IMPROVED_VARIABLE>")
SOLVE = "Solve the problem."


def available() -> bool:
    import importlib.util

    return importlib.util.find_spec("textgrad") is not None


def _import() -> Any:
    os.environ.setdefault("TEXTGRAD_LOG_DIR", tempfile.mkdtemp(prefix="textgrad-logs-"))
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    import textgrad

    return textgrad


def _engine_class() -> type:
    _import()
    from textgrad.autograd.llm_backward_prompts import BACKWARD_SYSTEM_PROMPT
    from textgrad.engine import EngineLM
    from textgrad.optimizer.optimizer_prompts import OPTIMIZER_SYSTEM_PROMPT

    # The system prompt of TGD's update calls, with its default tags.
    tgd_system = OPTIMIZER_SYSTEM_PROMPT.format(new_variable_start_tag=TGD_TAGS[0], new_variable_end_tag=TGD_TAGS[1])

    class LatencyEngine(EngineLM):
        """A TextGrad engine with a fixed delay and digest replies (no network)."""

        def __init__(self, latency: float = 0.0, evaluate_prompts: Sequence[str] = ()) -> None:
            self.model_string = "semgrad-benchmark-fake"
            self.latency = latency
            self.evaluate_prompts = set(evaluate_prompts)
            self.calls: Counter[str] = Counter()
            self.in_flight = 0
            self.peak = 0
            self.lock = threading.Lock()
            self.seen: list[tuple[str, str | None]] = []

        def generate(self, prompt: str, system_prompt: str | None = None, **kwargs: Any) -> str:
            if system_prompt == BACKWARD_SYSTEM_PROMPT:
                purpose = "backward"
            elif system_prompt == tgd_system:
                purpose = "rewrite"
            elif system_prompt in self.evaluate_prompts:
                purpose = "evaluate"
            else:
                purpose = "forward"
            with self.lock:
                self.calls[purpose] += 1
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
                self.seen.append((prompt, system_prompt))
            try:
                if self.latency:
                    time.sleep(self.latency)
                if purpose == "rewrite":  # TGD reads the new value between its tags
                    return f"{TGD_TAGS[0]}{reply(prompt, system_prompt)}{TGD_TAGS[1]}"
                return reply(prompt, system_prompt)
            finally:
                with self.lock:
                    self.in_flight -= 1

        def __call__(self, prompt: str, **kwargs: Any) -> str:
            return self.generate(prompt, **kwargs)

    return LatencyEngine


def reply(prompt: str, system_prompt: str | None) -> str:
    """The fake's answer: a cheap digest of what it was asked (about a microsecond, like `ScaleLLM`)."""
    return f"reply#{zlib.crc32(prompt.encode(), zlib.crc32((system_prompt or '').encode())):08x}"


def LatencyEngine(latency: float = 0.0, evaluate_prompts: Sequence[str] = ()) -> Any:  # noqa: N802 - a class factory
    """Build the fake engine (the class is made lazily, after importing textgrad)."""
    return _engine_class()(latency, evaluate_prompts)


def _question(i: int) -> str:
    from ._workloads import question

    return question(i)


# --------------------------------------------------------------------------- programs


def _paper_sample(tg: Any, engine: Any, instructions: dict[str, Any], i: int) -> Any:
    from textgrad.autograd import FormattedLLMCall

    q = tg.Variable(_question(i), requires_grad=False, role_description="the problem to solve")
    hints = [
        FormattedLLMCall(engine, "{question}", {"question": None}, system_prompt=instructions[name])(
            inputs={"question": q}, response_role_description="an intermediate step"
        )
        for name in ("hint_1", "hint_2")
    ]
    answer = FormattedLLMCall(
        engine,
        "Problem:\n{question}\n\nStep 1:\n{hint_1}\n\nStep 2:\n{hint_2}",
        {"question": None, "hint_1": None, "hint_2": None},
        system_prompt=instructions["answer"],
    )
    return answer(
        inputs={"question": q, "hint_1": hints[0], "hint_2": hints[1]}, response_role_description="the final answer"
    )


def _paper_instructions(tg: Any) -> dict[str, Any]:
    return {
        name: tg.Variable(text, requires_grad=True, role_description=f"instruction of {name}")
        for name, text in (("hint_1", HINT), ("hint_2", HINT), ("answer", SOLVE))
    }


def _layered_instructions(tg: Any, width: int, depth: int) -> dict[str, Any]:
    names = [f"l{layer}_{i}" for layer in range(depth) for i in range(width)] + ["final"]
    return {
        name: tg.Variable(
            SOLVE if name == "final" else HINT, requires_grad=True, role_description=f"instruction of {name}"
        )
        for name in names
    }


def _layered_sample(tg: Any, engine: Any, instructions: dict[str, Any], i: int, width: int, depth: int) -> None:
    from textgrad.autograd import FormattedLLMCall

    previous = {"question": tg.Variable(_question(i), requires_grad=False, role_description="the problem to solve")}
    for layer in range(depth):
        fields = {name: None for name in previous}
        template = "\n\n".join(f"{name}:\n{{{name}}}" for name in previous)
        previous = {
            f"l{layer}_{k}": FormattedLLMCall(engine, template, fields, system_prompt=instructions[f"l{layer}_{k}"])(
                inputs=dict(previous), response_role_description=f"a step of layer {layer}"
            )
            for k in range(width)
        }
    template = "\n\n".join(f"{name}:\n{{{name}}}" for name in previous)
    final = FormattedLLMCall(engine, template, {name: None for name in previous}, system_prompt=instructions["final"])(
        inputs=dict(previous), response_role_description="the final answer"
    )
    loss = tg.TextLoss(_evaluate_prompt(i), engine=engine)(final)
    loss.backward(engine)


def _evaluate_prompt(i: int) -> str:
    return f"The expected output is {2 * i}. Evaluate the answer against it."


# --------------------------------------------------------------------------- measuring


def _measure(run: Callable[[], None]) -> tuple[float, float]:
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - t0, time.process_time() - c0


def _row(walls: list[float], cpus: list[float], engine: Any, limit: float, **extra: Any) -> dict[str, Any]:
    from ._workloads import RATIO_TARGET

    wall = statistics.median(walls)
    calls = dict(engine.calls)
    n = sum(calls.values())
    return {
        "wall_s": round(wall, 6),
        "limit_s": round(limit, 6),
        "wall_over_limit": round(wall / limit, 4) if limit else None,
        "calls": calls,
        "peak_in_flight": engine.peak,
        "us_per_call": round(statistics.median(cpus) / n * 1e6, 2) if n else None,
        "walls_s": [round(w, 6) for w in walls],
        "repeats": len(walls),
        **extra,
        "target": {"wall_over_limit_max": RATIO_TARGET},
        "met": bool(limit and wall / limit <= RATIO_TARGET),
    }


def _each(one: Callable[[int], Any], n: int, *, threads: bool) -> list[Any]:
    """``[one(i) for i in range(n)]``, or the same with one thread per item."""
    if threads:
        return list(ThreadPoolExecutor(max_workers=max(1, n)).map(one, range(n)))
    return [one(i) for i in range(n)]


def _timed(repeats: int, setup: Callable[[], tuple[Any, Callable[[], object]]]) -> tuple[list[float], list[float], Any]:
    """`repeats` times: ``engine, run = setup()``, then time ``run()``. Wall and CPU seconds, and the last engine."""
    walls, cpus, engine = [], [], None
    for _ in range(repeats):
        engine, run = setup()
        wall, cpu = _measure(run)
        walls.append(wall)
        cpus.append(cpu)
    return walls, cpus, engine


def tg_w1(latency: float, batch: int, *, threads: bool, repeats: int = 1, limit: float | None = None) -> dict[str, Any]:
    """W1 in TextGrad: forward over `batch` questions on the paper's graph."""
    tg = _import()

    def setup() -> tuple[Any, Callable[[], object]]:
        engine = LatencyEngine(latency)
        instructions = _paper_instructions(tg)
        return engine, lambda: _each(lambda i: _paper_sample(tg, engine, instructions, i), batch, threads=threads)

    walls, cpus, engine = _timed(repeats, setup)
    limit = limit if limit is not None else 2 * latency
    return _row(walls, cpus, engine, limit, latency_s=latency, samples=batch, threads=threads)


def tg_w2(
    latency: float,
    train: int = 32,
    validation: int = 32,
    k: int = 4,
    *,
    threads: bool,
    repeats: int = 1,
    limit: float | None = None,
) -> dict[str, Any]:
    """W2 in TextGrad: one TGD iteration with a validation gate, as in TextGrad's prompt
    optimization example, on the paper's graph.

    Forward over `train` questions; a `TextLoss` (``evaluate``) on the first `k` wrong
    answers, summed, and ``backward``; ``TextualGradientDescent.step()`` over the 3
    instructions (``rewrite``); then forward over `validation` questions and a revert
    if the validation score did not improve (TextGrad's ``run_validation_revert``). The
    seed validation score is computed before the clock starts, with the same engine
    (its calls are counted, as in semgrad's W2 row).
    """
    tg = _import()
    from textgrad.optimizer import TextualGradientDescent

    def setup() -> tuple[Any, Callable[[], object]]:
        engine = LatencyEngine(latency, [_evaluate_prompt(i) for i in range(train)])
        instructions = _paper_instructions(tg)

        def score(offset: int, n: int) -> tuple[list[Any], float]:
            answers = _each(lambda i: _paper_sample(tg, engine, instructions, offset + i), n, threads=threads)
            right = [a.value.strip() == str(2 * (offset + i)) for i, a in enumerate(answers)]
            return answers, sum(right) / n

        seed = score(1000, validation)[1]

        def iteration() -> None:
            answers, _ = score(0, train)
            wrong = [i for i, a in enumerate(answers) if a.value.strip() != str(2 * i)][:k]
            loss = lambda j: tg.TextLoss(_evaluate_prompt(wrong[j]), engine=engine)(answers[wrong[j]])  # noqa: E731
            tg.sum(_each(loss, len(wrong), threads=threads)).backward(engine)
            before = {name: variable.value for name, variable in instructions.items()}
            TextualGradientDescent(engine=engine, parameters=list(instructions.values())).step()
            if score(1000, validation)[1] <= seed:
                for name, variable in instructions.items():
                    variable.set_value(before[name])

        return engine, iteration

    walls, cpus, engine = _timed(repeats, setup)
    limit = limit if limit is not None else 6 * latency
    return _row(
        walls, cpus, engine, limit, latency_s=latency, samples=train, threads=threads, validation=validation, k=k
    )


def tg_w4(
    latency: float,
    batch: int,
    width: int = 4,
    depth: int = 4,
    *,
    threads: bool,
    repeats: int = 1,
    limit: float | None = None,
) -> dict[str, Any]:
    """W4 in TextGrad: forward + loss + backward per sample on the layered graph."""
    tg = _import()

    def setup() -> tuple[Any, Callable[[], object]]:
        engine = LatencyEngine(latency, [_evaluate_prompt(i) for i in range(batch)])
        shared = _layered_instructions(tg, width, depth)

        def one(i: int) -> None:
            instructions = _layered_instructions(tg, width, depth) if threads else shared
            _layered_sample(tg, engine, instructions, i, width, depth)

        return engine, lambda: _each(one, batch, threads=threads)

    walls, cpus, engine = _timed(repeats, setup)
    # TextGrad's own longest chain if every independent call ran at once: the forward
    # levels, the loss, the loss's backward, then final's and each layer's backward.
    own_chain = (depth + 1) + 1 + 1 + (depth + 1)
    limit = limit if limit is not None else (depth + 1 + depth) * latency
    return _row(
        walls, cpus, engine, limit, latency_s=latency, samples=batch, threads=threads, own_chain_calls=own_chain
    )


def tg_overhead(batch: int = 256, repeats: int = 3) -> dict[str, Any]:
    """W3 in TextGrad: CPU per call of W1 at zero latency, minus the fake's own cost."""
    from ._workloads import OVERHEAD_TARGET_US

    tg = _import()
    results = []
    engine = None
    for attempt in range(repeats + 1):
        engine = LatencyEngine(0.0)
        instructions = _paper_instructions(tg)
        gc.collect()
        c0 = time.process_time()
        for i in range(batch):
            _paper_sample(tg, engine, instructions, i)
        total = time.process_time() - c0
        seen = list(engine.seen)
        c0 = time.process_time()
        for prompt, system in seen:
            reply(prompt, system)
        fake = time.process_time() - c0
        if attempt:  # the first run warms up
            results.append(((total - fake) / len(seen) * 1e6, total / len(seen) * 1e6, fake / len(seen) * 1e6))
    library = min(r[0] for r in results)  # the fastest run, as for semgrad's W3
    return {
        "us_per_call": round(library, 2),
        "median_us_per_call": round(statistics.median(r[0] for r in results), 2),
        "statistic": "min",
        "total_us_per_call": round(min(r[1] for r in results), 2),
        "fake_us_per_call": round(statistics.median(r[2] for r in results), 2),
        "runs_us_per_call": [round(r[0], 2) for r in results],
        "calls": dict(engine.calls),
        "samples": batch,
        "repeats": repeats,
        "logging": "TextGrad default (JSON lines to $TEXTGRAD_LOG_DIR)",
        "target": {"us_per_call_max": OVERHEAD_TARGET_US},
        "met": bool(library <= OVERHEAD_TARGET_US),
    }


# --------------------------------------------------------------------------- wiring


def add_rows(
    report: dict[str, Any], settings: Any, only: Sequence[str], *, echo: Callable[[str], None] = print
) -> None:
    """Add ``textgrad`` and ``textgrad_threads`` rows to `report` for W1, W2, W4 (at
    ``settings.textgrad_latencies``) and W3."""
    workloads = report["workloads"]
    tg = _import()
    notes = report.setdefault("notes", [])
    notes[:] = [
        n for n in notes if not n.startswith(("TextGrad is not importable", "TextGrad rows", "TextGrad compared"))
    ]
    report.setdefault("machine", {})["textgrad"] = getattr(tg, "__version__", None)
    notes.append(
        f"TextGrad rows: textgrad {getattr(tg, '__version__', '?')} on Python {sys.version.split()[0]}, "
        f"run {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC by benchmarks.textgrad_compare."
    )
    for latency in settings.textgrad_latencies:
        for family in ("W1", "W2", "W4"):
            if family not in only:
                continue
            key = f"{family}@{latency:g}"
            semgrad_row = workloads.get(key, {}).get("semgrad", {})
            limit = semgrad_row.get("limit_s")
            for label, threads in (("textgrad", False), ("textgrad_threads", True)):
                t0 = time.perf_counter()
                if family == "W1":
                    row = tg_w1(
                        latency, settings.w1_batch, threads=threads, repeats=settings.textgrad_repeats, limit=limit
                    )
                elif family == "W2":
                    row = tg_w2(
                        latency,
                        settings.w2_train,
                        settings.w2_validation,
                        settings.w2_k,
                        threads=threads,
                        repeats=settings.textgrad_repeats,
                        limit=limit,
                    )
                else:
                    row = tg_w4(
                        latency,
                        settings.w4_batch,
                        settings.w4_width,
                        settings.w4_depth,
                        threads=threads,
                        repeats=settings.textgrad_repeats,
                        limit=limit,
                    )
                if semgrad_row.get("wall_s"):
                    row["vs_semgrad"] = round(row["wall_s"] / semgrad_row["wall_s"], 2)
                workloads.setdefault(key, {})[label] = row
                echo(f"  {key:<14} {label} done in {time.perf_counter() - t0:6.1f} s")
    if "W3" in only:
        t0 = time.perf_counter()
        row = tg_overhead(settings.w3_batch, max(1, settings.w3_repeats))
        ours = workloads.get("W3", {}).get("semgrad", {}).get("us_per_call")
        if ours:
            row["vs_semgrad"] = round(row["us_per_call"] / ours, 2)
        workloads.setdefault("W3", {})["textgrad"] = row
        echo(f"  {'W3':<14} textgrad done in {time.perf_counter() - t0:6.1f} s")
    skipped = [f"{lat:g}" for lat in settings.latencies if lat not in settings.textgrad_latencies]
    if skipped:
        notes.append(
            f"TextGrad compared at {', '.join(f'{x:g}' for x in settings.textgrad_latencies)} s only "
            f"(sequential calls: W4 at 1 s would take about 12 minutes)."
        )


def main(argv: Sequence[str] | None = None) -> int:
    from ._tables import format_comparison, format_table
    from ._workloads import Settings

    parser = argparse.ArgumentParser(prog="python -m benchmarks.textgrad_compare", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="W1,W2,W3,W4")
    parser.add_argument(
        "--merge", default=None, help="add the rows to this JSON report (e.g. benchmarks/results/latest.json)"
    )
    args = parser.parse_args(argv)
    if not available():
        print("textgrad is not importable here; see benchmarks/README.md", file=sys.stderr)
        return 2
    settings = Settings.quick() if args.quick else Settings.default()
    only = tuple(f.strip().upper() for f in args.only.split(","))
    path = Path(args.merge) if args.merge else None
    report = json.loads(path.read_text()) if path and path.exists() else {"machine": {}, "workloads": {}, "notes": []}
    add_rows(report, settings, only)
    print(format_table(report))
    comparison = format_comparison(report)
    if comparison:
        print("\n" + comparison)
    if path:
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"merged into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
