"""Programs: the pure description of the LLM calls a computation makes (public namespace).

A `Program` asks for LLM replies and continues with them; `semgrad.effects`
answers the requests. Build one with `ask`, `pure`, `bind`, `map_`, `gather`,
`traverse` or the `@program` generator decorator; interpreters take a program
apart with `combinator` (a `Bound` bind or a `Gathered` gather). The forward and
backward machines are the programs `forward` and `backward` run. A system recorded per
sample is a `SystemRef`; `run_system` is its forward (one `SystemCall`, answered by the
effects layer with a `Trace` whose `RecordedGraph` holds the sample's graph and params).

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
from ._system import SystemCall, SystemRef, graph_of, merged_params, occurrences, run_system
from ._trace import RecordedGraph

__all__ = [
    "BackwardMachine",
    "BackwardPlan",
    "Bound",
    "Done",
    "ForwardMachine",
    "Gathered",
    "Program",
    "RecordedGraph",
    "SystemCall",
    "SystemRef",
    "Token",
    "ask",
    "bind",
    "combinator",
    "gather",
    "graph_of",
    "llm_call",
    "map_",
    "merged_params",
    "occurrences",
    "plan_backward",
    "program",
    "pure",
    "run_system",
    "traverse",
]
