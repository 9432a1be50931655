"""The training loop: forward, score, optimize, apply or reject, repeat -- resumable.

`fit` is the only place where an optimization touches I/O: it runs programs with
a `Runner`, writes a JSON checkpoint after each iteration, and can resume from
one to the same result an uninterrupted run reaches (same seeds, deterministic
LLM), without repeating the calls of completed iterations.

Theory of operation. `fit` checks its arguments and builds a `_Run`: what stays
fixed for the call (the graph, the data, the optimizer, the loss, the sampling
options, the checkpoint path, and the runner whose LLM the budget's guard wraps).
What moves is one frozen `_Loop`: the run's `FitState` (what a checkpoint holds),
the training forward already made for the coming iteration (the official protocol
hands the gate's forward on), and the calls counted when the iteration began.
Each phase is a function from one `_Loop` to the next::

    _resumed_forward   a resumed official-protocol run makes its handed-on forward again
    _seed_gate         the held-out protocol scores the initial params on the validation set
    _train_forward     the iteration's training forward (made here, or handed on)
    _optimize          the optimizer's step, applied or rejected, recorded, checkpointed

Every program runs through `_Run.call`, the one place the budget is checked: when
the guard refused a call (or a middleware said stop) it raises `_Stopped`, and
`fit` returns what the last `_Loop` reached, with the reason.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, ParamSpec, TypeVar

import attrs

from ..core import Example, FrozenMap, Graph, LLMRequest, Loss, Params, Program, Score, Trace, as_examples, gather
from ..core._scoring import check_loss
from ..core.calls import engine_options
from ..core.optim import Step, Transform, evaluate, mean_score
from ..core.optim._combining import checked_update
from ..core.programs import SystemRef, merged_params
from ..core.scoring import normalized_match
from ._checkpoint import encode
from ._checkpoint import state_types as checkpoint_state_types
from ._fingerprint import run_fingerprint
from ._fit_budget import STOP_KINDS, Budget, BudgetGuard, as_budget
from ._fit_state import FitResult, FitState, IterationRecord
from ._loop import run_loop
from ._runner import Runner
from ._systems import as_trainable
from ._trace import FitSpans

__all__ = ["STOP_KINDS", "Budget", "FitProgress", "FitResult", "IterationRecord", "fit", "fit_sync"]

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")
#: A training forward: each item's trace and score, in item order.
Forward = tuple[tuple[Trace, Score], ...]
#: The name tests and older code know `FitState` by.
_RunState = FitState


@attrs.frozen
class FitProgress:
    """A progress event: the phase of an iteration and the calls made so far.

    Attributes:
        iteration: The iteration the phase belongs to, numbered from 1 as `IterationRecord.iteration`, the CLI
            and the report number it (``done`` ends iteration `iteration`); 0 for scoring the initial params
            before the first.
        iterations: The iterations in all.
        phase: ``scoring initial params``, ``forward``, ``forward (resumed)``, ``optimize`` or ``done``
            (``semgrad run`` adds ``evaluating``, after the last).
        calls: Calls made so far.
        score: The training score, when known (``optimize`` and ``done``).
    """

    iteration: int
    iterations: int
    phase: str
    calls: int
    score: float | None = None


class _Stopped(Exception):
    """The budget (or a stop further down the LLM's middleware) ended the run; `kind` says which."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@attrs.frozen(eq=False)
class _Run:
    """What stays fixed during one `fit` call."""

    graph: Graph | SystemRef
    optimizer: Transform
    train: tuple[Example, ...]
    validation: tuple[Example, ...]
    loss: Loss
    options: FrozenMap[str, FrozenMap[str, Any]]
    iterations: int
    runner: Runner
    guard: BudgetGuard
    checkpoint: str | os.PathLike[str] | None
    types: FrozenMap[str, type]
    on_progress: Callable[[FitProgress], None] | None
    spans: FitSpans | None = None

    async def call(self, program: Program[T]) -> T:
        """`program`'s value; `_Stopped` when the guard refused one of its calls or was told to stop."""
        running = self.runner.run(program)
        del program  # the run holds each sample's current state only (see `Runner.run`)
        value = await running
        if self.guard.exceeded:
            raise _Stopped(self.guard.stopped)
        return value

    def forward(self, params: Params, items: tuple[Example, ...]) -> Program[Forward]:
        """The program that forwards and scores `items` with `params`."""
        return evaluate(self.graph, params, items, self.loss, options=self.options["forward"])

    def calls(self) -> FrozenMap[str, int]:
        """The calls made so far, by purpose."""
        return self.runner.statistics().calls_by_purpose

    def progress(self, iteration: int, phase: str, score: float | None = None) -> None:
        """Tell `on_progress` (if any) that `phase` of `iteration` begins or ended."""
        if self.spans is not None:
            self.spans.phase(iteration, phase, score)
        if self.on_progress is not None:
            calls = self.runner.statistics().calls
            self.on_progress(FitProgress(iteration, self.iterations, phase, calls, score))


@attrs.frozen(eq=False)
class _Loop:
    """Where the loop stands: the run's state, the training forward made ahead, the calls at the iteration's start."""

    state: FitState
    forward: Forward | None = None
    calls_before: FrozenMap[str, int] = FrozenMap()


async def fit(
    graph: Graph | Any,
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
    tracer: Any = None,
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
        graph, params: The system and its starting values. `graph` is a `Graph`, or a system
            recorded per sample (``@semgrad.system``): each item's forward then runs and records
            it, and backward and the optimizer read each trace's own graph. A parameter the
            system's code meets that `params` does not hold joins the run's params (initial
            and current) the first time a forward meets it, with the starting value the code
            gives it.
        optimizer: A transform such as `optim.neighbor_sgd(k=2)`.
        train, validation: `Example`s or dicts ``{"inputs": {...}, "target": ...}``.
        llm: A sync or async LLM. A plain (sync) one is called inline on the event
            loop: one call at a time, blocking the loop, out of `timeout`'s reach
            (see `Runner`); for a blocking client, write it as ``async def`` around
            ``anyio.to_thread.run_sync``, or use an async client.
        iterations: How many iterations in all (a resumed run counts those done).
        loss: How to score a sample (see `semgrad.core.scoring.normalized_match`): a callable
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
            "max_tokens": 512}}`` (see `semgrad.core.calls.sampling`); every request of the run
            carries its engine's (a stage's own options win). None: the official
            values, temperature 0 and 1024 max tokens, for every engine; an engine left
            out of the mapping gets those too, and ``{}`` leaves it to the provider.
        on_reply: Called with each request and its reply as it arrives (see `Runner`);
            keep it cheap, it runs once per call.
        state_types: The attrs classes your own stages keep their state in, which a
            checkpoint may then hold (the built-in stages' are known). A checkpoint never
            names what is built from it: only these and semgrad's own run-state types are.
            With `checkpoint` or `resume`, a state of another type is refused before any call.
        tracer: An OpenTelemetry tracer (the ``otel`` extra): the run, each iteration and each phase become spans
            (``semgrad.fit``, ``semgrad.iteration``, ``semgrad.phase``), and the spans of an LLM wrapped in
            `traced` nest under their phase with ``semgrad.iteration`` set. None: no spans.

    Returns:
        A `FitResult`.
    """
    _check_arguments(llm, optimizer, loss)
    train_set, validation_set = _examples("train", train), _examples("validation", validation)
    _check_items(train_set, validation_set, loss, iterations)
    guard = BudgetGuard(llm, as_budget(budget))
    structure, systems = as_trainable(graph)
    run = _Run(
        graph=structure,
        optimizer=optimizer,
        train=train_set,
        validation=validation_set,
        loss=loss or normalized_match(),
        options=engine_options(options),
        iterations=iterations,
        runner=Runner(guard, max_concurrency=max_concurrency, timeout=timeout, on_reply=on_reply, systems=systems),
        guard=guard,
        checkpoint=checkpoint if checkpoint is not None else resume,
        types=checkpoint_state_types(state_types),
        on_progress=on_progress,
    )
    loop = await _first_loop(run, params, resume)
    if isinstance(loop, FitResult):
        return loop
    if tracer is None:
        return await _iterate(run, loop)
    with FitSpans(tracer, iterations, "held-out" if validation_set else "official") as spans:
        result = await _iterate(attrs.evolve(run, spans=spans), loop)
        spans.finished(result.stopped)
        return result


async def _iterate(run: _Run, loop: _Loop) -> FitResult:
    """The loop's phases from `loop` on, until the last iteration or a stop."""
    try:
        loop = await _resumed_forward(run, loop)
        loop = await _seed_gate(run, loop)
        while loop.state.iteration < run.iterations:
            loop = await _train_forward(run, loop)
            loop = await _optimize(run, loop)
    except _Stopped as stop:
        return loop.state.result(run.runner.statistics(), stop.kind)
    return loop.state.result(run.runner.statistics(), None)


def _check_arguments(llm: Any, optimizer: Any, loss: Loss | None) -> None:
    """Refuse, before any call, arguments that would fail later (or look like a weak model)."""
    if not callable(llm):  # a typo would otherwise fail every call, and look like a weak model
        raise TypeError(f"fit needs an LLM (a callable), got {type(llm).__name__}")
    if not isinstance(optimizer, Transform):  # checked before any call (it is first used after the forward)
        hint = " (a factory: call it to build the optimizer)" if callable(optimizer) else ""
        raise TypeError(
            f"fit needs an optimizer, a Transform such as optim.neighbor_sgd(k=2), got {type(optimizer).__name__}{hint}"
        )
    if loss is not None:
        check_loss(loss)


def _check_items(
    train: tuple[Example, ...], validation: tuple[Example, ...], loss: Loss | None, iterations: Any
) -> None:
    """Refuse an empty training set, an iteration count that is no whole number >= 0, and an item without a
    target when the default loss would compare one."""
    if not train:
        raise ValueError("fit needs at least one training example")
    if not (type(iterations) is int and iterations >= 0):
        raise ValueError(f"iterations must be >= 0 and a whole number, got {iterations!r}")
    if loss is None:  # the default loss compares each output with its item's target
        missing = next((e for e in (*train, *validation) if e.target is None), None)
        if missing is not None:
            raise ValueError(
                f"item {missing.id!r} has no target, which the default loss compares the output with "
                "(an output 'None' would count as right); give every item a target, or pass loss="
            )


def _examples(name: str, items: Any) -> tuple[Example, ...]:
    """`as_examples(items)`, its errors naming the argument they came in (``train`` or ``validation``)."""
    try:
        return as_examples(items)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


async def _first_loop(run: _Run, params: Params, resume: str | os.PathLike[str] | None) -> _Loop | FitResult:
    """Where the loop starts. A new run of a system recorded per sample first makes its first training
    forward, so that the parameters its code meets are known to the optimizer's ``init`` (the forward is
    handed on to the first iteration, which counts its calls); a budget that stops it ends the run there."""
    if resume is not None or not isinstance(run.graph, SystemRef) or run.iterations == 0:
        return _Loop(_first_state(run, params, resume))
    run.progress(1, "forward")
    try:
        first = await run.call(run.forward(params, run.train))
    except _Stopped as stop:
        return _first_state(run, params, None).result(run.runner.statistics(), stop.kind)
    found = merged_params(params, (trace for trace, _ in first))
    return _Loop(_first_state(run, params, None, found), forward=first)


def _first_state(
    run: _Run, params: Params, resume: str | os.PathLike[str] | None, found: Params | None = None
) -> FitState:
    """A new run's state (from `found`, the params a system's first forward extended `params` to, when
    given), or the one the checkpoint `resume` holds (checked to belong to this run). The run's
    fingerprint is of `params` as given, so a resumed system's run matches it."""
    belongs = run_fingerprint(run.graph, params, run.train, run.validation, run.optimizer, run.loss, run.options)
    if resume is None:
        state = FitState.start(run.graph, found if found is not None else params, run.optimizer, belongs)
    else:
        state = FitState.load(
            resume, run.graph, params, run.optimizer, belongs, run.types, extends=isinstance(run.graph, SystemRef)
        )
    if run.checkpoint is not None:
        encode(state, run.types)  # a state no checkpoint can hold is refused now, not after the first iteration's calls
    return state


async def _resumed_forward(run: _Run, loop: _Loop) -> _Loop:
    """A resumed official-protocol run makes again the forward its last iteration would have handed on.

    The checkpoint does not hold it (a cache answers it free); its calls are left out of
    the iteration records, which keep the counts of an uninterrupted run.
    """
    state = loop.state
    if not run.validation and 0 < state.iteration < run.iterations and state.history[-1].accepted is not None:
        run.progress(state.iteration + 1, "forward (resumed)")
        loop = attrs.evolve(loop, forward=await run.call(run.forward(state.params, run.train)))
    if state.iteration == 0 and loop.forward is not None:  # a system's first forward: iteration 1 counts it
        return loop
    return attrs.evolve(loop, calls_before=run.calls())


async def _seed_gate(run: _Run, loop: _Loop) -> _Loop:
    """The held-out protocol scores the initial params on the validation set once, to seed the gate,
    alongside the first training forward (the two are independent)."""
    state = loop.state
    if not (state.iteration == 0 and run.validation and state.initial_score is None):
        return loop
    run.progress(0, "scoring initial params")
    first: Forward | None = loop.forward
    if first is not None:  # a system's first training forward is made already
        initial = await run.call(run.forward(state.initial_params, run.validation))
    elif run.iterations > 0:
        initial, first = await run.call(
            gather(run.forward(state.initial_params, run.validation), run.forward(state.initial_params, run.train))
        )
    else:
        initial = await run.call(run.forward(state.initial_params, run.validation))
    score = mean_score(initial)
    state = _discovered(_discovered(state, initial), first or ())
    return attrs.evolve(loop, state=attrs.evolve(state, initial_score=score, best_score=score), forward=first)


async def _train_forward(run: _Run, loop: _Loop) -> _Loop:
    """The iteration's training forward: the one handed on, or made now. Under the official protocol the
    first one also seeds the gate with the training score of the current params."""
    state = loop.state
    run.progress(state.iteration + 1, "forward")
    forward = loop.forward
    if forward is None:
        forward = await run.call(run.forward(state.params, run.train))
    state = _discovered(state, forward)
    if not run.validation and state.initial_score is None:
        score = mean_score(forward)
        state = attrs.evolve(state, initial_score=score, best_score=score)
    return attrs.evolve(loop, state=state, forward=forward)


async def _optimize(run: _Run, loop: _Loop) -> _Loop:
    """One optimizer step on the training forward, applied unless the gate rejected it, recorded in the
    state's history and checkpointed; the next `_Loop` carries the forward it hands on."""
    state, forward = loop.state, loop.forward or ()
    score = mean_score(forward)
    step = Step(
        graph=run.graph,
        iteration=state.iteration,
        train=run.train,
        traces=tuple(t for t, _ in forward),
        scores=tuple(s for _, s in forward),
        validation=run.validation,
        loss=run.loss,
        best_score=state.best_score,
        previous_rejected=state.rejected,
        options=run.options,
    )
    run.progress(state.iteration + 1, "optimize", score)
    step, opt_state = await run.call(checked_update(run.optimizer, step, state.opt_state, state.params))
    calls = run.calls()
    state = state.advance(step, opt_state, score, _spent(loop.calls_before, calls))
    if run.checkpoint is not None:
        state.save(run.checkpoint, run.types)
    run.progress(state.iteration, "done", score)  # the state counts it done: its number
    return _Loop(state, None if run.validation else _reused_forward(step, forward), calls)


def _discovered(state: FitState, forward: Forward) -> FitState:
    """`state` with the parameters a system's recorded runs met first in `forward` added to its params
    (current, initial and best alike: their value is the starting one the system's code gave them)."""
    traces = [trace for trace, _ in forward]
    params = merged_params(state.params, traces)
    if params is state.params:
        return state
    best = state.best_params
    return attrs.evolve(
        state,
        params=params,
        initial_params=merged_params(state.initial_params, traces),
        best_params=None if best is None else merged_params(best, traces),
    )


def _spent(before: Mapping[str, int], now: Mapping[str, int]) -> FrozenMap[str, int]:
    """The calls made between two counts, by purpose (a purpose with none left out)."""
    return FrozenMap((k, v - before.get(k, 0)) for k, v in now.items() if v - before.get(k, 0))


def _reused_forward(step: Step, results: Forward) -> Forward | None:
    """The next iteration's training forward when this one already made it (the official protocol):
    the candidate's, scored by the gate on the training items, when accepted; the current params'
    own when rejected (they stay). None when no gate scored the training items."""
    if step.accepted is False:
        return results
    return step.candidate_results if step.accepted else None


def _in_its_own_loop(coroutine: Callable[P, Awaitable[R]]) -> Callable[[Callable[..., Any]], Callable[P, R]]:
    """Make the decorated function the form of `coroutine` for scripts: it takes `coroutine`'s parameters
    (for a type checker, from `coroutine` itself; for `inspect`, followed by the decorated function's own
    keyword-only ones, such as ``use_uvloop``) and runs it to completion in a new event loop (`run_loop`)."""

    def decorate(template: Callable[..., Any]) -> Callable[P, R]:
        own = [p for p in inspect.signature(template).parameters.values() if p.kind is p.KEYWORD_ONLY]
        names = tuple(p.name for p in own)

        @functools.wraps(template)
        def in_its_own_loop(*args: Any, **kwargs: Any) -> Any:
            choices = {name: kwargs.pop(name) for name in names if name in kwargs}
            return run_loop(functools.partial(coroutine, *args, **kwargs), **choices)

        shared = inspect.signature(coroutine)
        in_its_own_loop.__signature__ = shared.replace(parameters=[*shared.parameters.values(), *own])  # type: ignore[attr-defined]
        in_its_own_loop.__annotations__ = {**coroutine.__annotations__, **template.__annotations__}
        del in_its_own_loop.__wrapped__  # its signature is the one above, not the template's
        return in_its_own_loop

    return decorate


@_in_its_own_loop(fit)
def fit_sync(*, use_uvloop: bool | None = None) -> FitResult:
    """`fit` for scripts: runs it in a new event loop (`run_loop`: uvloop's when it is
    installed, unless `use_uvloop` is False). Its parameters are `fit`'s, taken from
    `fit` itself, so a type checker checks a call's arguments against them; `use_uvloop`
    is known to it at run time only (in checked code that must choose the loop, write
    ``run_loop(functools.partial(fit, ...), use_uvloop=False)``)."""
    raise NotImplementedError  # the body is `_in_its_own_loop`'s
