"""The anyio floor of the benchmarks (``benchmarks._floor``).

Property: a minimal anyio program (tasks started as calls become ready, or parked
before the clock) that makes a recorded run's calls, each started
when the calls it depends on have ended and sleeping its latency, can never end
before the longest chain of dependent calls (the critical-path limit) has elapsed.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks._critical import critical_path
from benchmarks._floor import anyio_floor
from benchmarks._workloads import forward_program, fwd_bwd_program, random_dag, record
from semgrad.backends.fake import HashLLM, LatencyLLM


@settings(max_examples=8, deadline=None)
@given(
    n=st.integers(5, 9),
    seed=st.integers(0, 2**16),
    samples=st.integers(1, 2),
    with_backward=st.booleans(),
    jitter=st.sampled_from([0.0, 0.5]),
)
def test_the_floor_never_beats_the_critical_path(
    n: int, seed: int, samples: int, with_backward: bool, jitter: float
) -> None:
    """On a tiny random DAG at 5 ms, both floors' wall times are at least the critical-path limit."""
    graph, params = random_dag(n, seed=seed)
    values = {name: f"value of {name}" for name in graph.inputs}
    program = fwd_bwd_program if with_backward else forward_program
    requests = record(lambda: program(graph, params, samples, inputs=lambda i: values)).requests
    llm = LatencyLLM(HashLLM(), 0.005, jitter=jitter, seed=seed)
    limit = critical_path(graph, params, requests, llm.latency_for, with_backward=with_backward).seconds
    assert limit > 0
    for parked in (False, True):
        assert (
            anyio_floor(graph, params, requests, llm.latency_for, with_backward=with_backward, parked=parked) >= limit
        )
