"""semgrad: semantic backpropagation and semantic gradient descent for LLM-based agentic systems.

The pure core lives in `semgrad.core`, the async edge (runner, middleware,
training loop) in `semgrad.effects`, and LLM backends and fakes in
`semgrad.backends`. The names here are the ones DESIGN section 3 shows.

Examples:
    >>> import semgrad
    >>> b = semgrad.GraphBuilder()
    >>> q = b.input("question")
    >>> _ = b.llm("answer", inputs=[q], instruction="Solve the problem.")
    >>> graph, params = b.build(output="answer")
    >>> llm = semgrad.fake.FunctionLLM(lambda request: "4")
    >>> semgrad.run_sync(semgrad.forward(graph, params, {"question": "2+2?"}), llm).output_value
    '4'
"""

from . import backends, core, effects
from .backends import fake, openai_compatible
from .core import GraphBuilder, backward, forward, optim, rules
from .core._deprecated import moved_names
from .effects import cached, fit, limited, retrying, run, run_sync, system

__version__ = "0.1.0"

__all__ = [
    "GraphBuilder",
    "backends",
    "backward",
    "cached",
    "core",
    "effects",
    "fake",
    "fit",
    "forward",
    "limited",
    "openai_compatible",
    "optim",
    "retrying",
    "rules",
    "run",
    "run_sync",
    "system",
]

#: Names this package exported before it kept to DESIGN section 3: each still resolves, with a warning.
_MOVED = {
    **{
        name: (f"semgrad.core.{name}", getattr(core, name))
        for name in (
            "FrozenMap",
            "Graph",
            "GraphError",
            "LLMError",
            "LLMRequest",
            "LLMResponse",
            "Message",
            "Params",
            "Program",
            "Trace",
            "gather",
            "request_key",
        )
    },
    "Runner": ("semgrad.effects.Runner", effects.Runner),
}

__getattr__ = moved_names(__name__, _MOVED)
del moved_names
