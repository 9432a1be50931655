"""Critical-path limits: the longest chain of dependent LLM calls, in calls and in seconds.

What we compute, per sample (samples are independent, so a batch's limit is the
largest sample's):

* **forward**: an LLM node's call can start once every input has a value, so
  ``done(n) = max(done(i) for i in inputs(n)) + latency(forward request of n)``;
  inputs and free parameters are ready at 0, a plain-function node adds nothing.
  The trace exists once *every* node is done: ``forward_done = max(done)``.
* **backward** (only when asked): the machine starts once the sample's trace exists
  (the program is ``bind(forward, backward)``). The plan's stepping nodes
  (`semgrad.core.programs.plan_backward`) each make one call (neighbour-aware rule; no
  repair is ever needed: the benchmarks' fakes always reply in the expected format) and a node's
  step starts when every *stepping successor that targets it* has delivered:
  ``b(output) = forward_done + latency(backward request of output)``,
  ``b(n) = max(b(s) for stepping successors s with n in targets(s)) + latency(...)``.
  Aggregation (ordered concatenation) makes no call.

With a fixed latency L this is ``chain_calls × L``: 2 × L for the paper's graph
forward, (5 + 4) × L for 4 layers × 4 nodes plus a final node forward + backward.
With per-request latencies (`LatencyLLM(jitter=...)`) the latency of each request
comes from ``LatencyLLM.latency_for(request)``; the requests are known in advance
by running the same program once with `run_sync` and a `RecordingLLM` of the same
deterministic fake (the same replies produce the same requests).

`sample_calls` (`request_calls` for a whole run) builds this dependency structure,
call by call, in one place: `critical_path` takes its longest path, and
`benchmarks._floor` runs it as a minimal anyio program (the event loop's floor).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from semgrad.core import Graph, LLMRequest, Params
from semgrad.core.programs import BackwardPlan, plan_backward

__all__ = ["Call", "CriticalPath", "critical_path", "index_requests", "request_calls", "sample_calls"]

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


class Call(NamedTuple):
    """One LLM request of a recorded run and the calls it waits for (indices into the same list)."""

    request: LLMRequest
    after: tuple[int, ...]


def _union(groups: Iterable[tuple[int, ...]]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(itertools.chain.from_iterable(groups)))


def sample_calls(
    graph: Graph,
    params: Params,
    sample: Any,
    index: RequestIndex,
    *,
    with_backward: bool,
    plan: BackwardPlan | None = None,
    offset: int = 0,
) -> list[Call]:
    """The calls of one sample in dependency order, each with the calls it waits for.

    This is the dependency model of the module docstring, in one place: a forward
    call waits for the calls that produce its node's inputs (through plain-function
    nodes, which cost nothing); the output's backward call waits for the sample's
    whole forward (its last calls); another stepping node's backward call waits for
    the backward calls of every stepping successor that targets it. Indices start
    at `offset` (to put several samples in one list).
    """
    calls: list[Call] = []

    def add(request: LLMRequest, after: tuple[int, ...]) -> tuple[int, ...]:
        calls.append(Call(request, after))
        return (offset + len(calls) - 1,)

    ready: dict[str, tuple[int, ...]] = {}  # node -> the calls whose end gives it a value
    for name, node in graph.nodes.items():
        after = _union(ready[i] for i in node.inputs)
        ready[name] = add(index[("forward", name, sample)], after) if node.kind == "llm" else after
    if not with_backward:
        return calls
    # The trace exists when every forward call is done: when the ones nobody waits for are.
    waited = {i for call in calls for i in call.after}
    trace = tuple(i for i in range(offset, offset + len(calls)) if i not in waited)
    plan = plan_backward(graph, params) if plan is None else plan
    steps = set(plan.steps)
    delivered: dict[str, tuple[int, ...]] = {}  # stepping node -> the calls whose end delivers its step
    for name in reversed(graph.topological_order):
        if name not in steps:
            continue
        if name == graph.output:
            after = trace
        else:
            feeders = [delivered[s] for s in steps if s in delivered and name in plan.targets[s]]
            if not feeders:
                raise ValueError(f"stepping node {name!r} has no stepping successor targeting it")
            after = _union(feeders)
        delivered[name] = add(index[("backward", name, sample)], after) if graph[name].kind == "llm" else after
    return calls


def request_calls(
    graph: Graph, params: Params, requests: Iterable[LLMRequest], *, with_backward: bool = False
) -> list[Call]:
    """Every call of a recorded run, sample after sample, in dependency order (see `sample_calls`)."""
    requests = tuple(requests)
    index = index_requests(requests)
    plan = plan_backward(graph, params) if with_backward else None
    calls: list[Call] = []
    for sample in dict.fromkeys(r.sample for r in requests):
        calls += sample_calls(graph, params, sample, index, with_backward=with_backward, plan=plan, offset=len(calls))
    return calls


def _longest(calls: list[Call], latency: Callable[[LLMRequest], float]) -> float:
    """The end of the last call when each starts as soon as those it waits for end (offset 0)."""
    end: list[float] = []
    for call in calls:
        end.append(max((end[i] for i in call.after), default=0.0) + latency(call.request))
    return max(end, default=0.0)


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
    plan = plan_backward(graph, params) if with_backward else None
    best = CriticalPath(0.0, 0, None)
    chain = 0
    for sample in samples:
        sample_chain = sample_calls(graph, params, sample, index, with_backward=with_backward, plan=plan)
        seconds = _longest(sample_chain, latency)
        calls = round(_longest(sample_chain, lambda request: 1.0))
        chain = max(chain, calls)
        if seconds > best.seconds or best.sample is None:
            best = CriticalPath(seconds, calls, sample)
    return CriticalPath(best.seconds, chain, best.sample)
