"""Prompt rendering: pure functions from domain values to `LLMRequest`s.

All wording is ours. Templates are module constants so they can be read in one
place and golden-tested; renderers only fill them in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._requests import LLMRequest, Message, SampleId

__all__ = ["Shown", "format_inputs", "render_forward"]

#: One input as a prompt shows it: ``(name, role, value)``.
Shown = tuple[str, str, Any]

FORWARD_SYSTEM = (
    "You are one component of a larger system. Carry out your instruction using the inputs "
    "you are given, and reply with your result only.\n\n"
    "Instruction:\n{instruction}"
)
FORWARD_USER = "{inputs}"
NO_INPUTS = "(This component has no inputs.)"


def format_inputs(shown: Sequence[Shown]) -> str:
    """Number and label each input: ``[i] name (role):`` then its value.

    Examples:
        >>> print(format_inputs([("question", "the question", "2+2?")]))
        [1] question (the question):
        2+2?
    """
    if not shown:
        return NO_INPUTS
    return "\n\n".join(f"[{i}] {name} ({role}):\n{value}" for i, (name, role, value) in enumerate(shown, 1))


def render_forward(
    node: str,
    instruction: str,
    shown: Sequence[Shown],
    *,
    sample: SampleId = None,
    engine: str = "forward",
    options: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """The forward request of an LLM node: its instruction and its inputs.

    Examples:
        >>> r = render_forward("answer", "Solve the problem.", [("question", "the question", "2+2?")])
        >>> print(r.system)
        You are one component of a larger system. Carry out your instruction using the inputs you are given, and reply with your result only.
        <BLANKLINE>
        Instruction:
        Solve the problem.
        >>> r.purpose, r.node
        ('forward', 'answer')
    """
    return LLMRequest(
        (
            Message("system", FORWARD_SYSTEM.format(instruction=instruction)),
            Message("user", FORWARD_USER.format(inputs=format_inputs(shown))),
        ),
        engine=engine,
        purpose="forward",
        node=node,
        sample=sample,
        options=options or {},
    )
