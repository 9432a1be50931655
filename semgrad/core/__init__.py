"""The pure, synchronous core: values, graphs, programs, forward and backward machines.

Nothing here performs I/O, reads a clock, or is async: anything that needs an LLM
returns a `Program` whose requests `semgrad.effects` answers.

The names here are the ones a user of the method needs: build a graph, run
`forward` and `backward`, read gradients, choose `rules` and `optim`. The rest
lives in namespaces that say what they hold: `programs` (the program algebra
and the machines), `calls` (requests, replies, sampling), `scoring` (losses and
metrics), `prompts` (prompt rendering and reply parsing) and `autodiff` (the
numeric special case). Names that used to live here still resolve, with a
`DeprecationWarning`, for one release.

Examples:
    >>> from semgrad.core import GraphBuilder
    >>> b = GraphBuilder()
    >>> _ = b.llm("answer", inputs=[b.input("question")], instruction="Solve the problem.")
    >>> graph, params = b.build(output="answer")
    >>> params.texts()["answer.instruction"]
    'Solve the problem.'
"""

from . import autodiff, calls, optim, programs, prompts, rules, scoring
from ._backward import backward
from ._deprecated import moved_names
from ._errors import GraphError, InputError, ProtocolError, SemgradError
from ._example import Example, as_examples
from ._forward import check_inputs, forward
from ._frozen import FrozenMap, freeze
from ._gradients import BackwardFailure, Gradients, NodeFeedback, Partial, merge_gradients
from ._graph import Graph, GraphBuilder, Node, Parameter, Params, instruction_name
from ._parse import ParseError
from ._program import Program, gather
from ._requests import LLMError, LLMFailure, LLMRequest, LLMResponse, Message, Reply, SampleId, request_key
from ._scoring import Loss, Score
from ._trace import NodeRun, Trace

__all__ = [
    "BackwardFailure",
    "Example",
    "FrozenMap",
    "Gradients",
    "Graph",
    "GraphBuilder",
    "GraphError",
    "InputError",
    "LLMError",
    "LLMFailure",
    "LLMRequest",
    "LLMResponse",
    "Loss",
    "Message",
    "Node",
    "NodeFeedback",
    "NodeRun",
    "Parameter",
    "Params",
    "ParseError",
    "Partial",
    "Program",
    "ProtocolError",
    "Reply",
    "SampleId",
    "Score",
    "SemgradError",
    "Trace",
    "as_examples",
    "autodiff",
    "backward",
    "calls",
    "check_inputs",
    "forward",
    "freeze",
    "gather",
    "instruction_name",
    "merge_gradients",
    "optim",
    "programs",
    "prompts",
    "request_key",
    "rules",
    "scoring",
]

#: Where each name that moved out of `semgrad.core` lives now.
_MOVED = {
    name: (f"semgrad.core.{space.__name__.rsplit('.', 1)[1]}.{name}", getattr(space, name))
    for space, names in (
        (
            programs,
            (
                "BackwardMachine",
                "BackwardPlan",
                "Bound",
                "Done",
                "ForwardMachine",
                "Gathered",
                "Token",
                "ask",
                "bind",
                "combinator",
                "map_",
                "plan_backward",
                "program",
                "pure",
                "traverse",
            ),
        ),
        (calls, ("ENGINES", "OFFICIAL_OPTIONS", "PURPOSES", "as_reply", "engine_options", "sampling")),
        (
            scoring,
            (
                "exact_match",
                "extract_answer",
                "llm_judge",
                "normalize",
                "normalized_match",
                "numeric_match",
                "parse_number",
            ),
        ),
        (prompts, ("parse_backward", "parse_tagged", "render_forward")),
    )
    for name in names
}
_MOVED["numeric"] = ("semgrad.core.autodiff", autodiff)

__getattr__ = moved_names(__name__, _MOVED)
del moved_names
