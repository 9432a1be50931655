"""The state of a `fit` run: what it has done so far, the one value its checkpoint holds.

`FitState` is frozen: each phase of the training loop (`semgrad.effects._fit`) takes
one and returns the next, and `FitState.advance` turns an iteration's `Step` into the
state after it. `FitState.save` writes it as a checkpoint; `FitState.load` reads one
back and refuses a file that belongs to another run or does not hold together.
Its types are registered under stable tags (see `semgrad.effects.register_state_type`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import attrs

from .._files import remove_stale_temporaries
from ..core import FrozenMap, Graph, Params
from ..core._prompts import render_examples
from ..core.optim import StageReport, Step, Transform, apply_updates
from ..core.programs import SystemRef
from ._checkpoint import CheckpointError, _field_types, read_checkpoint, write_checkpoint
from ._fingerprint import PARTS, differing_parts
from ._runner import RunStatistics
from ._state_types import register_state_type

__all__ = ["FitResult", "FitState", "IterationRecord"]


@attrs.frozen
class IterationRecord:
    """What one iteration did.

    Attributes:
        iteration: Its number, from 1 (as `FitProgress`, the CLI and the report number it).
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
class FitState:
    """Where a `fit` run stands: the params, the optimizer's state, the gate's scores, the history.

    Attributes:
        graph: The fingerprint of the graph the run optimises.
        iteration: Iterations completed.
        params, initial_params: The current params and those the run started from.
        opt_state: The optimizer's state.
        initial_score, best_score: The gate's score of the initial and of the current params.
        best_params: Unused (kept so that checkpoints holding it are read).
        rejected: The proposals the gate rejected, by parameter.
        history: One `IterationRecord` per completed iteration.
        belongs_to: A digest of each part of the run the checkpoint belongs to (see `run_fingerprint`).
    """

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
    belongs_to: FrozenMap[str, str] = FrozenMap()

    @classmethod
    def start(
        cls, graph: Graph | SystemRef, params: Params, optimizer: Transform, belongs: FrozenMap[str, str]
    ) -> FitState:
        """The state of a new run, before its first iteration."""
        return cls(
            graph=graph.fingerprint,
            iteration=0,
            params=params,
            initial_params=params,
            opt_state=optimizer.init(params),
            belongs_to=belongs,
        )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        graph: Graph | SystemRef,
        params: Params,
        optimizer: Transform | None = None,
        belongs: FrozenMap[str, str] | None = None,
        types: Mapping[str, type] = FrozenMap(),
        *,
        extends: bool = False,
    ) -> FitState:
        """The run state in a checkpoint, checked against the run about to continue (refused: `CheckpointError`).

        With `extends` (a system recorded per sample, whose run adds the parameters its code meets), the
        checkpoint's initial params may hold more than `params`, and must hold those as given.
        """
        remove_stale_temporaries(path)  # a writer killed during its last write left one
        data = read_checkpoint(path, types)
        state = data.get("state")
        if set(data) != {"state"} or not isinstance(state, FitState):
            raise CheckpointError(f"checkpoint {path} holds no run state; remove the file to start the run over")
        if state.graph != graph.fingerprint:
            raise CheckpointError(f"{path} was written for another graph (fingerprint {state.graph})")
        if (
            any(state.initial_params.get(name) != parameter for name, parameter in params.items())
            if extends
            else state.initial_params != params
        ):
            raise CheckpointError(f"{path} was written for a run that started from other params")
        if belongs is not None and not state.belongs_to:
            raise CheckpointError(
                f"{path} was written by an older semgrad and does not say which run it belongs to; "
                "start a new run with another checkpoint path (semgrad run: another --out)"
            )
        differ = differing_parts(state.belongs_to, belongs) if belongs is not None else ()
        if (
            PARTS["optimizer"] in differ
            and optimizer is not None
            and not _same_shape(state.opt_state, optimizer.init(params))
        ):
            raise CheckpointError(
                f"{path} was written by an optimizer whose state has another shape than this one's -- another "
                "optimizer, or this one as an older semgrad built it (an official-protocol run from before a "
                "redrawn sample's feedback was reused, say) -- so it cannot be resumed; start a new run with "
                "another checkpoint path (semgrad run: another --out)"
            )
        if differ:
            raise CheckpointError(
                f"{path} belongs to another run: {', '.join(differ)} differ; "
                "resume with the same ones, or start a new run with another checkpoint path "
                "(semgrad run: another --out)"
            )
        state = _numbered_from_one(state)
        problem = _inconsistency(state, optimizer.init(params) if optimizer is not None else state.opt_state)
        if problem:
            raise CheckpointError(f"checkpoint {path} is inconsistent: {problem}; remove the file to start over")
        return state

    def save(self, path: str | os.PathLike[str], types: Mapping[str, type] = FrozenMap()) -> None:
        """Write this state as the checkpoint at `path` (atomically)."""
        write_checkpoint(path, {"state": self}, types)

    def advance(self, step: Step, opt_state: Any, train_score: float, calls: FrozenMap[str, int]) -> FitState:
        """The state after the iteration `step` records: its updates applied unless the gate rejected them."""
        updates = step.updates or FrozenMap()
        applied = bool(updates) and step.accepted is not False
        if step.accepted and step.candidate_score is not None:
            best_score: float | None = step.candidate_score
        else:  # params changed without a gate scoring them (no gate): their score is not known
            best_score = None if applied else self.best_score
        rejected = self.rejected
        if step.accepted is False:
            for name, value in updates.items():
                rejected = rejected.set(name, rejected.get(name, ()) + (value,))
        record = IterationRecord(
            iteration=step.iteration + 1,  # the step counts the iterations before it
            train_score=train_score,
            validation_score=step.candidate_score,
            accepted=step.accepted,
            updates=updates,
            applied=applied,
            gradients=_gradient_text(step),
            report=step.report,
            calls=calls,
        )
        return attrs.evolve(
            self,
            iteration=self.iteration + 1,
            params=apply_updates(self.params, updates) if applied else self.params,
            opt_state=opt_state,
            best_score=best_score,
            rejected=rejected,
            history=(*self.history, record),
        )

    def result(self, statistics: RunStatistics, stopped: str | None) -> FitResult:
        """What `fit` returns when the run ends here (`stopped`: why it ended early, or None)."""
        return FitResult(
            params=self.params,
            initial_params=self.initial_params,
            initial_score=self.initial_score,
            best_score=self.best_score,
            history=self.history,
            statistics=statistics,
            stopped=stopped,
        )


def _gradient_text(step: Step) -> FrozenMap[str, str]:
    """What each parameter was rewritten from, as text: its examples, its feedback and its critique."""
    found = {}
    for name, g in (step.param_gradients or FrozenMap()).items():
        parts = [render_examples([(e.inputs, e.output, e.feedback) for e in g.examples])] if g.examples else []
        if g.feedback:
            parts.append(g.feedback)
        if name in step.critiques:
            parts.append(f"Critique: {step.critiques[name]}")
        found[name] = "\n\n".join(parts)
    return FrozenMap(found)


def _numbered_from_one(state: FitState) -> FitState:
    """`state` with its history numbered from 1: an older semgrad's checkpoint numbered it from 0."""
    if state.history and tuple(r.iteration for r in state.history) == tuple(range(len(state.history))):
        return attrs.evolve(state, history=tuple(attrs.evolve(r, iteration=r.iteration + 1) for r in state.history))
    return state


def _inconsistency(state: FitState, fresh_opt_state: Any) -> str | None:
    """What is wrong with a decoded run state, or None (the checks a crafted or damaged file may fail)."""
    if state.iteration < 0:
        return f"iteration {state.iteration} is negative"
    if state.iteration != len(state.history):
        return f"iteration {state.iteration} does not match its {len(state.history)} recorded iterations"
    if tuple(r.iteration for r in state.history) != tuple(range(1, len(state.history) + 1)):
        return "its iterations are not numbered 1, 2, 3..."
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


register_state_type("iteration-record", IterationRecord, aliases=["semgrad.effects._fit:IterationRecord"])
register_state_type("fit-state", FitState, aliases=["semgrad.effects._fit:_RunState"])
