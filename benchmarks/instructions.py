"""Instructions per LLM call, counted by callgrind: deterministic, whatever the machine's load.

    python -m benchmarks.instructions            # forward (sync and async), backward, W6 @ 250 nodes
    python -m benchmarks.instructions --only backward

Each figure is ``(Ir(2 B) - Ir(B)) / (calls(2 B) - calls(B))``: two runs of the same
program at two batch sizes, under ``valgrind --tool=callgrind`` with
``PYTHONHASHSEED=0`` and the cyclic collector off (``--gc`` counts it too); the
difference cancels start-up, imports and building the graph. The programs:

* ``forward``: W3's, ``gather`` of the paper graph's forward over B questions, sync
  runner, a fake that returns a constant;
* ``forward_async``: the same on the async runner (zero latency, never suspending), in
  one event loop (``--loop`` picks asyncio's or uvloop's);
* ``backward``: ``gather`` of B neighbour-aware backward passes over one sample's trace
  of ``layered_graph(4, 4)`` (13 backward calls each, 4 targets per layer), sync runner,
  `ScaleLLM`'s replies (always parse), the fake's own cost subtracted;
* ``w6``: W6's workload (forward + backward per sample) on the 250-node random DAG.

The fake's own instructions are counted separately (the large batch's requests
answered twice rather than once, in a loop) and subtracted, except for the forward
kinds' constant fake.

Two more kinds, not run by default, count *everything* the process does during
one whole run of W1's or W4's program on the async runner -- the library, anyio,
the event loop (``--loop``), `LatencyLLM(ScaleLLM())` and the cyclic collector,
which stays on -- as ``Ir(two runs) - Ir(one run)`` after a warm-up run, each run
after a `gc.collect()` as in the harness, at 0.5 s latency (so that the run keeps
its shape under valgrind's slowdown): ``w1_run`` and ``w4_run``. Their rows give
``instructions_per_run`` and, divided by the run's calls, ``instructions_per_call``.

    python -m benchmarks.instructions --only w1_run,w4_run --loop uvloop
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any

__all__ = ["KINDS", "count", "main"]

KINDS = ("forward", "forward_async", "backward", "w6", "w1_run", "w4_run")
#: What `python -m benchmarks.instructions` counts when not told `--only`.
DEFAULT_KINDS = ("forward", "forward_async", "backward", "w6")
#: (smaller batch, larger batch) per kind; for the whole-run kinds, (runs, runs).
BATCHES = {
    "forward": (100, 200),
    "forward_async": (100, 200),
    "backward": (40, 80),
    "w6": (2, 4),
    "w1_run": (1, 2),
    "w4_run": (1, 2),
}
#: The whole-run kinds' latency per call, seconds.
RUN_LATENCY = 0.5


def _program(kind: str, batch: int) -> tuple[Any, Any, Any]:
    """(build, llm, requests) for one kind and batch; `requests()` records the program's requests."""
    from semgrad.backends.fake import RecordingLLM, reply_forward
    from semgrad.core import backward, gather, rules
    from semgrad.effects import Runner

    from ._workloads import ScaleLLM, deep_graph, forward_program, fwd_bwd_program, paper_graph, random_dag

    if kind in ("forward", "forward_async"):
        graph, params = paper_graph()
        replies: dict[str, str] = {}

        def constant(request: Any) -> str:  # one reply, written once, in the form the parser reads
            reply = replies.get("reply")
            if reply is None:
                reply = replies["reply"] = reply_forward(request, "the answer")
            return reply

        return (lambda: forward_program(graph, params, batch)), constant, list
    if kind == "w1_run":
        graph, params = paper_graph()
        return (lambda: forward_program(graph, params, 32)), ScaleLLM(), list
    if kind == "w4_run":
        graph, params = deep_graph(4, 4)
        return (lambda: fwd_bwd_program(graph, params, 8)), ScaleLLM(), list
    if kind == "backward":
        graph, params = deep_graph(4, 4)
        trace = Runner(ScaleLLM()).run_sync(forward_program(graph, params, 1)).__getitem__(0)
        rule = rules.neighbor_aware()
        build = lambda: gather(*(backward(graph, params, trace, "Expected 4.", rule) for _ in range(batch)))  # noqa: E731
    else:
        graph, params = random_dag(250)
        inputs = {name: f"value of {name}" for name in graph.inputs}
        build = lambda: fwd_bwd_program(graph, params, batch, inputs=lambda i: inputs)  # noqa: E731

    def requests() -> list[Any]:
        rec = RecordingLLM(ScaleLLM())
        Runner(rec).run_sync(build())
        return rec.requests

    return build, ScaleLLM(), requests


def _child(kind: str, batch: int, part: str, loop: str) -> None:
    """Run under callgrind: the program (`part` = "library") or the fake alone ("fake"), once."""
    from semgrad.effects import Runner, run_loop

    build, llm, requests = _program(kind, batch)
    if part.startswith("fake"):  # "fakeK": record the requests, then answer them K times with the fake alone
        recorded = requests()
        for _ in range(int(part[4:])):
            for request in recorded:
                llm(request)
        return
    if kind in ("w1_run", "w4_run"):  # `batch` whole runs after a warm-up, each after a full collection
        from semgrad.backends.fake import LatencyLLM

        slow = LatencyLLM(llm, RUN_LATENCY)

        async def one_run() -> None:
            await Runner(slow).run(build())

        run_loop(one_run, use_uvloop=loop == "uvloop")
        for _ in range(batch):
            gc.collect()
            run_loop(one_run, use_uvloop=loop == "uvloop")
        return
    if kind == "forward_async":

        async def answer(request: Any) -> str:
            return llm(request)

        runner = Runner(answer)

        async def body() -> None:
            await runner.run(build())

        run_loop(body, use_uvloop=loop == "uvloop")
        return
    runner = Runner(llm)
    runner.run_sync(build())
    print(json.dumps({"calls": runner.statistics().calls}))


def _calls(kind: str, batch: int) -> int:
    from semgrad.effects import Runner

    build, llm, _ = _program(kind, batch)
    runner = Runner(llm)
    runner.run_sync(build())
    return runner.statistics().calls


def _ir(args: list[str], *, collect_gc: bool) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        env = dict(os.environ, PYTHONHASHSEED="0", SEMGRAD_INSTRUCTIONS_GC="1" if collect_gc else "0")
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-m",
                "benchmarks.instructions",
                *args,
            ],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        text = open(out, encoding="utf-8").read()
    match = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.MULTILINE)
    if match is None:
        raise RuntimeError("callgrind wrote no instruction total")
    return int(match.group(1))


def count(kind: str, *, loop: str = "asyncio", collect_gc: bool = False) -> dict[str, Any]:
    """Instructions per call for `kind` (see the module docstring), with the fake's share apart."""
    small, large = BATCHES[kind]
    if kind in ("w1_run", "w4_run"):  # everything, the collector too, during one whole run
        runs = [_ir(["--child", kind, str(b), "library", loop], collect_gc=True) for b in (small, large)]
        per_run = (runs[1] - runs[0]) / (large - small)
        calls = _calls(kind, 1)
        return {
            "kind": kind,
            "loop": loop,
            "runs": [small, large],
            "latency_s": RUN_LATENCY,
            "calls_per_run": calls,
            "instructions_per_run": round(per_run),
            "instructions_per_call": round(per_run / calls),
            "gc": True,
        }
    calls = _calls(kind, large) - _calls(kind, small)
    library = [_ir(["--child", kind, str(b), "library", loop], collect_gc=collect_gc) for b in (small, large)]
    fake = 0.0
    if kind != "forward" and kind != "forward_async":
        # Answering the large batch's requests twice rather than once: the difference is one pass.
        fakes = [_ir(["--child", kind, str(large), f"fake{k}", loop], collect_gc=collect_gc) for k in (1, 2)]
        fake = (fakes[1] - fakes[0]) / _calls(kind, large)
    per_call = (library[1] - library[0]) / calls
    return {
        "kind": kind,
        "loop": loop if kind == "forward_async" else None,
        "batches": [small, large],
        "calls": calls,
        "instructions_per_call": round(per_call - fake),
        "fake_instructions_per_call": round(fake),
        "gc": collect_gc,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.instructions", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(DEFAULT_KINDS), help=f"comma-separated, from {', '.join(KINDS)}")
    parser.add_argument(
        "--loop", choices=("asyncio", "uvloop"), default="asyncio", help="the loop of forward_async and the run kinds"
    )
    parser.add_argument("--gc", action="store_true", help="leave CPython's cyclic collector on (always on in a run)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        if os.environ.get("SEMGRAD_INSTRUCTIONS_GC") == "0":
            gc.disable()
        kind, batch, part, loop = args.child
        _child(kind, int(batch), part, loop)
        return 0
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (apt-get install valgrind)")
    for kind in (k.strip() for k in args.only.split(",") if k.strip()):
        if kind not in KINDS:
            parser.error(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")
        row = count(kind, loop=args.loop, collect_gc=args.gc)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
