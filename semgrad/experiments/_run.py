"""Running the paper's experiments: tasks in, a run directory out.

A run directory holds ``config.json``, one checkpoint per task
(``checkpoint.json`` for a single task), ``results.json`` and ``report.html``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .._files import write_text_atomically
from .._lock import hold_folder
from ..core import Example, Graph, LLMFailure, Params, forward
from ..core.optim import evaluate, mean_score
from ..core.programs import run_system
from ..effects import CheckpointError, FitProgress, FitResult, Runner, as_trainable, fit, run_loop, traced
from ..effects._batching import BatchPolicy
from ..effects._routing import call
from ..report import PUBLISHED, write_report
from ..report import graph_json as _graph_json
from ..report import iteration_json as _record
from ..report._tokens import tokens_json
from ..tasks import Task
from ._averages import average_coverage, comparable_figures, task_averages
from ._config import RunConfig, make_optimizer
from ._errors import SetupError
from ._journal import Journal
from ._ledger import Ledger
from ._predictions import predictions_json
from ._prices import DEFAULT_MODELS, estimate_cost, run_cost
from ._results import RunSummary
from ._run_stack import MAX_ERROR_SHARE, Batching, RunStack, error_share, failures, kinds_text
from ._run_tasks import check_protocol, load_run_tasks, loss_for, metric_name, task_loss

if TYPE_CHECKING:
    from ._plan import RunPlan

__all__ = [
    "PUBLISHED",
    "RunFailed",
    "SetupError",
    "build_llm",
    "estimate_cost",
    "checkpoint_path",
    "check_protocol",
    "check_run_dir",
    "load_run_tasks",
    "loss_for",
    "run_experiment",
    "run_stack",
    "task_loss",
]


class RunFailed(RuntimeError):
    """The run's calls failed: its first calls all did, or more than `MAX_ERROR_SHARE` of them.

    ``results.json`` and the report are written first (they keep what the run
    has); `summary` is its `RunSummary`.
    """

    def __init__(self, message: str, summary: RunSummary) -> None:
        super().__init__(message)
        self.summary = summary


def _check_extra(backend: str) -> None:
    try:
        import httpx  # noqa: F401
    except ImportError:
        raise SetupError(
            f"the {backend} backend needs httpx, which is not installed: pip install httpx "
            "(or pip install -e '.[http]' in the semgrad checkout)"
        ) from None


def build_llm(config: RunConfig, tasks: Sequence[Task]) -> Any:
    """The backend a config names (the simulated LLM, or an HTTP provider), checked before anything runs.

    `run_experiment` puts it at the bottom of the run's one middleware stack
    (`RunStack`: budget, accounting, retries, limits, cache).

    Raises:
        SetupError: A missing key, or a missing extra (httpx) for an HTTP backend.
    """
    if config.llm:  # the user's own (--llm FILE.py:make): a new one per run
        from ._user_code import load_llm

        return load_llm(config.llm)
    if config.backend == "simulated":
        from ..backends.fake import LatencyLLM
        from ..backends.simulated import SimulatedLLM

        if config.data:
            from ._custom import custom_simulated_llm

            llm: Any = custom_simulated_llm(config, tuple(tasks))
        else:
            answers = {str(next(iter(e.inputs.values()))): str(e.target) for t in tasks for e in _all(t)}
            llm = SimulatedLLM(answers, seed=config.seed)
        return LatencyLLM(llm, config.simulated_latency) if config.simulated_latency else llm
    _check_extra(config.backend)
    if config.backend == "openai-compatible":
        from ..backends import openai_compatible

        base = config.base_url or os.environ.get("OPENAI_BASE_URL") or None
        if not os.environ.get("OPENAI_API_KEY") and (base is None or "api.openai.com" in base):
            raise SetupError("no API key: set OPENAI_API_KEY, or pass --base-url for a local server that needs none")
        return openai_compatible(
            base, model=config.model or DEFAULT_MODELS[config.backend], timeout=config.timeout, models=config.models()
        )
    from ..backends import anthropic

    if not os.environ.get("ANTHROPIC_API_KEY"):
        raise SetupError("no API key: set ANTHROPIC_API_KEY")
    return anthropic(
        config.model or DEFAULT_MODELS[config.backend],
        base_url=config.base_url,
        timeout=config.timeout,
        models=config.models(),
        prompt_cache=config.prompt_cache,
    )


def run_stack(
    config: RunConfig, backend: Any, journal: Journal | None = None, ledger: Ledger | None = None
) -> RunStack:
    """The one middleware stack a run's every phase calls through (see `RunStack`); with ``--batch``, its
    batches are kept in `ledger` as soon as they exist, and those it already names are picked up.

    Raises:
        SetupError: ``--batch`` on a backend without a batch API.
    """
    batch = None
    if config.batch:
        poll = config.batch_poll
        policy = BatchPolicy(first_poll=poll, longest_poll=max(60.0, poll), settle=min(0.25, poll))
        known = ledger.batch_records() if ledger is not None else ()
        on_created = ledger.batch_created if ledger is not None else None
        batch = Batching(config.batch, policy, known, on_created, _say)
    return RunStack(
        backend,
        journal=journal,
        real=config.backend != "simulated",
        max_calls=config.max_calls,
        max_tokens=config.max_tokens,
        concurrency=config.concurrency,
        cache=config.cache,
        timeout=config.timeout,
        batch=batch,
    )


def _say(message: str) -> None:
    print(f"semgrad: {message}", file=sys.stderr)


def _runner_timeout(config: RunConfig) -> float | None:
    # A real backend's stack gives each attempt its own deadline, under the retries; a deadline around
    # the whole stack would cut the retries short. Other LLMs get the runner's.
    return None if config.backend != "simulated" else config.timeout


def _all(task: Task) -> tuple[Example, ...]:
    return task.split.train + task.split.validation + task.split.test


async def preflight(llm: Any, task: Task, options: Any = None, *, timeout: float | None = 60) -> None:
    """Make one small forward (a call per LLM node) so a backend that cannot answer fails before the run starts.

    `timeout` bounds each of its calls as a whole, retries included; a run's stack, which gives
    each attempt its own deadline, passes None (as its training does), so that a slow model
    gets the run's ``--timeout`` per attempt here too.

    Raises:
        SetupError: Any of its calls failed (after the stack's retries; a call the run's budget refused is no
            failure of the backend: the run then stops on its budget): one line with the kind and message.
    """
    graph, params = task.build()
    example = task.split.train[0]
    structure, systems = as_trainable(graph)
    runner = Runner(llm, timeout=timeout, systems=systems)
    if systems is None:
        trace = await runner.run(forward(graph, params, example.inputs, sample="preflight", options=options))
    else:  # a system written as Python: one recorded run of the first training item
        item = attrs.evolve(example, id="preflight")
        trace = await runner.run(run_system(structure, params, item, options=options))  # type: ignore[arg-type]
    # A call the run's budget refused says nothing about the backend: the run stops on its budget instead.
    errors = [e for _, e in trace.errors if not isinstance(e, str) and e.kind != "budget"]
    if errors:
        message = " ".join(errors[0].message.split())
        raise SetupError(f"the backend cannot be used: {errors[0].kind}: {message}")


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
    prices: Mapping[str, tuple[float, ...]] | None = None,
    on_reply: Callable[[Any, Any], None] | None = None,
    enter_llm: bool = False,
    plan: RunPlan | None = None,
    checked: bool = False,
    tracer: Any = None,
) -> RunSummary:
    """Run a config end to end and write the run directory; return its `RunSummary` (``results.json``).

    Every call -- the preflight, training and the final evaluation of every
    task -- goes through one `RunStack` in one event loop, so ``max_calls`` and
    ``max_tokens`` hold for the whole run (this process). A run that spends its
    budget stops, keeps what it has and says so (``"stopped": "budget"``).
    Counters and finished evaluation splits are kept in ``ledger.json``, so a
    resumed run repeats no finished split and its counts are cumulative.

    Args:
        config: What to run.
        run_dir: The output directory.
        resume: Continue from the checkpoints in `run_dir` (its config must match).
        llm: Use this LLM instead of the backend the config names (tests, sweeps);
            the run's stack wraps it just the same.
        on_progress: Called with the task name and each `FitProgress`.
        check_backend: Make one preflight call before starting (real backends).
        prices: USD per million (input, output) tokens by model, for the cost estimate.
        on_reply: Called with each request and its reply, once per call of training and
            evaluation (live progress); when it has a ``watch`` method, that is called
            first with the run's LLM (`RunStack.llm`).
        enter_llm: Enter `llm` (an async context manager: a backend and its connection pool)
            around the run, as the run enters a backend it builds itself; for an LLM made for
            this run alone (a given one is otherwise the caller's to enter).
        plan: The run's `RunPlan` (of this very config) when the caller has it: the run takes
            its tasks instead of loading them again.
        checked: The caller has checked `run_dir` for this run (`check_run_dir`): not again.
        tracer: An OpenTelemetry tracer (``semgrad run --otel``): the backend's calls are `traced` with it
            and each task's `fit` opens its run, iteration and phase spans with it.

    Raises:
        SetupError: The run cannot start (the preflight failed, among others).
        FolderInUse: Another process holds `run_dir` (`semgrad._lock`): nothing was done.
        RunFailed: Its first `FAIL_FAST_CALLS` calls all failed, or more than
            `MAX_ERROR_SHARE` of its calls did (after writing the results).
    """
    out = Path(run_dir)
    existed = out.exists()  # a new run whose preflight fails removes the folder it made (the lock makes one)
    with hold_folder(out):  # one process at a time in a run folder (the CLI may hold it already: re-entrant)
        if not checked:
            check_run_dir(config, out, resume)
        tasks = _planned_tasks(config, plan)
        given = llm if llm is not None else build_llm(config, tasks)
        backend = given if tracer is None else traced(given, tracer=tracer)
        ledger = Ledger.load(out) if resume else Ledger(out)
        journal = Journal.open(out, resume=resume)
        ledger.absorb(journal)  # the calls a killed process made after its last save reach the totals
        stack = run_stack(config, backend, journal, ledger)
        if hasattr(on_reply, "watch"):
            on_reply.watch(stack.llm)  # type: ignore[union-attr]
        # A backend the run built shares one connection pool over every call (each would open its own
        # connection, TLS handshake and all); one that was given is the caller's to enter.
        entered = given if (llm is None or enter_llm) and hasattr(given, "__aenter__") else None
        run = _Run(config, out, stack, ledger, resume, on_progress, on_reply, existed=existed, tracer=tracer)
        try:
            results = run_loop(run.everything, tasks, entered, check_backend)
        finally:
            journal.close()
        return _conclude(config, out, results, ledger, stack, prices, tasks)


def _planned_tasks(config: RunConfig, plan: RunPlan | None) -> tuple[Task, ...]:
    """The plan's tasks (loaded once, by `plan`), or the config's loaded here; checked for the protocol."""
    if plan is None:
        tasks = load_run_tasks(config)
        check_protocol(config, tasks)
        return tasks
    if plan.config != config:
        raise ValueError("the plan given is of another config than the run's")
    return plan.tasks


def _conclude(
    config: RunConfig,
    out: Path,
    results: list[dict[str, Any]],
    ledger: Ledger,
    stack: RunStack,
    prices: Mapping[str, tuple[float, ...]] | None,
    tasks: Sequence[Task],
) -> RunSummary:
    """Write ``results.json`` and the report; raise `RunFailed` after writing when the run's calls failed."""
    data = _summary(config, results, ledger, stack, prices, planned=tasks)
    problem = _failed(data, stack)
    data["failed"] = problem  # the verdict goes with the scores: a sweep must not take them as a finished run
    _write_json(out / "results.json", data)  # as the run built it: tests check it reads back through RunSummary
    summary = RunSummary.from_json(data)
    write_report(out)
    if problem is not None:
        raise RunFailed(f"{problem}; what the run has is in {out}", summary)
    return summary


def _failed(summary: Mapping[str, Any], stack: RunStack) -> str | None:
    counters = summary["counters"]
    if stack.halted is not None:
        return f"stopped: {stack.halted}"
    share = error_share(counters)
    if share > MAX_ERROR_SHARE:
        return (
            f"{failures(counters)} of {counters['calls']} calls failed ({kinds_text(counters)}), "
            f"more than the {MAX_ERROR_SHARE:.0%} a run may lose; the results are not to be trusted"
        )
    return None


def check_run_dir(config: RunConfig, out: Path, resume: bool) -> None:
    """A run of `config` may write into `out`: to resume, its saved config matches; else it is new or empty.

    Raises:
        SetupError: Nothing to resume, a changed config, or a folder that holds something else.
    """
    saved = out / "config.json"
    if resume:
        if not saved.exists():
            raise SetupError(f"nothing to resume in {out}: no config.json")
        from ._resume import load_saved_config

        before = load_saved_config(out)
        changed = config.differs_from(before)
        if changed:
            raise SetupError(f"cannot resume {out}: the config differs in {', '.join(changed)}")
    elif out.exists():
        _check_fresh_dir(config, out)


#: What a run writes into its folder, beside ``checkpoint*.json`` (and a cache the config puts there).
_RUN_FILES = ("config.json", "ledger.json", "results.json", "report.html", "journal.jsonl")


def _check_fresh_dir(config: RunConfig, out: Path) -> None:
    """A new run may go into `out` (which exists): a folder that is empty, or holds only what a run
    that never reached its first checkpoint wrote. Anything else is refused, never written into."""
    if not out.is_dir():
        raise SetupError(f"{out} is not a folder; choose another --out")
    if any(out.glob("checkpoint*.json")):
        raise SetupError(f"{out} already holds a run; pass --resume to continue it, or choose another --out")
    foreign = _foreign_entries(config, out)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise SetupError(
            f"{out} is not empty ({shown}) and holds no run; a run writes its files into a folder of its "
            "own: choose a new or empty --out"
        )
    if (out / "config.json").exists():
        from ._resume import load_saved_config

        try:
            load_saved_config(out)
        except SetupError:
            raise SetupError(
                f"{out / 'config.json'} is not a semgrad run's config; a run would overwrite it: "
                "choose a new or empty --out"
            ) from None


def _foreign_entries(config: RunConfig, out: Path) -> list[str]:
    """What `out` holds that a run would not have written, sorted by name: anything but `_RUN_FILES`,
    hidden entries (``.gitkeep``, ``.DS_Store``) and the run's own cache file with
    SQLite's side files (the CLI may create it before the run starts, when it builds the backend)."""
    own = set(_RUN_FILES)
    if config.cache:
        cache = Path(config.cache).resolve()
        if cache.parent == out.resolve():
            own.update(cache.name + suffix for suffix in ("", "-wal", "-shm", "-journal"))
    return sorted(entry.name for entry in out.iterdir() if not entry.name.startswith(".") and entry.name not in own)


@attrs.define
class _Run:
    """One run's event-loop side: the preflight, then each task trained and evaluated through one stack."""

    config: RunConfig
    out: Path
    stack: RunStack
    ledger: Ledger
    resume: bool
    on_progress: Callable[[str, FitProgress], None] | None
    on_reply: Callable[[Any, Any], None] | None
    existed: bool = True  # the folder was there before this run (a new run's failed preflight leaves it so)
    tracer: Any = None  # `fit`'s spans (semgrad run --otel)

    async def everything(self, tasks: Sequence[Task], entered: Any, check_backend: bool) -> list[dict[str, Any]]:
        """Every task in turn, inside `entered` (the backend's connection pool, when the run enters it)."""
        async with entered if entered is not None else contextlib.nullcontext():
            self.config.save(self.out)  # first, so a run killed in its preflight can be resumed
            if self.stack.journal is not None:
                self.stack.journal.start()
            if check_backend and self.config.backend != "simulated":
                try:
                    await self.preflight(tasks[0])
                except Exception:  # a new run that cannot start leaves no folder behind (an interrupt keeps it)
                    if not self.resume:
                        from ._user_code import discard_failed_run

                        discard_failed_run(self.out, self.existed, ("config.json", "ledger.json", "journal.jsonl"))
                    raise
            results: list[dict[str, Any]] = []
            if self.stack.budget_spent:  # the preflight spent the budget (--max-calls below its calls): no task
                return results
            for task in tasks:
                results.append(await self.task(task, single=len(tasks) == 1))
                if results[-1]["stopped"]:
                    break
            return results

    async def preflight(self, task: Task) -> None:
        """One small forward before the run; its calls go to the ledger apart from every task's.

        With the user's own LLM (``--llm``), an exception its call raised is shown as their code's
        (`UserCodeError`: its type and their frames), not as the backend's one line.
        """
        llm, raised = self.stack.llm, []
        if self.config.llm:  # the run's stack is untouched: only this forward sees what reached its top

            async def llm(request: Any) -> Any:
                try:
                    return await call(self.stack.llm, request)
                except Exception as exc:
                    raised.append(exc)
                    raise

        try:
            try:
                await preflight(llm, task, self.config.sampling()["forward"], timeout=_runner_timeout(self.config))
                await self._probe_batches()
            except SetupError:
                if self.config.llm:
                    from ._user_code import raise_if_user_code

                    raise_if_user_code(self.config.llm, raised)
                raise
        finally:
            self.ledger.add(None, self.stack.tally.take())
            self.ledger.save()
        self.stack.tally.watch_afresh()

    async def _probe_batches(self) -> None:
        """With ``--batch``, one cheap request to the provider's batch API: a server without one (a local vLLM)
        stops the run now, before training is paid for, not at its evaluation."""
        probe = getattr(self.stack.batcher.inner, "probe_batches", None) if self.stack.batcher else None
        if probe is None:
            return
        try:
            await probe()
        except LLMFailure as failure:
            raise SetupError(
                f"--batch: the provider's batch API cannot be reached ({failure.error.message}); drop --batch for a "
                "server without one (vLLM, Ollama, llama.cpp)"
            ) from None

    def keep(self, task: Task) -> None:
        """The counts so far go to the ledger, beside fit's checkpoint."""
        self.ledger.add(task.name, self.stack.tally.take())
        self.ledger.save()

    async def task(self, task: Task, *, single: bool) -> dict[str, Any]:
        """Train `task`, evaluate its splits, and give its entry of ``results.json``."""
        graph, params = task.build()
        ckpt = checkpoint_path(self.out, task, single)
        if self.stack.journal is not None:
            self.stack.journal.task = task.name  # its lines are counted under this task
        result = await self.train(task, graph, params, ckpt)
        stopped = result.stopped
        if self.on_progress and not stopped:
            calls = result.statistics.calls
            self.on_progress(
                task.name, FitProgress(self.config.iterations, self.config.iterations, "evaluating", calls)
            )
        scored = await self.evaluate(task, graph, params, result.params, stopped)
        counters = self.ledger.counters(task.name)
        return _task_json(task, graph, params, result, scored, counters, metric_name(self.config, task))

    async def train(self, task: Task, graph: Graph, params: Params, ckpt: Path) -> FitResult:
        """`fit` the task's params through the run's stack, checkpointing to `ckpt`."""
        config = self.config
        self.stack.batching = self.stack.batched_in("train")

        def progress(event: FitProgress) -> None:
            if event.phase == "done":
                self.keep(task)
            if self.on_progress is not None:
                self.on_progress(task.name, event)

        result: FitResult = await fit(
            graph,
            params,
            make_optimizer(config),
            train=task.split.train,
            validation=task.split.validation if config.protocol == "heldout" else (),
            # The official protocol answers an identical temperature-0 request of the training loop once, as the
            # paper's memoised chat does: a memo hit is counted as one (RunStatistics.memo_hits), never as a call.
            llm=self.stack.memoized() if config.protocol == "official" else self.stack.llm,
            iterations=config.iterations,
            loss=task_loss(config, task),
            checkpoint=ckpt,
            resume=ckpt if self.resume and ckpt.exists() else None,
            on_progress=progress,
            max_concurrency=None if self.stack.batching else config.concurrency,
            timeout=_runner_timeout(config),
            options=config.sampling(),
            on_reply=self.on_reply,
            tracer=self.tracer,
        )
        self.keep(task)
        _check_scores(result, ckpt)
        return result

    async def evaluate(self, task: Task, graph: Graph, initial: Params, final: Params, stopped: Any) -> _Scored:
        """Score the final params on each split and the initial ones on the test split (a finished split of an
        earlier process of this run is read from the ledger, not asked again)."""
        config, stack, ledger = self.config, self.stack, self.ledger
        structure, systems = as_trainable(graph)
        stack.batching = stack.batched_in("eval")  # a batch's calls must be in flight together: no runner limit
        runner = Runner(
            stack.llm,
            max_concurrency=None if stack.batching else config.concurrency,
            timeout=_runner_timeout(config),
            on_reply=self.on_reply,
            systems=systems,
        )
        loss = task_loss(config, task)
        scored = _Scored(stopped)
        parts = task.split
        for split, p, examples in (
            ("train", final, parts.train),
            ("validation", final, parts.validation),
            ("test", final, parts.test),
            ("initial_test", initial, parts.test),
        ):
            if scored.carry(ledger, task.name, split, p, examples) or not examples or scored.stopped:
                continue
            refused = stack.budget.refused
            evaluated = await runner.run(evaluate(structure, p, examples, loss, options=config.sampling()["forward"]))
            if stack.budget.refused > refused or stack.halted:  # the split is incomplete: not a score
                scored.stopped = "budget" if stack.halted is None else "halted"
            else:
                score = scored.score(split, mean_score(evaluated), examples, evaluated)
                if not _transient_failures(evaluated):  # else a resumed run asks again: a passing outage is no score
                    test = scored.predictions if split == "test" else None
                    ledger.evaluated(task.name, split, p, score, test, examples)
            self.keep(task)
        stack.batching = False
        return scored


@attrs.define
class _Scored:
    """A task's evaluation as it goes: scores by split, those an earlier process carried, the test predictions."""

    stopped: Any
    scores: dict[str, float | None] = attrs.Factory(dict)
    carried: list[str] = attrs.Factory(list)  # splits an earlier process of this run scored
    predictions: list[dict[str, Any]] = attrs.Factory(list)  # the test split's, for results.json and the report

    def carry(self, ledger: Ledger, task: str, split: str, params: Params, examples: Sequence[Example]) -> bool:
        """Take the split's score from the ledger when an earlier process of this run scored it (then True)."""
        self.scores[split] = ledger.evaluation(task, split, params, examples) if examples else None
        if self.scores[split] is None:
            return False
        self.carried.append(split)
        if split == "test":
            self.predictions = ledger.predictions(task, split, params, examples) or []
        return True

    def score(self, split: str, score: float, examples: Sequence[Example], evaluated: Any) -> float:
        """Record a split's score (and the test split's predictions)."""
        self.scores[split] = score
        if split == "test":
            self.predictions = predictions_json(examples, evaluated)
        return score


def _task_json(
    task: Task,
    graph: Graph,
    params: Params,
    result: FitResult,
    scored: _Scored,
    counters: Mapping[str, Any],
    metric: str,
) -> dict[str, Any]:
    parts = task.split
    return {
        "task": task.name,
        "category": task.category,
        "sizes": {"train": len(parts.train), "validation": len(parts.validation), "test": len(parts.test)},
        "protocol": task.protocol,
        "scored_on": task.scored_on,
        "metric": metric,  # what scored the run: the task's metric, "judge", or the user's (my_metric.py:score)
        "initial_score": result.initial_score,
        "best_score": result.best_score,
        "stopped": scored.stopped,
        "iterations": [_record(r) for r in result.history],
        "accuracy": scored.scores,
        "carried_over": scored.carried,
        "errors": counters["errors"],
        "errors_by_kind": dict(counters["errors_by_kind"]),
        "params": {"initial": dict(params.texts()), "final": dict(result.params.texts())},
        "graph": _graph_json(graph) if isinstance(graph, Graph) else _system_json(graph),
        "published": _published(task),
        "predictions": scored.predictions,
        "predictions_split": "test",
    }


def _system_json(system: Any) -> dict[str, Any]:
    """The ``graph`` entry of a system written as Python: no one graph (each test prediction carries the graph its
    run recorded), its name and that it is recorded per sample."""
    ref, _ = as_trainable(system)
    return {"nodes": [], "edges": [], "output": None, "system": getattr(ref, "name", ""), "recorded": True}


def _transient_failures(evaluated: Sequence[tuple[Any, Any]]) -> int:
    """Calls of an evaluation that failed in a way another attempt may not (an outage, a rate limit,
    a timeout: `LLMError.retryable`), after the stack's retries."""
    return sum(1 for trace, _ in evaluated for _, error in trace.errors if getattr(error, "retryable", False))


def _published(task: Task) -> dict[str, Any] | None:
    """The paper's figure for this task itself, if it has one: GSM8K's. A BBH task gets none: the paper gives
    only its category's average over all the category's tasks, which is no figure of one task (the run's
    ``published`` holds it when the run's category average covers every task of the category)."""
    if task.name == "gsm8k":
        return {"label": "Paper (GSM8K)", "value": PUBLISHED["gsm8k"], "scope": "task"}
    return None


def _summary(
    config: RunConfig,
    results: list[dict[str, Any]],
    ledger: Ledger,
    stack: RunStack,
    prices: Mapping[str, tuple[float, ...]] | None,
    *,
    planned: Sequence[Task] = (),
) -> dict[str, Any]:
    from .. import __version__

    weighted, unweighted = task_averages(results)
    # A group with a planned task that has no test score (the run stopped first, or its test split
    # failed) has no average: one over the tasks that happen to be done would stand beside the
    # paper's figure for the whole group.
    scored = {r["task"] for r in results if (r.get("accuracy") or {}).get("test") is not None}
    unscored = [task for task in planned if task.name not in scored] if len(planned) > 1 else []
    for group in weighted:
        if any(group == "overall" or task.category == group for task in unscored):
            weighted[group] = unweighted[group] = None
    counters = ledger.total()
    tokens = {engine: (used[0], used[1]) for engine, used in counters["tokens_by_engine"].items()}
    stopped = next((r["stopped"] for r in results if r["stopped"]), None)
    if stopped is None and not results and stack.budget_spent:
        stopped = "budget"  # spent in the preflight
    return {
        "semgrad_version": __version__,
        "task": config.task,
        "backend": config.backend,
        "optimizer": config.optimizer,
        "seed": config.seed,
        "simulated": config.backend == "simulated",
        "tasks": results,
        "averages": weighted,
        "averages_unweighted": unweighted,
        "unscored_tasks": [task.name for task in unscored],
        "average_tasks": average_coverage(results),
        "published": {key: PUBLISHED[key] for key in comparable_figures(results)},
        "calls": {"by_purpose": dict(counters["calls_by_purpose"]), "by_role": dict(counters["calls_by_engine"])},
        "tokens": tokens_json(
            config.backend == "simulated", counters["input_tokens"], counters["output_tokens"], tokens
        ),
        "cost_usd": run_cost(config, counters, prices),
        "errors": counters["errors"],
        "errors_by_kind": dict(counters["errors_by_kind"]),
        "counters": counters,
        "stopped": stopped,
        "stopped_detail": _stopped_detail(stopped, stack),
    }


def _stopped_detail(stopped: str | None, stack: RunStack) -> str | None:
    if stopped == "budget":
        return f"the budget is spent ({stack.budget_text()})"
    if stopped == "halted":
        return stack.halted
    return None


def _check_scores(result: FitResult, checkpoint: Path) -> None:
    """A run's metrics score from 0 to 1: a score outside that came from a checkpoint changed by hand."""
    scores = [result.initial_score, result.best_score]
    scores += [s for r in result.history for s in (r.train_score, r.validation_score)]
    bad = next((s for s in scores if s is not None and not 0 <= s <= 1), None)
    if bad is not None:
        raise CheckpointError(f"{checkpoint} holds a score of {bad!r}, outside 0..1; remove it to start the run over")


def _write_json(path: Path, data: Any) -> None:
    # allow_nan=False: NaN and Infinity are not JSON (a reader would refuse the file); nothing should hold them
    write_text_atomically(path, json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
