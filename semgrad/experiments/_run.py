"""Running the paper's experiments: tasks in, a run directory out.

A run directory holds ``config.json``, one checkpoint per task
(``checkpoint.json`` for a single task), ``results.json`` and ``report.html``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


from .._files import write_text_atomically
from ..core import Example, Loss, forward, normalized_match, numeric_match
from ..core.optim import evaluate, mean_score
from ..effects import FitProgress, FitResult, Runner, fit, limited, retrying, run_loop
from ..graphviz import to_dot, to_mermaid
from ..report import write_report
from ..tasks import Task, load_tasks
from ._config import RunConfig, make_optimizer

__all__ = [
    "PUBLISHED",
    "SetupError",
    "build_llm",
    "estimate_cost",
    "checkpoint_path",
    "load_run_tasks",
    "loss_for",
    "run_experiment",
]

#: The paper's published figures (test accuracy).
PUBLISHED = {"gsm8k": 0.932, "bbh_nlp": 0.825, "bbh_algorithmic": 0.856, "textgrad_gsm8k": 0.782}


class SetupError(ValueError):
    """The run cannot start: a missing key, an unreachable server, a changed config."""


def load_run_tasks(config: RunConfig) -> tuple[Task, ...]:
    """The tasks a config names, split by the paper's protocol (or the sizes it gives)."""
    if not config.data_dir:
        raise SetupError("no data directory; pass --data-dir DIR (the folder that holds bbh/, gsm8k/ and liar/)")
    return load_tasks(
        [config.task],
        config.data_dir,
        seed=config.seed,
        train=config.train,
        validation=config.validation,
        test=config.test,
    )


def loss_for(task: Task) -> Loss:
    """The loss for a task's scoring kind."""
    return numeric_match() if task.scoring == "numeric" else normalized_match()


def build_llm(config: RunConfig, tasks: Sequence[Task]) -> Any:
    """The LLM a config names, with retries, a concurrency limit and an optional cache."""
    if config.backend == "simulated":
        from ..backends.fake import LatencyLLM
        from ..backends.simulated import SimulatedLLM

        answers = {str(next(iter(e.inputs.values()))): str(e.target) for t in tasks for e in _all(t)}
        llm: Any = SimulatedLLM(answers, seed=config.seed)
        return LatencyLLM(llm, config.simulated_latency) if config.simulated_latency else llm
    if config.backend == "openai-compatible":
        from ..backends import openai_compatible

        base = config.base_url or os.environ.get("OPENAI_BASE_URL") or None
        if not os.environ.get("OPENAI_API_KEY") and (base is None or "api.openai.com" in base):
            raise SetupError("no API key: set OPENAI_API_KEY, or pass --base-url for a local server that needs none")
        llm = openai_compatible(
            base, model=config.model or "gpt-4o-mini", timeout=config.timeout, models=config.models()
        )
    else:
        from ..backends import anthropic

        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise SetupError("no API key: set ANTHROPIC_API_KEY")
        llm = anthropic(
            config.model or "claude-3-5-haiku-latest",
            base_url=config.base_url,
            timeout=config.timeout,
            models=config.models(),
        )
    llm = limited(retrying(llm), max_concurrency=config.concurrency)
    if config.cache:
        from ..effects import cached

        llm = cached(llm, path=config.cache)
    return llm


def _all(task: Task) -> tuple[Example, ...]:
    return task.split.train + task.split.validation + task.split.test


async def preflight(llm: Any, task: Task) -> None:
    """Make one small call so an unreachable server or a bad key fails before the run starts."""
    graph, params = task.build()
    example = task.split.train[0]
    runner = Runner(llm, timeout=60)
    trace = await runner.run(forward(graph, params, example.inputs, sample="preflight"))
    errors = [e for _, e in trace.errors if not isinstance(e, str)]
    if errors and errors[0].kind in ("connection", "auth", "timeout", "not_found", "bad_request"):
        raise SetupError(f"the backend cannot be used: {errors[0].kind}: {errors[0].message}")


def checkpoint_path(run_dir: Path, task: Task, single: bool) -> Path:
    """Where a task's checkpoint lives in a run directory."""
    return run_dir / ("checkpoint.json" if single else f"checkpoint-{task.name.replace(':', '-')}.json")


def run_experiment(
    config: RunConfig,
    run_dir: str | os.PathLike[str],
    *,
    resume: bool = False,
    llm: Any = None,
    on_progress: Callable[[str, FitProgress], None] | None = None,
    check_backend: bool = True,
    prices: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """Run a config end to end and write the run directory; return the results dict.

    Args:
        config: What to run.
        run_dir: The output directory.
        resume: Continue from the checkpoints in `run_dir` (its config must match).
        llm: Use this LLM instead of the one the config names (tests).
        on_progress: Called with the task name and each `FitProgress`.
        check_backend: Make one preflight call before starting (real backends).
        prices: USD per million (input, output) tokens by model, for the cost estimate.
    """
    out = Path(run_dir)
    _check_run_dir(config, out, resume)
    tasks = load_run_tasks(config)
    llm = llm if llm is not None else build_llm(config, tasks)
    if check_backend and config.backend != "simulated":
        run_loop(preflight, llm, tasks[0])
    config.save(out)
    runner_stats: list[Any] = []
    results = []
    for task in tasks:
        results.append(_run_task(config, out, task, llm, resume, len(tasks) == 1, on_progress, runner_stats))
    summary = _summary(config, results, runner_stats, prices)
    _write_json(out / "results.json", summary)
    write_report(out)
    return summary


def _check_run_dir(config: RunConfig, out: Path, resume: bool) -> None:
    saved = out / "config.json"
    if resume:
        if not saved.exists():
            raise SetupError(f"nothing to resume in {out}: no config.json")
        before = RunConfig.from_json(json.loads(saved.read_text("utf-8")))
        changed = config.differs_from(before)
        if changed:
            raise SetupError(f"cannot resume {out}: the config differs in {', '.join(changed)}")
    elif saved.exists() and any(out.glob("checkpoint*.json")):
        raise SetupError(f"{out} already holds a run; pass --resume to continue it, or choose another --out")


def _run_task(
    config: RunConfig,
    out: Path,
    task: Task,
    llm: Any,
    resume: bool,
    single: bool,
    on_progress: Callable[[str, FitProgress], None] | None,
    stats: list[Any],
) -> dict[str, Any]:
    graph, params = task.build()
    loss = loss_for(task)
    ckpt = checkpoint_path(out, task, single)
    progress = (lambda event: on_progress(task.name, event)) if on_progress else None
    result: FitResult = run_loop(
        lambda: fit(
            graph,
            params,
            make_optimizer(config),
            train=task.split.train,
            validation=task.split.validation,
            llm=llm,
            iterations=config.iterations,
            loss=loss,
            checkpoint=ckpt,
            resume=ckpt if resume and ckpt.exists() else None,
            budget={"max_calls": config.max_calls, "max_tokens": config.max_tokens}
            if config.max_calls or config.max_tokens
            else None,
            on_progress=progress,
            max_concurrency=config.concurrency,
            timeout=config.timeout,
        )
    )
    stats.append(result.statistics)
    if on_progress:
        on_progress(task.name, FitProgress(config.iterations, config.iterations, "evaluating", result.statistics.calls))
    runner = Runner(llm, max_concurrency=config.concurrency, timeout=config.timeout)

    def accuracy(p: Any, examples: tuple[Example, ...]) -> float | None:
        return mean_score(run_loop(runner.run, evaluate(graph, p, examples, loss))) if examples else None

    parts = task.split
    scores = {
        "train": accuracy(result.params, parts.train),
        "validation": accuracy(result.params, parts.validation),
        "test": accuracy(result.params, parts.test),
        "initial_test": accuracy(params, parts.test),
    }
    stats.append(runner.statistics())
    return {
        "task": task.name,
        "category": task.category,
        "sizes": {"train": len(parts.train), "validation": len(parts.validation), "test": len(parts.test)},
        "initial_score": result.initial_score,
        "best_score": result.best_score,
        "stopped": result.stopped,
        "iterations": [_record(r) for r in result.history],
        "accuracy": scores,
        "params": {"initial": dict(params.texts()), "final": dict(result.params.texts())},
        "graph": _graph_json(graph),
        "published": _published(task),
    }


def _record(r: Any) -> dict[str, Any]:
    return {
        "iteration": r.iteration + 1,
        "train_score": r.train_score,
        "validation_score": r.validation_score,
        "accepted": r.accepted,
        "applied": r.applied,
        "updates": dict(r.updates),
        "gradients": dict(r.gradients),
        "report": [[s.stage, list(s.notes)] for s in r.report],
        "calls": dict(r.calls),
    }


def _graph_json(graph: Any) -> dict[str, Any]:
    return {
        "nodes": [{"name": n.name, "kind": n.kind, "role": n.role} for n in graph.nodes.values()],
        "edges": [[i, n.name] for n in graph.nodes.values() for i in n.inputs],
        "output": graph.output,
        "dot": to_dot(graph),
        "mermaid": to_mermaid(graph),
    }


def _published(task: Task) -> dict[str, Any] | None:
    if task.name == "gsm8k":
        return {"label": "Paper (GSM8K)", "value": PUBLISHED["gsm8k"]}
    if task.category == "nlp":
        return {"label": "Paper (BBH NLP average)", "value": PUBLISHED["bbh_nlp"]}
    if task.category == "algorithmic":
        return {"label": "Paper (BBH algorithmic average)", "value": PUBLISHED["bbh_algorithmic"]}
    return None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def estimate_cost(
    config: RunConfig, tokens_by_role: Mapping[str, tuple[int, int]], prices: Mapping[str, tuple[float, float]] | None
) -> float | None:
    """USD for the tokens each role used, at the price of the model that role ran on (None if unpriced).

    Examples:
        >>> estimate_cost(RunConfig("gsm8k", model="m"), {"forward": (2_000_000, 1_000_000)}, {"m": (0.5, 2.0)})
        3.0
    """
    if not prices:
        return None
    models = config.models()
    total = 0.0
    for role, (used_in, used_out) in tokens_by_role.items():
        price = prices.get(models.get(role) or config.model or "")
        if price is None:
            return None
        total += used_in / 1e6 * price[0] + used_out / 1e6 * price[1]
    return total


def _summary(
    config: RunConfig, results: list[dict[str, Any]], stats: list[Any], prices: Mapping[str, tuple[float, float]] | None
) -> dict[str, Any]:
    from .. import __version__

    tests = {
        c: [r["accuracy"]["test"] for r in results if r["category"] == c and r["accuracy"]["test"] is not None]
        for c in ("nlp", "algorithmic")
    }
    purposes: dict[str, int] = {}
    roles: dict[str, int] = {}
    tokens: dict[str, tuple[int, int]] = {}
    for s in stats:
        for engine, (used_in, used_out) in s.tokens_by_engine.items():
            before = tokens.get(engine, (0, 0))
            tokens[engine] = (before[0] + used_in, before[1] + used_out)
        for purpose, n in s.calls_by_purpose.items():
            purposes[purpose] = purposes.get(purpose, 0) + n
        for engine, n in s.calls_by_engine.items():
            roles[engine] = roles.get(engine, 0) + n
    return {
        "semgrad_version": __version__,
        "task": config.task,
        "backend": config.backend,
        "optimizer": config.optimizer,
        "seed": config.seed,
        "simulated": config.backend == "simulated",
        "tasks": results,
        "averages": {
            "nlp": _mean(tests["nlp"]),
            "algorithmic": _mean(tests["algorithmic"]),
            "overall": _mean([r["accuracy"]["test"] for r in results if r["accuracy"]["test"] is not None]),
        },
        "published": dict(PUBLISHED),
        "calls": {"by_purpose": purposes, "by_role": roles},
        "tokens": {
            "input": sum(s.input_tokens for s in stats),
            "output": sum(s.output_tokens for s in stats),
            "by_role": {role: {"input": used[0], "output": used[1]} for role, used in tokens.items()},
        },
        "cost_usd": estimate_cost(config, tokens, prices),
        "stopped": next((r["stopped"] for r in results if r["stopped"]), None),
    }


def _write_json(path: Path, data: Any) -> None:
    write_text_atomically(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
