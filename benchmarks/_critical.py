"""Critical-path limits: the longest chain of dependent LLM calls, in calls and in seconds.

What we compute, per sample (samples are independent, so a batch's limit is the
largest sample's):

* **forward**: an LLM node's call can start once every input has a value, so
  ``done(n) = max(done(i) for i in inputs(n)) + latency(forward request of n)``;
  inputs and free parameters are ready at 0, a plain-function node adds nothing.
  The trace exists once *every* node is done: ``forward_done = max(done)``.
* **backward** (only when asked): the machine starts once the sample's trace exists
  (the program is ``bind(forward, backward)``). The plan's stepping nodes
  (`semgrad.core.plan_backward`) each make one call (neighbour-aware rule; no
  repair is ever needed with `HashLLM`, whose replies always parse) and a node's
  step starts when every *stepping successor that targets it* has delivered:
  ``b(output) = forward_done + latency(backward request of output)``,
  ``b(n) = max(b(s) for stepping successors s with n in targets(s)) + latency(...)``.
  Aggregation (ordered concatenation) makes no call.

With a fixed latency L this is ``chain_calls × L``: 2 × L for the paper's graph
forward, (5 + 4) × L for 4 layers × 4 nodes plus a final node forward + backward.
With per-request latencies (`LatencyLLM(jitter=...)`) the latency of each request
comes from ``LatencyLLM.latency_for(request)``; the requests are known in advance
by running the same program once with `run_sync` and a `RecordingLLM(HashLLM())`
(HashLLM is deterministic, so the same replies produce the same requests).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from semgrad.core import Graph, LLMRequest, Params, plan_backward

__all__ = ["CriticalPath", "critical_path", "index_requests"]

RequestIndex = dict[tuple[str, str, Any], LLMRequest]


class CriticalPath:
    """The limit of one program: seconds, the longest chain in calls, and the slowest sample."""

    __slots__ = ("seconds", "chain_calls", "sample")

    def __init__(self, seconds: float, chain_calls: int, sample: Any) -> None:
        self.seconds = seconds
        self.chain_calls = chain_calls
        self.sample = sample

    def __repr__(self) -> str:
        return f"CriticalPath(seconds={self.seconds:.4f}, chain_calls={self.chain_calls}, sample={self.sample!r})"


def index_requests(requests: Iterable[LLMRequest]) -> RequestIndex:
    """Requests by ``(purpose, node, sample)``; raises if two share a slot (a repair, a draw)."""
    index: RequestIndex = {}
    for request in requests:
        slot = (request.purpose, request.node or "", request.sample)
        if slot in index:
            raise ValueError(f"two requests for {slot}; the critical-path model assumes one call per slot")
        index[slot] = request
    return index


def _sample_path(
    graph: Graph,
    params: Params,
    sample: Any,
    index: RequestIndex,
    latency: Callable[[LLMRequest], float],
    with_backward: bool,
) -> float:
    done: dict[str, float] = {}
    for name, node in graph.nodes.items():
        start = max((done[i] for i in node.inputs), default=0.0)
        if node.kind == "llm":
            start += latency(index[("forward", name, sample)])
        done[name] = start
    forward_done = max(done.values(), default=0.0)
    if not with_backward:
        return forward_done
    plan = plan_backward(graph, params)
    steps = set(plan.steps)
    finished: dict[str, float] = {}
    latest = forward_done
    for name in reversed(graph.topological_order):
        if name not in steps:
            continue
        feeders = [finished[s] for s in steps if s in finished and name in plan.targets[s]]
        start = forward_done if name == graph.output else max(feeders)
        if graph[name].kind == "llm":
            start += latency(index[("backward", name, sample)])
        finished[name] = start
        latest = max(latest, start)
    return latest


def critical_path(
    graph: Graph,
    params: Params,
    requests: Iterable[LLMRequest],
    latency: Callable[[LLMRequest], float],
    *,
    with_backward: bool = False,
) -> CriticalPath:
    """The longest chain of dependent calls over all samples of a recorded run.

    Args:
        graph, params: The system the program ran.
        requests: Every request of one run of the program (from a `RecordingLLM`).
        latency: Each request's latency in seconds (``LatencyLLM.latency_for``).
        with_backward: The program is ``bind(forward, backward)`` per sample.

    Examples:
        >>> from semgrad.backends.fake import HashLLM, RecordingLLM
        >>> from semgrad.core import forward, gather
        >>> from semgrad.effects import run_sync
        >>> from semgrad.topologies import paper_graph
        >>> graph, params = paper_graph()
        >>> rec = RecordingLLM(HashLLM())
        >>> _ = run_sync(gather(*(forward(graph, params, {"question": str(i)}, sample=i) for i in range(3))), rec)
        >>> path = critical_path(graph, params, rec.requests, lambda request: 0.5)
        >>> path.seconds, path.chain_calls
        (1.0, 2)
    """
    requests = tuple(requests)
    index = index_requests(requests)
    samples = list(dict.fromkeys(r.sample for r in requests))
    best = CriticalPath(0.0, 0, None)
    chain = 0
    for sample in samples:
        seconds = _sample_path(graph, params, sample, index, latency, with_backward)
        calls = round(_sample_path(graph, params, sample, index, lambda request: 1.0, with_backward))
        chain = max(chain, calls)
        if seconds > best.seconds or best.sample is None:
            best = CriticalPath(seconds, calls, sample)
    return CriticalPath(best.seconds, chain, best.sample)
