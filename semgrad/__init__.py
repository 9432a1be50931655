"""semgrad: semantic backpropagation and semantic gradient descent for LLM-based agentic systems.

The pure core lives in `semgrad.core`, the async edge (runner, middleware,
training loop) in `semgrad.effects`, and LLM backends and fakes in
`semgrad.backends`.

Examples:
    >>> import semgrad
    >>> from semgrad.backends import fake
    >>> b = semgrad.GraphBuilder()
    >>> q = b.input("question")
    >>> _ = b.llm("answer", inputs=[q], instruction="Solve the problem.")
    >>> graph, params = b.build(output="answer")
    >>> trace = semgrad.run_sync(semgrad.forward(graph, params, {"question": "2+2?"}), fake.FunctionLLM(lambda r: "4"))
    >>> trace.output_value
    '4'
"""

from .core import (
    FrozenMap,
    Graph,
    GraphBuilder,
    GraphError,
    LLMError,
    LLMRequest,
    LLMResponse,
    Message,
    Params,
    Program,
    Trace,
    forward,
    gather,
    request_key,
)
from .effects import Runner, run, run_sync

__version__ = "0.1.0"

__all__ = [
    "FrozenMap",
    "Graph",
    "GraphBuilder",
    "GraphError",
    "LLMError",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "Params",
    "Program",
    "Runner",
    "Trace",
    "forward",
    "gather",
    "request_key",
    "run",
    "run_sync",
]
