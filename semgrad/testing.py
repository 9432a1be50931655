"""Hypothesis strategies for semgrad users and its own tests (needs ``semgrad[testing]``).

* `graphs()`: random valid DAGs, valid by construction (inputs, free parameters,
  LLM nodes, function nodes, dead branches that do not reach the output);
* `inputs_for(graph)`: random values for a graph's input fields;
* `pure_llms()`: deterministic fake LLMs whose replies always parse;
* `flaky_llms(rate)`: pure fake LLMs that fail a seeded share of calls.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

try:
    from hypothesis import strategies as st
except ModuleNotFoundError as error:  # pragma: no cover - exercised in a subprocess that hides hypothesis
    if not (error.name or "").startswith("hypothesis"):
        raise
    raise ImportError(
        'semgrad.testing needs hypothesis, which is not installed; install the extra: pip install "semgrad[testing]"',
        name=__name__,
    ) from error

from .backends.fake import HashLLM
from .core import Graph, GraphBuilder, LLMError, LLMFailure, LLMRequest, Params, request_key

__all__ = ["FlakyLLM", "flaky_llms", "graphs", "inputs_for", "join_text", "pure_llms"]


def join_text(*values: Any) -> str:
    """The function node of generated graphs: join the inputs' text with `` | ``."""
    return " | ".join(str(v) for v in values)


@st.composite
def graphs(
    draw: st.DrawFn,
    *,
    max_inputs: int = 3,
    max_params: int = 2,
    max_computed: int = 8,
    functions: bool = True,
    shuffle: bool = True,
) -> tuple[Graph, Params]:
    """Random valid graphs ``(graph, params)``; the output is the last computed node.

    Every computed node reads a non-empty set of earlier nodes, so the graph is
    acyclic and every node is reachable from a source. Nodes are added to the
    builder in a shuffled order (when `shuffle`) to exercise topological sorting.
    """
    n_inputs = draw(st.integers(1, max_inputs))
    n_params = draw(st.integers(0, max_params))
    n_computed = draw(st.integers(1, max_computed))
    names = [f"in_{i}" for i in range(n_inputs)] + [f"p_{i}" for i in range(n_params)]
    specs: list[tuple[str, str, tuple[str, ...]]] = []
    for i in range(n_computed):
        kind = "function" if functions and draw(st.integers(0, 4)) == 0 else "llm"
        inputs = draw(st.lists(st.sampled_from(names), min_size=1, max_size=min(4, len(names)), unique=True))
        name = f"{'f' if kind == 'function' else 'n'}_{i}"
        specs.append((name, kind, tuple(inputs)))
        names.append(name)
    b = GraphBuilder()
    order = list(range(n_inputs + n_params + n_computed))
    if shuffle:
        order = draw(st.permutations(order))
    for index in order:
        if index < n_inputs:
            b.input(f"in_{index}")
        elif index < n_inputs + n_params:
            j = index - n_inputs
            b.param(f"p_{j}", f"initial value of p_{j}", trainable=draw(st.booleans()) or j == 0)
        else:
            name, kind, inputs = specs[index - n_inputs - n_params]
            if kind == "llm":
                b.llm(name, inputs=inputs, instruction=f"Instruction of {name}.")
            else:
                b.function(name, join_text, inputs=inputs)
    return b.build(output=specs[-1][0])


def inputs_for(graph: Graph, values: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Mapping[str, str]]:
    """Random values for each input field of `graph`."""
    values = values if values is not None else st.text(min_size=1, max_size=20)
    return st.fixed_dictionaries({name: values for name in graph.inputs})


def pure_llms() -> st.SearchStrategy[HashLLM]:
    """Deterministic fake LLMs (a `HashLLM` with a random salt); their replies always parse."""
    return st.builds(HashLLM, salt=st.text(max_size=8))


class FlakyLLM:
    """Wraps an LLM and fails a seeded share of calls with retryable errors.

    Whether a call fails is a pure function of the seed, the request's key and
    the call's attempt number for that request: how many calls with the same key
    failed in a row before it. A success ends the request, and the next call with
    its key is attempt 0 again. So retries can succeed, and a run is reproducible
    -- on a fresh instance, and on one already used, as long as each of the earlier
    runs' requests ended in a success (a request given up on after failures goes on
    counting its attempts).
    """

    is_async = False
    KINDS = ("timeout", "rate_limit", "server")

    def __init__(self, inner: Any, rate: float, *, seed: int = 0) -> None:
        self.inner, self.rate, self.seed = inner, rate, seed
        self._attempts: dict[str, int] = {}  # per request key: the failures in a row since its last success

    def __call__(self, request: LLMRequest) -> Any:
        key = request_key(request)
        attempt = self._attempts.get(key, 0)
        roll = int(hashlib.sha256(f"{self.seed}:{key}:{attempt}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        if roll < self.rate:
            self._attempts[key] = attempt + 1
            kind = self.KINDS[attempt % len(self.KINDS)]
            raise LLMFailure(LLMError(kind, f"injected {kind} failure", retryable=True))
        self._attempts.pop(key, None)
        return self.inner(request)


def flaky_llms(rate: float = 0.2) -> st.SearchStrategy[FlakyLLM]:
    """Pure fakes that fail about `rate` of calls with retryable errors."""
    return st.builds(lambda llm, seed: FlakyLLM(llm, rate, seed=seed), pure_llms(), st.integers(0, 2**16))
