"""The pure, synchronous core: values, graphs, programs, forward and backward machines.

Nothing here performs I/O, reads a clock, or is async: anything that needs an LLM
returns a `Program` whose requests `semgrad.effects` answers.
"""

from . import numeric, optim, rules
from ._backward import BackwardMachine, BackwardPlan, backward, plan_backward
from ._errors import GraphError, InputError, ProtocolError, SemgradError
from ._example import Example, as_examples
from ._forward import ForwardMachine, check_inputs, forward
from ._frozen import FrozenMap, freeze
from ._gradients import BackwardFailure, Gradients, NodeFeedback, Partial, merge_gradients
from ._graph import Graph, GraphBuilder, Node, Parameter, Params, instruction_name
from ._parse import ParseError, parse_backward, parse_tagged
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
from ._prompts import render_forward
from ._requests import (
    ENGINES,
    PURPOSES,
    LLMError,
    LLMFailure,
    LLMRequest,
    LLMResponse,
    Message,
    Reply,
    SampleId,
    as_reply,
    request_key,
)
from ._sampling import OFFICIAL_OPTIONS, engine_options, sampling
from ._scoring import (
    Loss,
    Score,
    exact_match,
    extract_answer,
    llm_judge,
    normalize,
    normalized_match,
    numeric_match,
    parse_number,
)
from ._trace import NodeRun, Trace

__all__ = [
    "BackwardFailure",
    "BackwardMachine",
    "BackwardPlan",
    "Gradients",
    "NodeFeedback",
    "Partial",
    "backward",
    "merge_gradients",
    "plan_backward",
    "numeric",
    "optim",
    "rules",
    "ENGINES",
    "OFFICIAL_OPTIONS",
    "PURPOSES",
    "Bound",
    "Done",
    "Example",
    "ForwardMachine",
    "FrozenMap",
    "Gathered",
    "Graph",
    "GraphBuilder",
    "GraphError",
    "InputError",
    "LLMError",
    "LLMFailure",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "Node",
    "NodeRun",
    "Parameter",
    "Params",
    "ParseError",
    "Program",
    "ProtocolError",
    "Reply",
    "SampleId",
    "SemgradError",
    "Token",
    "Trace",
    "Loss",
    "Score",
    "exact_match",
    "extract_answer",
    "llm_judge",
    "normalize",
    "normalized_match",
    "numeric_match",
    "parse_number",
    "as_examples",
    "as_reply",
    "ask",
    "bind",
    "check_inputs",
    "combinator",
    "engine_options",
    "forward",
    "freeze",
    "gather",
    "instruction_name",
    "map_",
    "parse_backward",
    "parse_tagged",
    "program",
    "pure",
    "render_forward",
    "request_key",
    "sampling",
    "traverse",
]
