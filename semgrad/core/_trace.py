"""Traces: the record of one forward pass over one sample."""

from __future__ import annotations

from typing import Any

import attrs

from ._frozen import FrozenMap, slot_setters, to_frozen_map
from ._requests import LLMError, LLMRequest, SampleId, request_key

__all__ = ["NodeRun", "RecordedGraph", "Trace"]


@attrs.frozen
class NodeRun:
    """What one node did in one forward pass.

    Attributes:
        node: The node's name.
        kind: The node's kind ("input", "param", "llm", "function", "tool").
        inputs: ``(name, value)`` for each input the node was shown, in order.
        value: The parsed value (None when the node failed).
        request: The LLM request, for LLM nodes (`request_key` is its key).
        raw: The LLM's raw reply text, for LLM nodes that got one.
        error: Why the node has no value, when it failed (an `LLMError` for a
            failed call, text for a failed function, tool or input; a tool's
            text holds the message of what it raised).
    """

    node: str
    kind: str
    inputs: tuple[tuple[str, Any], ...] = ()
    value: Any = None
    request: LLMRequest | None = attrs.field(default=None, repr=False)
    raw: str | None = None
    error: LLMError | str | None = None

    @property
    def ok(self) -> bool:
        """True when the node produced a value."""
        return self.error is None

    @property
    def request_key(self) -> str | None:
        """The `request_key` of the node's LLM request (None for other nodes)."""
        return None if self.request is None else request_key(self.request)


_N_NODE, _N_KIND, _N_INPUTS, _N_VALUE, _N_REQUEST, _N_RAW, _N_ERROR = slot_setters(
    NodeRun, "node", "kind", "inputs", "value", "request", "raw", "error"
)


def _node_run(
    node: str,
    kind: str,
    inputs: tuple[tuple[str, Any], ...],
    value: Any,
    request: LLMRequest | None,
    raw: str | None,
    error: LLMError | str | None,
) -> NodeRun:
    """`NodeRun(...)` with every field given, for the forward machine's hot path."""
    run = object.__new__(NodeRun)
    _N_NODE(run, node)
    _N_KIND(run, kind)
    _N_INPUTS(run, inputs)
    _N_VALUE(run, value)
    _N_REQUEST(run, request)
    _N_RAW(run, raw)
    _N_ERROR(run, error)
    return run


@attrs.frozen
class RecordedGraph:
    """The graph one sample's run of a system recorded, and the params it ran with.

    A system written as Python has a graph per sample; its trace carries this, and
    backward and the optimizer stages read the sample's graph and params from it.
    """

    graph: Any = attrs.field(repr=False)
    params: Any = attrs.field(repr=False)


@attrs.frozen
class Trace:
    """Every node's run for one sample, in topological order.

    Attributes:
        sample: The dataset item this trace is for.
        graph: The fingerprint of the graph that produced it.
        output: The name of the output node.
        runs: `NodeRun` per node name, in topological order.
        params: The digest of the params that produced it (`Params.digest`; None for a
            trace built by hand), which `backward` checks. Not compared, hashed or shown.
        recording: For a system recorded per sample, the sample's graph and the params it
            ran with (None for a static graph's trace). Not compared, hashed or shown.
    """

    sample: SampleId
    graph: str
    output: str
    runs: FrozenMap[str, NodeRun] = attrs.field(converter=to_frozen_map)
    params: str | None = attrs.field(default=None, kw_only=True, eq=False, repr=False)
    recording: RecordedGraph | None = attrs.field(default=None, kw_only=True, eq=False, repr=False)

    def __getitem__(self, node: str) -> NodeRun:
        """`node`'s run; a `KeyError` naming the trace's nodes when it has none."""
        try:
            return self.runs[node]
        except KeyError:
            raise KeyError(f"no node named {node!r} in this trace; its nodes: {', '.join(self.runs)}") from None

    def value(self, node: str) -> Any:
        """The value `node` produced (None if it failed); a `KeyError` naming the trace's nodes when it has none."""
        return self[node].value

    @property
    def output_value(self) -> Any:
        """The output node's value (None if it failed)."""
        return self.runs[self.output].value

    @property
    def ok(self) -> bool:
        """True when every node produced a value."""
        return all(run.ok for run in self.runs.values())

    @property
    def errors(self) -> tuple[tuple[str, LLMError | str], ...]:
        """``(node, error)`` for each node that failed, in order."""
        return tuple((name, run.error) for name, run in self.runs.items() if run.error is not None)
