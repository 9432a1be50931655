"""A run's plan as a value: the tasks it runs and the calls, tokens and cost it will spend at most.

`plan(config)` loads and splits the tasks once and drives the very programs a
real run executes -- `fit`, then the final evaluation of each split -- against a
local stand-in LLM that answers at once, in the formats the parsers accept, with
replies of a typical length and every answer wrong: every sample is an error,
every proposal differs, so the counts are the most a run without failed calls
makes. A plan is an upper bound, not a forecast: under the official protocol a run
answers an identical temperature-0 request of its training loop from its in-run
memo (a memo hit, no call) and lets a redrawn sample keep its feedback, neither of
which the plan counts on (it drives the optimizer with ``planning=True``, see
`make_optimizer`), so a run makes at most the planned calls. Nothing is written
(no run folder, no checkpoint, no report).

Training is driven in full (its cost grows with the train and validation
splits, which are small). An evaluation split asks the same calls of every item
-- one forward request per LLM node, and a judge's when the loss has one -- so
a split of more than `SAMPLE` items is planned from `SAMPLE` of them, spread
over the split, and scaled to its size: the calls from the largest per-item
count, the tokens from the sample's mean. Planning a data file of 100,000 items
is thereby linear in the items (reading and splitting them) and takes seconds.

The CLI's ``--dry-run``, its confirmation prompt, the progress line's planned
total and a resumed run read the plan; `run_experiment(config, out, plan=...)`
runs its tasks instead of loading them again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs

from ..backends.fake import HashLLM, reply_forward
from ..core import Example, FrozenMap, Graph, LLMRequest, LLMResponse, Params
from ..core.calls import ENGINES
from ..core.optim import evaluate
from ..effects import Runner, as_trainable, fit, run_loop
from ..effects._accounting import BATCH_DISCOUNT
from ..tasks import Task
from ._config import RunConfig, make_optimizer
from ._prices import estimate_cost, prompt_cache
from ._run_tasks import check_protocol, load_run_tasks, task_loss

__all__ = ["OUTPUT_TOKENS", "PHASES", "SAMPLE", "RunPlan", "estimate_tokens", "plan"]

#: Assumed output tokens per purpose (a real model's replies are usually of this order).
OUTPUT_TOKENS = FrozenMap(
    {"forward": 250, "backward": 300, "rewrite": 150, "critique": 250, "evaluate": 200, "summarize": 250}
)

#: The phases a run's calls fall in: training (`fit`), then the final evaluation of each split.
PHASES = ("train", "evaluate")

#: Items of an evaluation split driven to plan it; a larger split is scaled from that many (your own
#: data's train and validation splits, at most 20 items by default, are driven whole).
SAMPLE = 24


def estimate_tokens(text: str) -> int:
    """About four characters per token.

    Examples:
        >>> estimate_tokens("x" * 41), estimate_tokens("")
        (10, 1)
    """
    return max(1, len(text) // 4)


@attrs.frozen
class RunPlan:
    """What a run of `config` will do: its tasks (loaded and split once) and its calls at most (an upper
    bound: the official protocol's memo hits and reused feedback make a run's calls fewer, see the module doc).

    Retries, repair requests after unreadable replies and the preflight's `preflight_calls`
    (one forward of the first task, before a real backend's run) come on top.

    Attributes:
        config: The run planned.
        tasks: Its tasks, split; a run given this plan runs them.
        calls_by_phase: At most this many calls by (phase, engine, purpose); phases are `PHASES`.
        tokens_by_engine: Estimated (input, output) tokens by engine (role).
        cost_usd: The estimated cost (0 offline; None when a model has no price).
        preflight_calls: The preflight's calls (one per LLM node of the first task's graph; for a system
            written as Python, the calls its run of the first training item made against the counting fake).
        scaled: The (task, split) evaluations planned from a sample and scaled (their tokens extrapolated).
        estimate: True when a task is a system written as Python: its calls are those of the branches and
            loops its runs took against the counting fake, an estimate, not a bound (a real run may take
            others; a budget, ``--max-calls``, stays a hard cap).
        batch_tokens_by_engine: Of `tokens_by_engine`, those of the calls ``--batch`` sends as provider
            batches (priced at half in `cost_usd`).
        cached_by_engine: Of each engine's estimated input tokens, ``(read from, written to)`` the provider's
            prompt cache: a system text an earlier request sent, at least the provider's shortest cached
            prefix long (see `semgrad.experiments._prices.prompt_cache`).
    """

    config: RunConfig
    tasks: tuple[Task, ...] = attrs.field(eq=False, repr=False)
    calls_by_phase: FrozenMap[tuple[str, str, str], int]
    tokens_by_engine: FrozenMap[str, tuple[int, int]]
    cost_usd: float | None
    preflight_calls: int
    scaled: tuple[tuple[str, str], ...] = ()
    estimate: bool = False
    batch_tokens_by_engine: FrozenMap[str, tuple[int, int]] = FrozenMap()
    cached_by_engine: FrozenMap[str, tuple[int, int]] = FrozenMap()

    @property
    def cached_input_tokens(self) -> int:
        """Estimated input tokens a provider serves from its prompt cache."""
        return sum(used[0] for used in self.cached_by_engine.values())

    @property
    def calls(self) -> FrozenMap[tuple[str, str], int]:
        """Calls by (engine, purpose), over every phase."""
        merged: dict[tuple[str, str], int] = {}
        for (_, engine, purpose), n in self.calls_by_phase.items():
            merged[(engine, purpose)] = merged.get((engine, purpose), 0) + n
        return FrozenMap(sorted(merged.items()))

    @property
    def total_calls(self) -> int:
        """All calls (the preflight's left out)."""
        return sum(self.calls_by_phase.values())

    @property
    def input_tokens(self) -> int:
        """Estimated input tokens."""
        return sum(used[0] for used in self.tokens_by_engine.values())

    @property
    def output_tokens(self) -> int:
        """Estimated output tokens."""
        return sum(used[1] for used in self.tokens_by_engine.values())

    def by_purpose(self) -> dict[str, int]:
        """Calls per purpose."""
        result: dict[str, int] = {}
        for (_, purpose), n in self.calls.items():
            result[purpose] = result.get(purpose, 0) + n
        return result

    def by_phase(self) -> dict[str, int]:
        """Calls per phase."""
        result = dict.fromkeys(PHASES, 0)
        for (phase, _, _), n in self.calls_by_phase.items():
            result[phase] += n
        return result


class _Counter:
    """Answers instantly in parseable form, every answer wrong, and counts calls and tokens."""

    is_async = False

    def __init__(self, output_tokens: Mapping[str, int] = OUTPUT_TOKENS, keep: int = 0) -> None:
        self.output_tokens = output_tokens
        self.inner = HashLLM("dry-run")
        self.phase = PHASES[0]
        self.calls: dict[tuple[str, str, str], int] = {}
        self.by_engine: dict[str, tuple[int, int]] = {}
        self.keep = keep
        self.requests: dict[str, list[LLMRequest]] = {}  # the first `keep` requests per purpose
        self.batched: tuple[str, ...] = ()  # the phases whose calls go as provider batches (``--batch``)
        self.batch_by_engine: dict[str, tuple[int, int]] = {}  # their tokens, of `by_engine`'s
        #: How each engine's provider caches prompts (`prompt_cache`), the system texts it has seen, and the
        #: input tokens read from and written to its cache.
        self.caching: Mapping[str, tuple[int, bool] | None] = {}
        self.seen: dict[tuple[str, str], None] = {}
        self.cached: dict[str, tuple[int, int]] = {}

    def _cache(self, request: LLMRequest) -> None:
        caching = self.caching.get(request.engine)
        first = request.messages[0] if request.messages else None
        if caching is None or first is None or first.role != "system":
            return
        tokens = estimate_tokens(first.content)
        if tokens < caching[0]:
            return
        key = (request.engine, first.content)
        read, written = self.cached.get(request.engine, (0, 0))
        if key in self.seen:
            read += tokens
        else:
            self.seen[key] = None
            written += tokens if caching[1] else 0
        self.cached[request.engine] = (read, written)

    def __call__(self, request: LLMRequest) -> LLMResponse:
        key = (self.phase, request.engine, request.purpose)
        self.calls[key] = self.calls.get(key, 0) + 1
        size = self.output_tokens.get(request.purpose, 200)
        used_in = sum(estimate_tokens(m.content) for m in request.messages)
        self._count(request.engine, used_in, size)
        self._cache(request)
        if self.keep:
            kept = self.requests.setdefault(request.purpose, [])
            if len(kept) < self.keep:
                kept.append(request)
        text = self.inner(request)
        if request.purpose == "forward":
            text = reply_forward(request, "Answer: none of these", reasoning="lorem " * max(0, size - 4))
        return LLMResponse(text, {"input_tokens": 0, "output_tokens": 0}, "dry-run")

    def add(
        self,
        calls: Mapping[tuple[str, str, str], int],
        tokens: Mapping[str, tuple[int, int]],
        cached: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        """Count `calls` and `tokens` (of them `cached`: read from, written to a prompt cache) as if asked."""
        for key, n in calls.items():
            self.calls[key] = self.calls.get(key, 0) + n
        for engine, (used_in, used_out) in tokens.items():
            self._count(engine, used_in, used_out)
        for engine, (read, written) in (cached or {}).items():
            before = self.cached.get(engine, (0, 0))
            self.cached[engine] = (before[0] + read, before[1] + written)

    def _count(self, engine: str, used_in: int, used_out: int) -> None:
        for tokens in (self.by_engine, self.batch_by_engine) if self.phase in self.batched else (self.by_engine,):
            before = tokens.get(engine, (0, 0))
            tokens[engine] = (before[0] + used_in, before[1] + used_out)


def plan(
    config: RunConfig,
    *,
    prices: Mapping[str, tuple[float, ...]] | None = None,
    output_tokens: Mapping[str, int] = OUTPUT_TOKENS,
    tasks: Sequence[Task] | None = None,
    counter: _Counter | None = None,
) -> RunPlan:
    """The plan of a run of `config`: its tasks, and the calls it makes at most, without calling or writing anything.

    Args:
        config: The run to plan.
        prices: USD per million (input, output) tokens by model name; the model each role runs
            on (see `model_for`) is looked up, an exact name or else the longest name it starts with.
        output_tokens: Assumed reply length per purpose.
        tasks: The config's tasks when the caller has loaded them (else they are loaded here).
        counter: The stand-in LLM to drive the run with (`show_prompts` keeps its requests).

    Raises:
        SetupError: The tasks cannot be loaded, or the protocol cannot run on their splits.
    """
    loaded = tuple(tasks) if tasks is not None else load_run_tasks(config)
    check_protocol(config, loaded)
    counter = counter if counter is not None else _Counter(output_tokens)
    counter.batched = {"eval": ("evaluate",), "all": PHASES}.get(config.batch or "", ())
    counter.caching = {engine: prompt_cache(config, engine) for engine in ENGINES}
    scaled = run_loop(_drive, config, loaded, counter)
    graph, params = loaded[0].build()
    recorded = not isinstance(graph, Graph)
    return RunPlan(
        config,
        loaded,
        FrozenMap(sorted(counter.calls.items())),
        FrozenMap(sorted(counter.by_engine.items())),
        _cost(config, counter.by_engine, prices, counter.batch_by_engine, counter.cached),
        run_loop(_recorded_preflight, config, loaded[0], counter.output_tokens)
        if recorded
        else sum(1 for node in graph.nodes.values() if node.kind == "llm"),
        tuple(scaled),
        estimate=recorded or any(not isinstance(t.build()[0], Graph) for t in loaded[1:]),
        batch_tokens_by_engine=FrozenMap(sorted(counter.batch_by_engine.items())),
        cached_by_engine=FrozenMap(sorted(counter.cached.items())),
    )


async def _recorded_preflight(config: RunConfig, task: Task, output_tokens: Mapping[str, int]) -> int:
    """The calls of a system's preflight (one recorded run of the first training item) against a counting fake."""
    graph, params = task.build()
    one = _Counter(output_tokens)
    structure, systems = as_trainable(graph)
    item = task.split.train[:1]
    await Runner(one, systems=systems).run(evaluate(structure, params, item, task_loss(config, task)))
    return sum(one.calls.values())


async def _drive(config: RunConfig, tasks: Sequence[Task], counter: _Counter) -> list[tuple[str, str]]:
    """Drive each task's training and evaluation against `counter`; the splits that were scaled."""
    scaled = []
    for task in tasks:
        counter.phase = "train"
        graph, params = task.build()
        trained = await _train(config, task, graph, params, counter)
        counter.phase = "evaluate"
        splits = task.split
        for name, p, examples in (
            ("train", trained, splits.train),
            ("validation", trained, splits.validation),
            ("test", trained, splits.test),
            ("initial_test", params, splits.test),
        ):
            if await _evaluate(config, task, graph, p, examples, counter):
                scaled.append((task.name, name))
    return scaled


async def _train(config: RunConfig, task: Task, graph: Graph, params: Params, counter: _Counter) -> Params:
    result = await fit(
        graph,
        params,
        make_optimizer(config, planning=True),
        train=task.split.train,
        validation=task.split.validation if config.protocol == "heldout" else (),
        llm=counter,
        iterations=config.iterations,
        loss=task_loss(config, task),
        max_concurrency=config.concurrency,
        options=config.sampling(),
    )
    return result.params


async def _evaluate(
    config: RunConfig, task: Task, graph: Graph, params: Params, examples: Sequence[Example], counter: _Counter
) -> bool:
    """Count the evaluation of `examples` under `params`: all of them, or a sample scaled (then True)."""
    if not examples:
        return False
    loss = task_loss(config, task)
    options = config.sampling()["forward"]
    structure, systems = as_trainable(graph)
    runner = Runner(counter, max_concurrency=config.concurrency, systems=systems)
    if len(examples) <= SAMPLE:
        await runner.run(evaluate(structure, params, examples, loss, options=options))
        return False
    most: dict[tuple[str, str, str], int] = {}
    tokens: dict[str, tuple[int, int]] = {}
    one = _Counter(counter.output_tokens)
    one.phase, one.caching, one.seen = counter.phase, counter.caching, dict(counter.seen)
    for i in range(SAMPLE):
        one.calls, one.by_engine = {}, {}
        item = examples[i * len(examples) // SAMPLE]
        await Runner(one, max_concurrency=1, systems=systems).run(
            evaluate(structure, params, (item,), loss, options=options)
        )
        for key, n in one.calls.items():
            most[key] = max(most.get(key, 0), n)
        for engine, (used_in, used_out) in one.by_engine.items():
            before = tokens.get(engine, (0, 0))
            tokens[engine] = (before[0] + used_in, before[1] + used_out)
    scale = len(examples) / SAMPLE
    counter.add(
        {key: n * len(examples) for key, n in most.items()},
        {engine: (math.ceil(i * scale), math.ceil(o * scale)) for engine, (i, o) in tokens.items()},
        {engine: (math.ceil(r * scale), w) for engine, (r, w) in one.cached.items()},  # a write is made once
    )
    counter.seen.update(one.seen)
    return True


def _cost(
    config: RunConfig,
    by_engine: Mapping[str, tuple[int, int]],
    prices: Mapping[str, tuple[float, ...]] | None,
    batch_by_engine: Mapping[str, tuple[int, int]] | None = None,
    cached: Mapping[str, tuple[int, int]] | None = None,
) -> float | None:
    """The estimated cost: every token at the table's rates, those of batch calls at `BATCH_DISCOUNT` of them."""
    if config.backend == "simulated":
        return 0.0  # offline: nothing to pay
    full = estimate_cost(config, by_engine, prices, cached)
    batch = estimate_cost(config, batch_by_engine, prices) if batch_by_engine else 0.0
    return None if full is None or batch is None else full - (1 - BATCH_DISCOUNT) * batch
