"""The training loop: forward, score, optimize, apply or reject, repeat -- resumable.

`fit` is the only place where an optimization touches I/O: it runs programs with
a `Runner`, writes a JSON checkpoint after each iteration, and can resume from
one to the same result an uninterrupted run reaches (same seeds, deterministic
LLM), without repeating the calls of completed iterations.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

import attrs

from .._files import remove_stale_temporaries
from ..core import (
    Example,
    FrozenMap,
    Graph,
    LLMError,
    LLMFailure,
    LLMRequest,
    Params,
    as_examples,
    gather,
    normalized_match,
)
from ..core._sampling import engine_options
from ..core._scoring import Loss, check_loss
from ..core.optim import StageReport, Step, Transform, apply_updates, evaluate, mean_score
from ..core.optim._combining import checked_update
from ._accounting import charged_tokens, failed_tokens
from ._belongs import differing_parts, run_fingerprint
from ._checkpoint import CheckpointError, _field_types, encode, read_checkpoint, write_checkpoint
from ._checkpoint import state_types as checkpoint_state_types
from ._limit import estimate_tokens
from ._loop import run_loop
from ._protocol import is_async_llm
from ._runner import Runner, RunStatistics

__all__ = ["Budget", "FitProgress", "FitResult", "IterationRecord", "fit", "fit_sync"]


@attrs.frozen
class Budget:
    """Stop the run cleanly once either limit would be passed (None: no limit).

    The budget counts the calls `fit` makes of its `llm`, one per request of its
    programs, above whatever middleware `llm` holds: a call that a
    ``retrying(...)`` inside `llm` tries three times counts once, and a call a
    ``cached(...)`` inside `llm` answers from its cache counts too. To cap what
    reaches the provider (each retry paid for, cache hits free), put
    ``budgeted(provider, max_calls=..., max_tokens=...)`` under the retries and
    the cache instead, as the CLI does: ``cached(retrying(budgeted(provider, ...)))``;
    the call it refuses stops `fit` the same way. A call this budget refuses
    reaches no LLM; the run's statistics count it as a failed call of kind
    ``"budget"`` (see `RunStatistics`).

    Attributes:
        max_calls: Calls `fit` may make (calls it started; the refused ones are not
            counted against the limit).
        max_tokens: Tokens `fit`'s calls may use. Each call reserves its estimate
            (characters / 4, plus the request's ``max_tokens`` option) before it
            starts and is refused when the tokens used plus the reservations would
            pass the limit. A reply's reported usage replaces its estimate; a reply
            without usage keeps the estimate, so the limit is reached even when
            the provider reports no usage. A failed call keeps its estimate too,
            unless its error kind says the model never ran (see ``budgeted``).
    """

    max_calls: int | None = attrs.field(default=None, validator=lambda _, a, v: _check_limit(a.name, v))
    max_tokens: int | None = attrs.field(default=None, validator=lambda _, a, v: _check_limit(a.name, v))


def _check_limit(name: str, value: Any) -> None:
    if value is not None and not (type(value) is int and value >= 0):  # NaN or 1.5 would be no limit, or a wrong one
        raise ValueError(f"Budget.{name} must be >= 0 and a whole number (or None for no limit), got {value!r}")


@attrs.frozen
class IterationRecord:
    """What one iteration did.

    Attributes:
        iteration: Its number (0-based).
        train_score: Mean training score of the params it started from.
        validation_score: The candidate's score, when a gate scored it (on the
            validation set, or on the training items without one).
        accepted: The gate's verdict (None without a gate).
        updates: The new values proposed for application, by parameter.
        applied: Whether `updates` were applied.
        gradients: What each parameter was rewritten from, as text.
        report: One entry per optimizer stage.
        calls: Calls made in this iteration, by purpose (the first iteration's include
            the one-off scoring of the initial params, which runs alongside it).
    """

    iteration: int
    train_score: float
    validation_score: float | None = None
    accepted: bool | None = None
    updates: FrozenMap[str, Any] = FrozenMap()
    applied: bool = False
    gradients: FrozenMap[str, str] = FrozenMap()
    report: tuple[StageReport, ...] = ()
    calls: FrozenMap[str, int] = FrozenMap()


@attrs.frozen
class FitResult:
    """The outcome of `fit`.

    Attributes:
        params: The best accepted params (with no gate: the last ones).
        initial_params: The params the run started from.
        initial_score: The gate's score of `initial_params`: on the validation set, or
            on the training items without one (None when never scored).
        best_score: The gate's score of `params`, when known (None once an update was
            applied that no gate scored, as without a gate).
        history: One `IterationRecord` per completed iteration.
        statistics: Calls, errors and tokens of this process's calls (`RunStatistics`:
            a call a budget refused is counted there as a failed call of kind "budget").
        stopped: Why the run ended early, or None: "budget" (this call's `budget`, or a
            `budgeted` layer of the LLM, refused a call) or "halted" (a middleware
            stopped the run because its calls keep failing).
    """

    params: Params
    initial_params: Params
    initial_score: float | None
    best_score: float | None
    history: tuple[IterationRecord, ...]
    statistics: RunStatistics
    stopped: str | None = None

    @property
    def scores(self) -> tuple[float, ...]:
        """Training score per completed iteration."""
        return tuple(r.train_score for r in self.history)

    @property
    def errors(self) -> int:
        """Calls of this process that ended in an `LLMError` (``statistics.errors``), the calls a
        budget refused included (kind ``"budget"`` in `errors_by_kind`)."""
        return self.statistics.errors

    @property
    def errors_by_kind(self) -> FrozenMap[str, int]:
        """Those failed calls per error kind (``statistics.errors_by_kind``), e.g. ``{"server": 3}``."""
        return self.statistics.errors_by_kind


@attrs.frozen
class FitProgress:
    """A progress event: the phase of an iteration and the calls made so far."""

    iteration: int
    iterations: int
    phase: str
    calls: int
    score: float | None = None


#: Error kinds that mean "stop the run": a spent budget anywhere in the LLM's middleware stack, or a
#: run-level stop (``"halted"``: the calls keep failing). `fit` ends cleanly with ``stopped`` set to the kind.
STOP_KINDS = ("budget", "halted")


class _Guard:
    """Wraps the LLM: counts calls and tokens; refuses calls past the budget."""

    is_async = True

    def __init__(self, llm: Any, budget: Budget | None) -> None:
        self.llm, self.budget = llm, budget or Budget()
        self.identity = getattr(llm, "identity", None)
        self.calls = self.tokens = self.reserved = 0
        self.exceeded = False
        self.stopped = "budget"

    async def __call__(self, request: LLMRequest) -> Any:
        # Reserve before calling (as `budgeted` does), so the calls in flight cannot pass the budget together.
        estimate = estimate_tokens(request) if self.budget.max_tokens is not None else 0
        if (self.budget.max_calls is not None and self.calls >= self.budget.max_calls) or (
            self.budget.max_tokens is not None and self.tokens + self.reserved + estimate > self.budget.max_tokens
        ):
            self.exceeded = True
            raise LLMFailure(LLMError("budget", "the run's budget is spent", retryable=False))
        self.calls += 1
        self.reserved += estimate
        try:
            result = self.llm(request)
            if is_async_llm(self.llm) or hasattr(result, "__await__"):
                result = await result
        except LLMFailure as failure:
            if failure.error.kind in STOP_KINDS:  # a budget (or a stop) further down the stack: end cleanly
                self.exceeded = True
                self.stopped = failure.error.kind
            self.tokens += failed_tokens(failure, estimate)
            raise
        except BaseException as exc:  # a paid call that failed otherwise, or a cancellation
            self.tokens += failed_tokens(exc, estimate)
            raise
        finally:
            self.reserved -= estimate
        self.tokens += charged_tokens(result, estimate)
        return result


def _as_budget(budget: Budget | Mapping[str, int] | None) -> Budget | None:
    if budget is None or isinstance(budget, Budget):
        return budget
    if not isinstance(budget, Mapping):
        raise TypeError(
            f"budget must be a Budget or a mapping such as {{'max_calls': 100}}, got {type(budget).__name__}"
        )
    return Budget(**dict(budget))


def _gradient_text(step: Step) -> FrozenMap[str, str]:
    from ..core._prompts import render_examples

    found = {}
    for name, g in (step.param_gradients or FrozenMap()).items():
        parts = [render_examples([(e.inputs, e.output, e.feedback) for e in g.examples])] if g.examples else []
        if g.feedback:
            parts.append(g.feedback)
        if name in step.critiques:
            parts.append(f"Critique: {step.critiques[name]}")
        found[name] = "\n\n".join(parts)
    return FrozenMap(found)


async def fit(
    graph: Graph,
    params: Params,
    optimizer: Transform,
    *,
    train: Iterable[Example | Mapping[str, Any]],
    llm: Any,
    validation: Iterable[Example | Mapping[str, Any]] = (),
    iterations: int = 4,
    loss: Loss | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    budget: Budget | Mapping[str, int] | None = None,
    on_progress: Callable[[FitProgress], None] | None = None,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    on_reply: Callable[[LLMRequest, Any], None] | None = None,
    state_types: Iterable[type] = (),
) -> FitResult:
    """Optimize `params` with `optimizer` for `iterations` iterations.

    Each iteration forwards the training set, scores it with `loss` (default:
    normalised exact match, no LLM call), runs the optimizer and applies its
    updates unless the gate rejected them.

    Two protocols, chosen by `validation`:

    * omitted (the official protocol): the gate scores each candidate on the
      training items, and that forward is reused as the next iteration's (the
      current params' own forward when the candidate is rejected), so a run
      forwards the training set once, then once per iteration -- for the paper's
      graph 3N forward calls once, then per iteration 3N forward, k backward and
      one rewrite per parameter. `initial_score` and `best_score` are training scores.
    * given (the held-out protocol): the initial params are scored on it once,
      before the first iteration, to seed the gate, and each candidate is scored
      on it; every iteration forwards the training set afresh.

    Args:
        graph, params: The system and its starting values.
        optimizer: A transform such as `optim.neighbor_sgd(k=2)`.
        train, validation: `Example`s or dicts ``{"inputs": {...}, "target": ...}``.
        llm: A sync or async LLM. A plain (sync) one is called inline on the event
            loop: one call at a time, blocking the loop, out of `timeout`'s reach
            (see `Runner`); for a blocking client, write it as ``async def`` around
            ``anyio.to_thread.run_sync``, or use an async client.
        iterations: How many iterations in all (a resumed run counts those done).
        loss: How to score a sample (see `semgrad.core.normalized_match`): a callable
            ``loss(example, trace)`` returning a ``Program[Score]`` (``pure(Score(...))``
            when it makes no call).
        checkpoint: Write a JSON checkpoint here after every iteration (None: no file).
        resume: Continue from this checkpoint (and keep writing to it unless
            `checkpoint` names another file).
        budget: Stop cleanly, keeping the best result so far, once the calls or
            tokens of this process would pass it (see `Budget`: a reply's reported
            usage replaces its estimate; a reply without usage keeps the estimate).
            It counts `fit`'s own calls of `llm`, not the attempts of a
            ``retrying(...)`` inside it, and counts the hits of a ``cached(...)``
            inside it. To cap what reaches the provider, wrap the provider in
            ``budgeted(...)`` under ``retrying(...)`` and ``cached(...)`` (as the
            CLI does); a `budgeted` layer inside `llm` that refuses a call stops
            the run the same way.
        on_progress: Called with a `FitProgress` at each phase.
        max_concurrency, timeout: Passed to the `Runner`: at most `max_concurrency`
            calls of this `fit` in flight (concurrent `fit` calls sharing an LLM each
            get as many; bound the LLM with ``limited(...)``), and `timeout` seconds
            per call of an async LLM.
        options: Sampling options per engine, e.g. ``{"forward": {"temperature": 0.7,
            "max_tokens": 512}}`` (see `semgrad.core.sampling`); every request of the run
            carries its engine's (a stage's own options win). None: the official
            values, temperature 0 and 1024 max tokens, for every engine; an engine left
            out of the mapping gets those too, and ``{}`` leaves it to the provider.
        on_reply: Called with each request and its reply as it arrives (see `Runner`);
            keep it cheap, it runs once per call.
        state_types: The attrs classes your own stages keep their state in, which a
            checkpoint may then hold (the built-in stages' are known). A checkpoint never
            names what is built from it: only these and semgrad's own run-state types are.
            With `checkpoint` or `resume`, a state of another type is refused before any call.

    Returns:
        A `FitResult`.
    """
    if not callable(llm):  # a typo would otherwise fail every call, and look like a weak model
        raise TypeError(f"fit needs an LLM (a callable), got {type(llm).__name__}")
    if not isinstance(optimizer, Transform):  # checked before any call (it is first used after the forward)
        hint = " (a factory: call it to build the optimizer)" if callable(optimizer) else ""
        raise TypeError(
            f"fit needs an optimizer, a Transform such as optim.neighbor_sgd(k=2), got {type(optimizer).__name__}{hint}"
        )
    if loss is not None:
        check_loss(loss)
    train_set, validation_set = _examples("train", train), _examples("validation", validation)
    if not train_set:
        raise ValueError("fit needs at least one training example")
    if not (type(iterations) is int and iterations >= 0):
        raise ValueError(f"iterations must be >= 0 and a whole number, got {iterations!r}")
    if loss is None:  # the default loss compares each output with its item's target
        missing = next((e for e in (*train_set, *validation_set) if e.target is None), None)
        if missing is not None:
            raise ValueError(
                f"item {missing.id!r} has no target, which the default loss compares the output with "
                "(an output 'None' would count as right); give every item a target, or pass loss="
            )
    loss = loss or normalized_match()
    per_engine = engine_options(options)
    forward_options = per_engine["forward"]
    guard = _Guard(llm, _as_budget(budget))
    runner = Runner(guard, max_concurrency=max_concurrency, timeout=timeout, on_reply=on_reply)
    checkpoint = checkpoint if checkpoint is not None else resume
    types = checkpoint_state_types(state_types)
    belongs = run_fingerprint(graph, params, train_set, validation_set, optimizer, loss, per_engine)
    state = (
        _RunState.start(graph, params, optimizer, belongs)
        if resume is None
        else _RunState.load(resume, graph, params, optimizer, belongs, types)
    )
    if checkpoint is not None:
        encode(state, types)  # a state no checkpoint can hold is refused now, not after the first iteration's calls

    def progress(iteration: int, phase: str, score: float | None = None) -> None:
        if on_progress is not None:
            on_progress(FitProgress(iteration, iterations, phase, runner.statistics().calls, score))

    first: Any = None
    if not validation_set and 0 < state.iteration < iterations and state.history[-1].accepted is not None:
        # A resumed official-protocol run: the forward the last iteration would have handed on is not in the
        # checkpoint; make it again (free with a cache), outside the iteration records, which keep the counts
        # of an uninterrupted run.
        progress(state.iteration, "forward (resumed)")
        first = await runner.run(evaluate(graph, state.params, train_set, loss, options=forward_options))
        if guard.exceeded:
            return state.result(runner, guard.stopped)
    before = runner.statistics().calls_by_purpose
    if state.iteration == 0 and validation_set and state.initial_score is None:
        # The initial validation score and the first training forward are independent: run them together.
        progress(0, "scoring initial params")
        # (The programs are built in the calls: the run, not this frame, holds them, and lets go of
        # each sample's first state as it goes.)
        score = partial(evaluate, graph, params, validation_set, loss, options=forward_options)
        if iterations > 0:
            initial, first = await runner.run(
                gather(score(), evaluate(graph, params, train_set, loss, options=forward_options))
            )
        else:
            initial = await runner.run(score())
        if guard.exceeded:
            return state.result(runner, guard.stopped)
        state = attrs.evolve(state, initial_score=mean_score(initial), best_score=mean_score(initial))
    while state.iteration < iterations:
        i = state.iteration
        progress(i, "forward")
        if first is None:
            first = await runner.run(evaluate(graph, state.params, train_set, loss, options=forward_options))
        results = first
        first = None
        if guard.exceeded:
            return state.result(runner, guard.stopped)
        if not validation_set and state.initial_score is None:
            # The official protocol: the gate compares against the training score of the current params.
            score = mean_score(results)
            state = attrs.evolve(state, initial_score=score, best_score=score)
        step = Step(
            graph,
            i,
            train_set,
            tuple(t for t, _ in results),
            tuple(s for _, s in results),
            validation_set,
            loss,
            state.best_score,
            state.rejected,
            options=per_engine,
        )
        progress(i, "optimize", mean_score(results))
        step, opt_state = await runner.run(checked_update(optimizer, step, state.opt_state, state.params))
        if guard.exceeded:
            return state.result(runner, guard.stopped)
        if not validation_set:
            first = _reused_forward(step, results)
        calls = runner.statistics().calls_by_purpose
        spent = FrozenMap((k, v - before.get(k, 0)) for k, v in calls.items() if v - before.get(k, 0))
        state = state.advance(step, opt_state, mean_score(results), spent)
        before = calls
        if checkpoint is not None:
            state.save(checkpoint, types)
        progress(i + 1, "done", mean_score(results))
    return state.result(runner, None)


def _reused_forward(step: Step, results: Any) -> Any:
    """The next iteration's training forward when this one already made it (the official protocol):
    the candidate's, scored by the gate on the training items, when accepted; the current params'
    own when rejected (they stay). None when no gate scored the training items."""
    if step.accepted is False:
        return results
    return step.candidate_results if step.accepted else None


@attrs.frozen
class _RunState:
    graph: str
    iteration: int
    params: Params
    initial_params: Params
    opt_state: Any
    initial_score: float | None = None
    best_score: float | None = None
    best_params: Params | None = None
    rejected: FrozenMap[str, tuple[Any, ...]] = FrozenMap()
    history: tuple[IterationRecord, ...] = ()
    #: A digest of each part of the run the checkpoint belongs to (see `run_fingerprint`).
    belongs_to: FrozenMap[str, str] = FrozenMap()

    @classmethod
    def start(cls, graph: Graph, params: Params, optimizer: Transform, belongs: FrozenMap[str, str]) -> _RunState:
        return cls(graph.fingerprint, 0, params, params, optimizer.init(params), belongs_to=belongs)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        graph: Graph,
        params: Params,
        optimizer: Transform | None = None,
        belongs: FrozenMap[str, str] | None = None,
        types: Mapping[str, type] = FrozenMap(),
    ) -> _RunState:
        """The run state in a checkpoint, checked against the run about to continue (refused: `CheckpointError`)."""
        remove_stale_temporaries(path)  # a writer killed during its last write left one
        data = read_checkpoint(path, types)
        state = data.get("state")
        if set(data) != {"state"} or not isinstance(state, _RunState):
            raise CheckpointError(f"checkpoint {path} holds no run state; remove the file to start the run over")
        if state.graph != graph.fingerprint:
            raise CheckpointError(f"{path} was written for another graph (fingerprint {state.graph})")
        if state.initial_params != params:
            raise CheckpointError(f"{path} was written for a run that started from other params")
        if belongs is not None and not state.belongs_to:
            raise CheckpointError(
                f"{path} was written by an older semgrad and does not say which run it belongs to; "
                "start a new run with another checkpoint path (semgrad run: another --out)"
            )
        differ = differing_parts(state.belongs_to, belongs) if belongs is not None else ()
        if differ:
            raise CheckpointError(
                f"{path} belongs to another run: {', '.join(differ)} differ; "
                "resume with the same ones, or start a new run with another checkpoint path "
                "(semgrad run: another --out)"
            )
        problem = _inconsistency(state, optimizer.init(params) if optimizer is not None else state.opt_state)
        if problem:
            raise CheckpointError(f"checkpoint {path} is inconsistent: {problem}; remove the file to start over")
        return state

    def save(self, path: str | os.PathLike[str], types: Mapping[str, type] = FrozenMap()) -> None:
        write_checkpoint(path, {"state": self}, types)

    def advance(self, step: Step, opt_state: Any, train_score: float, calls: FrozenMap[str, int]) -> _RunState:
        updates = step.updates or FrozenMap()
        applied = bool(updates) and step.accepted is not False
        params = apply_updates(self.params, updates) if applied else self.params
        if step.accepted and step.candidate_score is not None:
            best_score: float | None = step.candidate_score
        else:  # params changed without a gate scoring them (no gate): their score is not known
            best_score = None if applied else self.best_score
        rejected = self.rejected
        if step.accepted is False:
            for name, value in updates.items():
                rejected = rejected.set(name, rejected.get(name, ()) + (value,))
        record = IterationRecord(
            step.iteration,
            train_score,
            step.candidate_score,
            step.accepted,
            updates,
            applied,
            _gradient_text(step),
            step.report,
            calls,
        )
        return attrs.evolve(
            self,
            iteration=self.iteration + 1,
            params=params,
            opt_state=opt_state,
            best_score=best_score,
            rejected=rejected,
            history=self.history + (record,),
        )

    def result(self, runner: Runner, stopped: str | None) -> FitResult:
        return FitResult(
            self.params,
            self.initial_params,
            self.initial_score,
            self.best_score,
            self.history,
            runner.statistics(),
            stopped,
        )


def fit_sync(
    graph: Graph,
    params: Params,
    optimizer: Transform,
    *,
    train: Iterable[Example | Mapping[str, Any]],
    llm: Any,
    validation: Iterable[Example | Mapping[str, Any]] = (),
    iterations: int = 4,
    loss: Loss | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    resume: str | os.PathLike[str] | None = None,
    budget: Budget | Mapping[str, int] | None = None,
    on_progress: Callable[[FitProgress], None] | None = None,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    on_reply: Callable[[LLMRequest, Any], None] | None = None,
    state_types: Iterable[type] = (),
    use_uvloop: bool | None = None,
) -> FitResult:
    """`fit` for scripts: runs it in a new event loop (`run_loop`: uvloop's when it is
    installed, unless `use_uvloop` is False). Its parameters are `fit`'s, spelled out
    so that a type checker checks a call's arguments."""
    run = partial(
        fit,
        graph,
        params,
        optimizer,
        train=train,
        llm=llm,
        validation=validation,
        iterations=iterations,
        loss=loss,
        checkpoint=checkpoint,
        resume=resume,
        budget=budget,
        on_progress=on_progress,
        max_concurrency=max_concurrency,
        timeout=timeout,
        options=options,
        on_reply=on_reply,
        state_types=state_types,
    )
    return run_loop(run, use_uvloop=use_uvloop)


def _examples(name: str, items: Any) -> tuple[Example, ...]:
    """`as_examples(items)`, its errors naming the argument they came in (``train`` or ``validation``)."""
    try:
        return as_examples(items)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


def _inconsistency(state: _RunState, fresh_opt_state: Any) -> str | None:
    """What is wrong with a decoded run state, or None (the checks a crafted or damaged file may fail)."""
    if state.iteration < 0:
        return f"iteration {state.iteration} is negative"
    if state.iteration != len(state.history):
        return f"iteration {state.iteration} does not match its {len(state.history)} recorded iterations"
    if tuple(r.iteration for r in state.history) != tuple(range(len(state.history))):
        return "its iterations are not numbered 0, 1, 2..."
    for name, ps in (("params", state.params), ("best params", state.best_params)):
        if ps is not None and set(ps) != set(state.initial_params):
            return f"its {name} name other parameters than its initial params"
    scores = [("initial score", state.initial_score), ("best score", state.best_score)]
    for r in state.history:
        scores += [(f"iteration {r.iteration}'s train score", r.train_score)]
        scores += [(f"iteration {r.iteration}'s validation score", r.validation_score)]
    for name, score in scores:
        if score is not None and not (type(score) in (int, float) and math.isfinite(score)):
            return f"its {name} is {score!r}, not a finite number"
    if not _same_shape(state.opt_state, fresh_opt_state):
        return "its optimizer state does not have the shape this optimizer's state has"
    return None


def _same_shape(saved: Any, fresh: Any) -> bool:
    """Whether `saved` has the structure of `fresh`: the same state classes, tuples of the same lengths.

    Within a state class, only the fields typed `Any` (an inner state, as `every_k`'s) are compared so:
    a field with a type was checked against it when the file was decoded, and may hold what its type
    allows -- a ``tuple[str, ...]`` of any length (a stage's growing history), None or a value.
    """
    if attrs.has(type(fresh)):
        return type(saved) is type(fresh) and all(
            _same_shape(getattr(saved, name), getattr(fresh, name)) for name in _untyped_fields(type(fresh))
        )
    if isinstance(fresh, tuple):
        return (
            isinstance(saved, tuple)
            and len(saved) == len(fresh)
            and all(_same_shape(a, b) for a, b in zip(saved, fresh, strict=True))
        )
    return True


def _untyped_fields(cls: type) -> list[str]:
    """The names of the init fields of the attrs class `cls` typed `Any` (or `object`)."""
    return [name for name, hint, _ in _field_types(cls).values() if hint is Any or hint is object]


#: The values of this module a checkpoint may hold (see `semgrad.effects._checkpoint`).
CHECKPOINT_TYPES = (_RunState, IterationRecord)
