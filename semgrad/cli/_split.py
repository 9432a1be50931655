"""The split a run trains and scores on, said in one line when it starts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["split_line"]


def split_line(tasks: Sequence[Any], protocol: str) -> str:
    """One line with the train, validation and test sizes (summed over several tasks) and what the protocol
    scores the gate on.

    Examples:
        >>> from types import SimpleNamespace as Ns
        >>> task = Ns(split=Ns(train=(1,) * 5, validation=(), test=(1,) * 11))
        >>> split_line([task], "official")
        'Split: train 5, validation 0, test 11 (official protocol: the gate scores on the training items)'
        >>> split_line([task, task], "heldout")
        'Split of 2 tasks: train 10, validation 0, test 22 (held-out protocol: the gate scores on the validation items)'
    """
    sizes = {part: sum(len(getattr(t.split, part)) for t in tasks) for part in ("train", "validation", "test")}
    where = "the training items" if protocol == "official" else "the validation items"
    name = "official" if protocol == "official" else "held-out"
    head = "Split" if len(tasks) == 1 else f"Split of {len(tasks)} tasks"
    counts = ", ".join(f"{part} {n:,}" for part, n in sizes.items())
    return f"{head}: {counts} ({name} protocol: the gate scores on {where})"
