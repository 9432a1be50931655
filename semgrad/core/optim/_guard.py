"""An overfitting guard: refuse a new value that copies training data verbatim (gepa #261).

A stage of its own, put between the update stage and any gate (or none), as optax puts
``clip_by_global_norm`` before the optimizer: it only removes updates, so it composes with
`validation_gate` under either rule, with the baselines' gates and with no gate at all, and
a refused update costs the gate no forward call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import attrs

from .._example import Example
from .._frozen import FrozenMap
from .._graph import Params
from .._program import Program, pure
from ._base import EmptyState, Step, Transform, require

__all__ = ["MEMORIZED_WORDS", "Copied", "copied_run", "memorization_guard"]

#: The default length, in words, of a run of an item's text whose copy the guard refuses.
MEMORIZED_WORDS = 8

_WORD = re.compile(r"\w+")


def _words(text: str) -> tuple[str, ...]:
    """The words of `text`, case folded: punctuation, spacing and case are no way around the guard."""
    return tuple(_WORD.findall(text.casefold()))


def _runs(words: tuple[str, ...], n: int) -> Iterator[tuple[str, ...]]:
    return (words[i : i + n] for i in range(len(words) - n + 1))


@attrs.frozen
class Copied:
    """A run of a training item's words found in a parameter's new value.

    Attributes:
        param: The parameter whose new value holds the run.
        sample: The training item's id.
        field: Where in the item: ``"target"`` or ``"input <name>"``.
        words: The first run found, of the guard's length, as the value's words.
    """

    param: str
    sample: Any
    field: str
    words: tuple[str, ...]

    def describe(self) -> str:
        """One line for a report."""
        return (
            f"{self.param}: refused, it copies {len(self.words)} consecutive words of training item "
            f'{self.sample!r} ({self.field}): "{" ".join(self.words)}"'
        )


def _fields(example: Example) -> Iterator[tuple[str, str]]:
    for name, value in example.inputs.items():
        yield f"input {name}", str(value)
    if example.target is not None:
        yield "target", str(example.target)


def copied_run(param: str, new: Any, old: Any, items: tuple[Example, ...], min_words: int) -> Copied | None:
    """The first run of `min_words` words of an item of `items` (an input or its target) that the
    new value `new` holds and the old value `old` did not, or None.

    Examples:
        >>> item = Example({"question": "How many apples does Ann have after buying three more?"}, "5", id="q1")
        >>> copied_run("a.instruction", "Note: how many apples does Ann have after buying.", "", (item,), 8).field
        'input question'
        >>> copied_run("a.instruction", "Count how many apples there are.", "", (item,), 8) is None
        True
    """
    new_words = _words(str(new))
    if len(new_words) < min_words:
        return None
    fresh = dict.fromkeys(_runs(new_words, min_words))
    for run in _runs(_words(str(old)), min_words):
        fresh.pop(run, None)
    if not fresh:
        return None
    for example in items:
        for field, text in _fields(example):
            for run in _runs(_words(text), min_words):
                if run in fresh:
                    return Copied(param, example.id, field, run)
    return None


def memorization_guard(min_words: int = MEMORIZED_WORDS) -> Transform:
    """Refuse each update whose new value copies a training item verbatim beyond a few words.

    An update is refused when its new value holds a run of `min_words` consecutive words
    (compared case folded, punctuation and spacing ignored) of a training item's input or
    target that the parameter's current value did not hold already: a rewrite that pastes
    training data into an instruction fits those items and nothing else. The refused update
    is removed from ``step.updates`` and the stage report says which parameter, which item
    and which words; the other updates go on to the gate.

    Put it after the update stage, before any gate: ``chain(..., full_update(),
    memorization_guard(), validation_gate(rule="lcb"))``.

    Args:
        min_words: The shortest run of copied words refused (default 8; shorter shared
            phrases, "the answer is", are no copy).

    Raises:
        ValueError: When `min_words` is no whole number >= 1.
    """
    if not (type(min_words) is int and min_words >= 1):
        raise ValueError(f"memorization_guard needs a whole number min_words >= 1, got {min_words!r}")

    def update(step: Step, state: EmptyState, params: Params) -> Program[tuple[Step, EmptyState]]:
        if step.skipped and not step.updates:  # `every_k` or `apply_if` skipped the rewrite: nothing to check
            return pure((step.noted("memorization_guard", "nothing to check"), state))
        updates = require(step, "updates", "memorization_guard", "an update stage such as full_update()")
        found = [copied_run(name, value, params.value(name), step.train, min_words) for name, value in updates.items()]
        refused = [c for c in found if c is not None]
        kept = FrozenMap((name, value) for (name, value), c in zip(updates.items(), found, strict=True) if c is None)
        notes = [c.describe() for c in refused] or [f"no copy of {min_words} words or more in {len(updates)} update(s)"]
        return pure((attrs.evolve(step, updates=kept).noted("memorization_guard", *notes), state))

    return Transform(lambda params: EmptyState(), update, "memorization_guard")
