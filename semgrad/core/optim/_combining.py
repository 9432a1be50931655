"""Combinators: chain stages, name them, mask parameters, run conditionally or every k steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from .._errors import ProtocolError
from .._frozen import FrozenMap
from .._graph import Parameter, Params
from .._program import Program, bind, map_, pure
from ._base import Step, Transform

__all__ = ["apply_if", "chain", "every_k", "masked", "named_chain"]


def _run_all(
    transforms: Sequence[Transform], step: Step, states: Sequence[Any], params: Params
) -> Program[tuple[Step, tuple[Any, ...]]]:
    def go(index: int, step: Step, done: tuple[Any, ...]) -> Program[tuple[Step, tuple[Any, ...]]]:
        if index == len(transforms):
            return pure((step, done))
        return bind(
            checked_update(transforms[index], step, states[index], params),
            lambda r: go(index + 1, r[0], done + (r[1],)),
        )

    return go(0, step, ())


def checked_update(t: Transform, step: Step, state: Any, params: Params) -> Program[tuple[Step, Any]]:
    """``t.update(step, state, params)``, refused with a `ProtocolError` naming `t` when it is not a
    program of a ``(step, state)`` pair (a stage of one's own that returns the step itself, say)."""
    updated = t.update(step, state, params)
    if not isinstance(updated, Program):
        raise ProtocolError(f"{_stage(t)} returned a {type(updated).__name__}, {_CONTRACT}")

    def pair(result: Any) -> tuple[Step, Any]:
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], Step)):
            raise ProtocolError(f"{_stage(t)} yielded a {type(result).__name__}, {_CONTRACT}")
        return result

    return map_(updated, pair)


_CONTRACT = "not a program of (step, state): end it with pure((new_step, state))"


def _stage(t: Transform) -> str:
    return f"the update of stage {t.name!r}" if t.name else "a stage's update"


def _transform(t: Any, combinator: str) -> Transform:
    """`t`, once checked that it is a `Transform` (a factory left uncalled fails here, not in the run)."""
    if not isinstance(t, Transform):
        hint = " (a factory: call it to build the transform)" if callable(t) else ""
        raise TypeError(f"{combinator} takes transforms, got {type(t).__name__}{hint}")
    return t


def chain(*transforms: Transform) -> Transform:
    """Apply transforms in order; the state is the tuple of their states.

    Examples:
        >>> from semgrad.core.optim import identity
        >>> chain(identity(), identity()).name
        'chain(identity, identity)'
    """
    for t in transforms:
        _transform(t, "chain")
    return Transform(
        lambda params: tuple(t.init(params) for t in transforms),
        lambda step, state, params: _run_all(transforms, step, state, params),
        f"chain({', '.join(t.name for t in transforms)})",
    )


def named_chain(*pairs: tuple[str, Transform]) -> Transform:
    """Like `chain`, with named stages; the state is a `FrozenMap` by name.

    Examples:
        >>> from semgrad.core.optim import identity
        >>> named_chain(("first", identity()), ("second", identity())).name
        'named_chain(first, second)'
    """
    for pair in pairs:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], str)):
            raise TypeError(f"named_chain takes (name, transform) pairs, got {pair!r}")
        _transform(pair[1], "named_chain")
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError(f"named_chain: duplicate stage names in {names}")
    transforms = [t for _, t in pairs]

    def update(step: Step, state: FrozenMap[str, Any], params: Params) -> Program[tuple[Step, FrozenMap[str, Any]]]:
        return map_(
            _run_all(transforms, step, [state[n] for n in names], params), lambda r: (r[0], FrozenMap(zip(names, r[1])))
        )

    return Transform(
        lambda params: FrozenMap((n, t.init(params)) for n, t in pairs), update, f"named_chain({', '.join(names)})"
    )


def masked(inner: Transform, mask: Callable[[Parameter], bool] | Sequence[str]) -> Transform:
    """Run `inner` on the parameters `mask` selects only; the others are never updated.

    Args:
        inner: The transform to restrict.
        mask: A predicate on `Parameter`, or the names of the parameters to optimize.

    Raises:
        ValueError: From ``init(params)``, when a name in `mask` is not a trainable
            parameter of `params` (such as ``"answer"`` for ``"answer.instruction"``).
    """
    _transform(inner, "masked")
    if isinstance(mask, str):
        raise TypeError("masked: pass a sequence of parameter names, not a single string")
    wanted = None if callable(mask) else tuple(mask)
    predicate = mask if callable(mask) else (lambda p, names=frozenset(wanted or ()): p.name in names)

    def init(params: Params) -> Any:
        if wanted is not None:  # checked once per run, before any call: a wrong name would train nothing
            trainable = params.trainable()
            unknown = [n for n in wanted if n not in trainable]
            if unknown:
                raise ValueError(f"no trainable parameter {unknown[0]!r}; choose from: {', '.join(trainable)}")
        return inner.init(params)

    def update(step: Step, state: Any, params: Params) -> Program[tuple[Step, Any]]:
        allowed = tuple(name for name in step.trainable(params) if predicate(params[name]))
        outer = step.active

        def restore(result: tuple[Step, Any]) -> tuple[Step, Any]:
            new, inner_state = result
            keep = lambda m: None if m is None else FrozenMap((k, v) for k, v in m.items() if k in allowed)  # noqa: E731
            return attrs.evolve(
                new, active=outer, updates=keep(new.updates), proposals=keep(new.proposals)
            ), inner_state

        return map_(inner.update(attrs.evolve(step, active=allowed), state, params), restore)

    return Transform(init, update, f"masked({inner.name})")


def apply_if(predicate: Callable[[Step], bool], inner: Transform) -> Transform:
    """Run `inner` only on steps for which `predicate(step)` is true (the others are marked ``skipped``)."""
    _transform(inner, "apply_if")

    def update(step: Step, state: Any, params: Params) -> Program[tuple[Step, Any]]:
        if predicate(step):
            return inner.update(step, state, params)
        return pure((attrs.evolve(step, skipped=True).noted(f"apply_if({inner.name})", "skipped"), state))

    return Transform(inner.init, update, f"apply_if({inner.name})")


@attrs.frozen
class EveryKState:
    """Steps seen so far, and the inner state."""

    count: int
    inner: Any


def every_k(inner: Transform, k: int) -> Transform:
    """Run `inner` on every k-th step only (the 1st, k+1-th, ... are skipped until the k-th; marked ``skipped``)."""
    _transform(inner, "every_k")
    if not (type(k) is int and k >= 1):
        raise ValueError(f"every_k needs a whole number k >= 1, got {k!r}")

    def update(step: Step, state: EveryKState, params: Params) -> Program[tuple[Step, EveryKState]]:
        count = state.count + 1
        if count % k:
            skipped = attrs.evolve(step, skipped=True).noted(f"every_k({inner.name})", f"skipped ({count % k}/{k})")
            return pure((skipped, EveryKState(count, state.inner)))
        return map_(inner.update(step, state.inner, params), lambda r: (r[0], EveryKState(count, r[1])))

    return Transform(lambda params: EveryKState(0, inner.init(params)), update, f"every_k({inner.name}, {k})")


#: The values of this module a checkpoint may hold (see `semgrad.effects._checkpoint`).
CHECKPOINT_TYPES = (EveryKState,)
