"""The registry of run-state types: what a checkpoint may hold, each under a stable tag.

A checkpoint names the class of each value it holds by a *tag*. A tag is a stable
name given here (``"params"``, ``"gate-state"``, ``"fit-state"``), never the
module path of the class, so a class can move between modules without breaking
the checkpoints written before. A checkpoint is hostile input: decoding looks a
tag up in this table and builds only the class registered under it; a tag that
is not registered is refused, and nothing is ever imported because a file names it.

semgrad's own run-state types are registered here (the core's, whose modules may
not import effects) and in `semgrad.effects._fit_state` (the training loop's).
A stage of your own registers its state class once, with `register_state_type`,
or names it per run (``fit(..., state_types=[...])``).

Checkpoints written before the tags existed named classes by module path
(``semgrad.core._graph:Params``); those old tags are registered as aliases and
still read.

Theory of operation: two tables, both keyed by plain strings. ``_BY_TAG`` maps a
tag (or an old alias) to its class, and ``_TAG_OF`` maps each class to the one
tag `encode` writes for it. Registration fills both; decoding reads the first,
encoding the second. Nothing else is stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from ..core import FrozenMap, Parameter, Params
from ..core.optim import (
    BackwardState,
    CoproState,
    EmptyState,
    EveryKState,
    GateState,
    MomentumState,
    ParetoState,
    SelectState,
    StageReport,
    SwitchState,
)
from ..core.optim._pareto import Candidate, MergeState, ProposalRecord, SamplerState

__all__ = ["register_state_type", "registered_state_types", "state_type", "tag_of"]

#: What a tag looks like: no ':' (an old module-path tag has one), no spaces; ``my-project/limit-state``, say.
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*\Z")

_BY_TAG: dict[str, type] = {}
_TAG_OF: dict[type, str] = {}
#: The aliases among `_BY_TAG`'s keys (old tags, read and never written).
_ALIASES: set[str] = set()


def register_state_type(tag: str, cls: type, *, aliases: Iterable[str] = ()) -> type:
    """Let checkpoints hold instances of `cls`, written under `tag`.

    Registering the same class under the same tag again does nothing (a module
    imported twice); anything else that would make a tag or a class ambiguous is
    refused.

    Args:
        tag: The stable name checkpoints write for `cls`: letters, digits and
            ``_ . - /``, no ``:``. Keep it when the class moves or is renamed.
        cls: A frozen attrs class (the codec writes and checks attrs fields only).
        aliases: Older tags of the class, still read (never written): a tag it
            had before, or the ``module:QualName`` a run's ``state_types`` gave it.

    Returns:
        `cls` (so a class can be registered where it is defined).

    Raises:
        TypeError: `cls` is not an attrs class.
        ValueError: `tag` is not a tag, or it (or an alias) already names another
            class, or `cls` is already registered under another tag.

    Examples:
        >>> @attrs.frozen
        ... class LimitState:
        ...     calls: int = 0
        >>> register_state_type("docs/limit-state", LimitState) is LimitState
        True
        >>> state_type("docs/limit-state") is LimitState, tag_of(LimitState)
        (True, 'docs/limit-state')
    """
    if not (isinstance(cls, type) and attrs.has(cls)):
        raise TypeError(f"a run-state type is an attrs class (a frozen one, as run state is), got {cls!r}")
    if not (isinstance(tag, str) and _TAG.match(tag)):
        raise ValueError(f"a state-type tag is letters, digits and '_.-/' (no ':'), like 'my-stage/state'; got {tag!r}")
    old = tuple(aliases)
    if isinstance(aliases, str) or not all(isinstance(a, str) and a for a in old):
        raise TypeError(f"aliases must be a list of tags (strings), got {aliases!r}")
    if _TAG_OF.get(cls, tag) != tag:
        raise ValueError(f"{cls.__qualname__} is already registered as {_TAG_OF[cls]!r}; it cannot also be {tag!r}")
    for name in (tag, *old):
        if _BY_TAG.get(name, cls) is not cls:
            raise ValueError(f"the state-type tag {name!r} already names {_BY_TAG[name].__qualname__}")
    if old and tag in old:
        raise ValueError(f"{tag!r} is the tag of {cls.__qualname__}, not one of its aliases")
    _BY_TAG[tag] = cls
    _TAG_OF[cls] = tag
    for name in old:
        _BY_TAG[name] = cls
        _ALIASES.add(name)
    return cls


def registered_state_types() -> FrozenMap[str, type]:
    """The registered run-state types by tag (aliases left out), in the order they were registered.

    Examples:
        >>> registered_state_types()["params"]
        <class 'semgrad.core._graph.Params'>
    """
    return FrozenMap((tag, cls) for tag, cls in _BY_TAG.items() if tag not in _ALIASES)


def state_type(tag: str) -> type | None:
    """The class registered under `tag` or under it as an old alias; None when no class is.

    Examples:
        >>> state_type("params") is state_type("semgrad.core._graph:Params") is Params
        True
        >>> state_type("os:system") is None
        True
    """
    return _BY_TAG.get(tag)


def tag_of(cls: type) -> str | None:
    """The tag checkpoints write for `cls`, or None when it is not registered."""
    return _TAG_OF.get(cls)


def _builtin(tag: str, cls: type, module: str) -> None:
    """Register one of semgrad's own types, with the module-path tag checkpoints wrote for it before tags."""
    register_state_type(tag, cls, aliases=[f"{module}:{cls.__qualname__}"])


# The core's run-state types (each module's ``CHECKPOINT_TYPES``); the old tags name the modules they were in.
_builtin("parameter", Parameter, "semgrad.core._graph")
_builtin("params", Params, "semgrad.core._graph")
_builtin("empty-state", EmptyState, "semgrad.core.optim._base")
_builtin("stage-report", StageReport, "semgrad.core.optim._base")
_builtin("select-state", SelectState, "semgrad.core.optim._stages")
_builtin("gate-state", GateState, "semgrad.core.optim._stages")
_builtin("momentum-state", MomentumState, "semgrad.core.optim._stages")
_builtin("every-k-state", EveryKState, "semgrad.core.optim._combining")
_builtin("copro-state", CoproState, "semgrad.core.optim._copro")
# Types added after checkpoints carried tags: no old module-path tag to read.
register_state_type("backward-state", BackwardState)
register_state_type("switch-state", SwitchState)
register_state_type("pareto-state", ParetoState)
register_state_type("pareto-candidate", Candidate)
register_state_type("pareto-sampler-state", SamplerState)
register_state_type("pareto-merge-state", MergeState)
register_state_type("pareto-proposal-record", ProposalRecord)
