"""``semgrad compare``: several optimizers on the same task, splits and seed, side by side.

Each optimizer is an ordinary run (`run_experiment`) in its own subdirectory of the
comparison directory; `compare` adds ``compare.json``, ``compare.md`` (the table)
and ``compare.html`` (the table and a chart of the score per iteration). With
``dry_run=True`` nothing is called: each optimizer's calls, tokens and cost come
from each one's `plan` (the tasks loaded once).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .._files import write_text_atomically
from ..core import FrozenMap, LLMRequest
from ..effects import FitProgress
from ..report._compare import compare_table, render_compare
from ..tasks import Task
from ._compare_result import CompareResult, MethodResult
from ._config import OPTIMIZERS, RunConfig
from ._dry_run import estimate_tokens
from ._plan import plan
from ._prices import estimate_cost
from ._progress import _find_accounts
from ._results import RunSummary, thaw_json
from ._run import SetupError, build_llm, load_run_tasks, run_experiment
from ._run_stack import _NOT_FAILURES, failures

__all__ = ["PurposeMeter", "compare", "parse_optimizers"]

TOKEN_NOTE = "Tokens the backend did not report are estimated at four characters per token."


def parse_optimizers(text: str) -> tuple[str, ...]:
    """The optimizers of a comma-separated list, checked and without repeats.

    Examples:
        >>> parse_optimizers("neighbor-sgd, textgrad")
        ('neighbor-sgd', 'textgrad')
        >>> parse_optimizers("adam")
        Traceback (most recent call last):
        ...
        ValueError: unknown optimizer 'adam'; choose from: neighbor-sgd, tgd, via-feedback, no-gradients, \
no-neighbors, no-neighbours-as-run, one-parameter, no-gate, textgrad, optoprime, copro, gepa, pareto-sgd
    """
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("--optimizers needs at least one name")
    for name in names:
        if name not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {name!r}; choose from: {', '.join(OPTIMIZERS)}")
    return tuple(dict.fromkeys(names))


class PurposeMeter:
    """A run's tokens by request purpose and engine, read from the run's accounts.

    The run's stack keeps the one count of calls and tokens (its tally's `semgrad.effects.Accounts`);
    `watch` (run_experiment calls it with the stack) finds them, and `by_purpose` / `by_engine` read the
    tokens its billed calls reported. As the backend, the meter also estimates (four characters per token)
    the tokens of replies that report none -- what no account holds, since accounts keep reported usage
    only -- and `estimated` becomes True; unless `estimate` is False (the simulated LLM, which uses no
    tokens: none are estimated, as a run on it counts none).
    """

    def __init__(self, llm: Any, *, estimate: bool = True) -> None:
        self.llm = llm
        self.estimate = estimate
        self.identity = getattr(llm, "identity", None)
        self.is_async = True
        self.tally: Any = None  # the run's tally, once `watch` finds it
        self._estimates: dict[tuple[str, str], list[int]] = {}  # (purpose, engine): estimated tokens in and out
        self.estimated = False

    async def __aenter__(self) -> PurposeMeter:
        """Enter the wrapped LLM when it is an async context manager (a backend's connection pool)."""
        enter = getattr(self.llm, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        leave = getattr(self.llm, "__aexit__", None)
        if leave is not None:
            await leave(*exc)

    def watch(self, stack_llm: Any) -> None:
        """Read the accounts of the run's tally inside `stack_llm` (the top of the run's stack)."""
        self.tally = _find_accounts(stack_llm)

    @property
    def on_reply(self) -> _Watching:
        """The run's ``on_reply``: it does nothing per reply, and hands the run's stack to `watch`."""
        return _Watching(self)

    async def __call__(self, request: LLMRequest) -> Any:
        from ..effects._protocol import is_async_llm

        result = self.llm(request)
        if is_async_llm(self.llm) or hasattr(result, "__await__"):
            result = await result
        # Every billed reply's (purpose, engine) is noted, in order: the tables list them as the provider answered
        # them (the accounts' lines are in the order the run first saw them, a cache's answers included).
        row = self._estimates.setdefault((request.purpose, request.engine), [0, 0])
        usage = getattr(result, "usage", None) or {}
        if self.estimate and not (usage.get("input_tokens") or usage.get("output_tokens")):
            self.estimated = True
            text = result if isinstance(result, str) else getattr(result, "text", "")
            row[0] += sum(estimate_tokens(m.content) for m in request.messages)
            row[1] += estimate_tokens(text or "")
        return result

    def _tokens(self, field: str) -> dict[str, list[int]]:
        """Input and output tokens by `field` ("purpose" or "engine") of the billed replies: reported ones from
        the run's accounts, plus the estimates of those that reported none, in the order the provider first answered."""
        table: dict[str, list[int]] = {}
        for (purpose, engine), (used_in, used_out) in self._estimates.items():  # in the order the provider answered
            row = table.setdefault(purpose if field == "purpose" else engine, [0, 0])
            row[0] += used_in
            row[1] += used_out
        accounts = self.tally.accounts_so_far() if self.tally is not None else None
        for line, amount in accounts.lines.items() if accounts is not None else ():
            if amount.calls > amount.errors:  # a reply reached the run: its purpose is shown, tokens or not
                row = table.setdefault(getattr(line, field), [0, 0])
                row[0] += amount.input_tokens
                row[1] += amount.output_tokens
        return table

    @property
    def by_purpose(self) -> dict[str, list[int]]:
        """``[input, output]`` tokens by request purpose."""
        return self._tokens("purpose")

    @property
    def by_engine(self) -> dict[str, list[int]]:
        """``[input, output]`` tokens by request engine."""
        return self._tokens("engine")


@attrs.frozen
class _Watching:
    """An ``on_reply`` that counts nothing (the accounts count) and lets `meter` find the run's accounts."""

    meter: PurposeMeter

    def watch(self, stack_llm: Any) -> None:
        """Hand the run's stack to the meter."""
        self.meter.watch(stack_llm)

    def __call__(self, request: Any, reply: Any) -> None:
        """Nothing per reply."""


def _scores(summary: RunSummary) -> list[float | None]:
    """The mean training score per iteration over the run's tasks, then the final one."""
    tasks = summary.tasks
    n = max((len(t.iterations) for t in tasks), default=0)
    scores: list[float | None] = []
    for i in range(n):
        found = [t.iterations[i]["train_score"] for t in tasks if len(t.iterations) > i]
        scores.append(sum(found) / len(found) if found else None)
    finals = [score for t in tasks if (score := t.score("train")) is not None]
    if finals:
        scores.append(sum(finals) / len(finals))
    return scores


def _initial_test(summary: RunSummary) -> float | None:
    found = [score for t in summary.tasks if (score := t.score("initial_test")) is not None]
    return sum(found) / len(found) if found else None


#: What a comparison writes into its folder, beside a run folder per optimizer.
_COMPARE_FILES = ("compare.json", "compare.md", "compare.html")


def _check_compare_dir(root: Path, optimizers: Sequence[str]) -> None:
    """A comparison goes into a new folder, or one holding only what a comparison writes (hidden
    entries aside): never among other files."""
    if root.exists() and not root.is_dir():
        raise SetupError(f"{root} is not a folder; choose another --out")
    if not root.exists():
        return
    own = {*_COMPARE_FILES, *OPTIMIZERS, *optimizers}
    foreign = sorted(e.name for e in root.iterdir() if not e.name.startswith(".") and e.name not in own)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise SetupError(
            f"{root} is not empty ({shown}) and holds no comparison; a comparison writes its files into a "
            "folder of its own: choose a new or empty --out"
        )


def _planned_method(
    cfg: RunConfig, tasks: Sequence[Task], prices: Mapping[str, tuple[float, ...]] | None
) -> MethodResult:
    """A method's row of a dry comparison: its plan's calls, tokens and cost (the tasks loaded once)."""
    planned = plan(cfg, prices=prices, tasks=tasks)
    return MethodResult(
        optimizer=cfg.optimizer,
        calls=planned.total_calls,
        calls_by_purpose=FrozenMap(planned.by_purpose()),
        input_tokens=planned.input_tokens,
        output_tokens=planned.output_tokens,
        cost_usd=planned.cost_usd,
    )


def _run_method(
    cfg: RunConfig,
    tasks: Sequence[Task],
    root: Path,
    prices: Mapping[str, tuple[float, ...]] | None,
    llm_factory: Callable[[RunConfig], Any] | None,
    progress: Callable[[str, FitProgress], None] | None,
    clock: Callable[[], float],
) -> MethodResult:
    """Run one method into ``root/<optimizer>`` and give its row, read from its `RunSummary`."""
    name = cfg.optimizer
    llm = llm_factory(cfg) if llm_factory is not None else build_llm(cfg, tasks)
    meter = PurposeMeter(llm, estimate=cfg.backend != "simulated")
    started = clock()
    summary = run_experiment(
        cfg,
        root / name,
        llm=meter,
        on_progress=progress,
        on_reply=meter.on_reply,
        prices=prices,
        enter_llm=llm_factory is None,
    )
    wall = clock() - started
    tokens = {role: (used[0], used[1]) for role, used in meter.by_engine.items()}
    by_purpose = meter.by_purpose
    return MethodResult(
        optimizer=name,
        scores=tuple(_scores(summary)),
        test=summary.averages.get("overall"),
        initial_test=_initial_test(summary),
        # calls made (billed); requests a cache or the run's journal answered are hits, apart
        calls=summary.total_calls,
        hits=_hits(summary),
        calls_by_purpose=summary.calls_by_purpose,
        tokens_by_purpose=FrozenMap((p, used[0] + used[1]) for p, used in by_purpose.items()),
        input_tokens=sum(u[0] for u in by_purpose.values()),
        output_tokens=sum(u[1] for u in by_purpose.values()),
        # the simulated backend is offline: it uses no tokens, at no price
        cost_usd=0.0 if cfg.backend == "simulated" else summary.cost_usd or estimate_cost(cfg, tokens, prices),
        wall_s=round(wall, 3),
        run_dir=name,
        stopped=summary.stopped,
        stopped_detail=summary.stopped_detail,
        # counted in "calls", but never sent: the run's own budget or stop refused them
        refused=sum(int(summary.errors_by_kind.get(kind, 0)) for kind in _NOT_FAILURES),
        # calls that failed at the backend after retries (the scores count them as wrong answers)
        failed_calls=failures(thaw_json(summary.counters)),
    )


def _check_out(root: Path, optimizers: Sequence[str], dry_run_only: bool) -> None:
    """A real comparison goes into a folder of its own that holds no run yet: it does not resume, each method's
    run starts afresh."""
    if dry_run_only:
        return
    taken = [name for name in optimizers if any((root / name).glob("checkpoint*.json"))]
    if taken:
        raise SetupError(f"{root / taken[0]} already holds a run; choose another --out for this comparison")
    _check_compare_dir(root, optimizers)


def _method_config(config: RunConfig, name: str) -> RunConfig:
    """`config` for the optimizer `name` (the `param` only one-parameter takes dropped for the others)."""
    return attrs.evolve(config, optimizer=name, param=config.param if name == "one-parameter" else None)


def _comparison(
    config: RunConfig, tasks: Sequence[Task], methods: Sequence[MethodResult], dry_run_only: bool
) -> CompareResult:
    """The comparison of `methods`, with the settings they shared."""
    parts = ("train", "validation", "test")
    return CompareResult(
        task=config.task,
        backend=config.backend,
        simulated=config.backend == "simulated",
        seed=config.seed,
        iterations=config.iterations,
        k=config.k,
        protocol=config.protocol,
        sizes=FrozenMap((part, sum(len(getattr(t.split, part)) for t in tasks)) for part in parts),
        dry_run=dry_run_only,
        token_note="" if dry_run_only or config.backend == "simulated" else TOKEN_NOTE,
        methods=tuple(methods),
    )


def _write(root: Path, result: CompareResult) -> None:
    """``compare.json``, ``compare.md`` (the table) and ``compare.html`` (the page) into `root`."""
    root.mkdir(parents=True, exist_ok=True)
    write_text_atomically(root / "compare.json", json.dumps(result.to_json(), indent=1, ensure_ascii=False) + "\n")
    write_text_atomically(root / "compare.md", compare_table(result) + "\n")
    write_text_atomically(root / "compare.html", render_compare(result))


def _hits(summary: Any) -> int:
    """Requests of a run answered without a call (a cache, the journal or a memo)."""
    hits = thaw_json(summary.counters).get("hits") or {}
    return sum(int(n) for n in hits.values()) if isinstance(hits, dict) else 0


def compare(
    config: RunConfig,
    optimizers: Sequence[str],
    out: str | os.PathLike[str],
    *,
    dry_run_only: bool = False,
    prices: Mapping[str, tuple[float, ...]] | None = None,
    llm_factory: Callable[[RunConfig], Any] | None = None,
    on_progress: Callable[[str, str, FitProgress], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    on_tasks: Callable[[tuple[Task, ...]], None] | None = None,
) -> CompareResult:
    """Run (or dry-run) each optimizer on `config`'s task, splits and seed; write the comparison.

    Args:
        config: The shared settings; its `optimizer` is replaced by each of `optimizers` (and its
            `param`, which only one-parameter takes, is dropped for the others).
        optimizers: Names from `OPTIMIZERS`.
        out: The comparison directory; each optimizer's run goes to ``out/<optimizer>``.
        dry_run_only: Count calls, tokens and cost per optimizer; call nothing, run nothing.
        prices: USD per million (input, output) tokens by model.
        llm_factory: Builds the LLM of each run (default: the one the config names; a fresh
            one per optimizer, so the simulated LLM starts from the same state each time).
        on_progress: Called with the optimizer, the task and each `FitProgress`.
        clock: Seconds, for the wall time of each run.
        on_tasks: Called with the tasks, split, once they are loaded (before anything runs).

    Returns:
        The comparison, a `CompareResult` (also written to ``out/compare.json``; indexing it by a key of
        ``compare.json`` still works).
    """
    root = Path(out)
    tasks = load_run_tasks(config)  # fail on bad data before anything runs
    if on_tasks is not None:
        on_tasks(tasks)
    _check_out(root, optimizers, dry_run_only)
    methods = []
    for name in optimizers:
        cfg = _method_config(config, name)
        if dry_run_only:
            methods.append(_planned_method(cfg, tasks, prices))
            continue
        progress = (lambda task, event, name=name: on_progress(name, task, event)) if on_progress else None
        methods.append(_run_method(cfg, tasks, root, prices, llm_factory, progress, clock))
    result = _comparison(config, tasks, methods, dry_run_only)
    if not dry_run_only:
        _write(root, result)
    return result
