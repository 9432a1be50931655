"""Programs: the pure description of the LLM calls a computation makes (public namespace).

A `Program` asks for LLM replies and continues with them; `semgrad.effects`
answers the requests. Build one with `ask`, `pure`, `bind`, `map_`, `gather`,
`traverse` or the `@program` generator decorator; interpreters take a program
apart with `combinator` (a `Bound` bind or a `Gathered` gather). The forward and
backward machines are the programs `forward` and `backward` run.

Examples:
    >>> from semgrad.core.programs import gather, pure
    >>> gather(pure(1), pure(2)).value
    (1, 2)
"""

from ._backward import BackwardMachine, BackwardPlan, plan_backward
from ._forward import ForwardMachine, llm_call
from ._program import (
    Bound,
    Done,
    Gathered,
    Program,
    Token,
    ask,
    bind,
    combinator,
    gather,
    map_,
    program,
    pure,
    traverse,
)

__all__ = [
    "BackwardMachine",
    "BackwardPlan",
    "Bound",
    "Done",
    "ForwardMachine",
    "Gathered",
    "Program",
    "Token",
    "ask",
    "bind",
    "combinator",
    "gather",
    "llm_call",
    "map_",
    "plan_backward",
    "program",
    "pure",
    "traverse",
]
