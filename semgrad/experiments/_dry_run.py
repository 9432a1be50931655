"""Dry runs: count the calls (and estimate tokens and cost) a run will make, without calling any LLM.

Possible because requests are values: the very programs a real run executes are
driven by a local stand-in LLM that answers instantly, in the formats the
parsers accept, with replies of a typical length and with every answer wrong
-- so every sample is an error, every proposal differs, and the counts are the
most a run without failed calls makes.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ..backends.fake import HashLLM, reply_forward
from ..core import FrozenMap, LLMRequest, LLMResponse
from ._config import PROTOCOLS, RunConfig
from ._prices import model_for, price_of
from ._run import load_run_tasks, run_experiment

__all__ = ["DryRunReport", "dry_run", "dry_run_protocols", "estimate_tokens"]

#: Assumed output tokens per purpose (a real model's replies are usually of this order).
OUTPUT_TOKENS = FrozenMap(
    {"forward": 250, "backward": 300, "rewrite": 150, "critique": 250, "evaluate": 200, "summarize": 250}
)


def estimate_tokens(text: str) -> int:
    """About four characters per token."""
    return max(1, len(text) // 4)


@attrs.frozen
class DryRunReport:
    """The calls a run will make at most, by (engine, purpose), with token and cost estimates.

    Retries, and repair requests after unreadable replies, are not counted.
    """

    calls: FrozenMap[tuple[str, str], int]
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = None

    @property
    def total_calls(self) -> int:
        """All calls."""
        return sum(self.calls.values())

    def by_purpose(self) -> dict[str, int]:
        """Calls per purpose."""
        result: dict[str, int] = {}
        for (_, purpose), n in self.calls.items():
            result[purpose] = result.get(purpose, 0) + n
        return result

    def table(self) -> str:
        """A printable table."""
        lines = [f"{'role':<10} {'purpose':<10} {'calls':>8}"]
        lines += [f"{engine:<10} {purpose:<10} {n:>8}" for (engine, purpose), n in self.calls.items()]
        lines.append(f"{'total':<21} {self.total_calls:>8}")
        lines.append(f"estimated tokens: {self.input_tokens:,} in, {self.output_tokens:,} out")
        lines.append(
            "estimated cost: "
            + (
                f"${self.cost_usd:,.2f}"
                if self.cost_usd is not None
                else "unknown (a model has no price; --prices FILE)"
            )
        )
        return "\n".join(lines)


class _Counter:
    """Answers instantly in parseable form, every answer wrong, and counts calls and tokens."""

    is_async = False

    def __init__(self, output_tokens: Mapping[str, int], keep: int = 0) -> None:
        self.output_tokens = output_tokens
        self.inner = HashLLM("dry-run")
        self.calls: dict[tuple[str, str], int] = {}
        self.tokens_in = self.tokens_out = 0
        self.by_engine: dict[str, tuple[int, int]] = {}
        self.keep = keep
        self.requests: dict[str, list[LLMRequest]] = {}  # the first `keep` requests per purpose

    def __call__(self, request: LLMRequest) -> LLMResponse:
        key = (request.engine, request.purpose)
        self.calls[key] = self.calls.get(key, 0) + 1
        size = self.output_tokens.get(request.purpose, 200)
        used_in = sum(estimate_tokens(m.content) for m in request.messages)
        self.tokens_in += used_in
        self.tokens_out += size
        before = self.by_engine.get(request.engine, (0, 0))
        self.by_engine[request.engine] = (before[0] + used_in, before[1] + size)
        if self.keep:
            kept = self.requests.setdefault(request.purpose, [])
            if len(kept) < self.keep:
                kept.append(request)
        text = self.inner(request)
        if request.purpose == "forward":
            text = reply_forward(request, "Answer: none of these", reasoning="lorem " * max(0, size - 4))
        return LLMResponse(text, {"input_tokens": 0, "output_tokens": 0}, "dry-run")


def dry_run(
    config: RunConfig,
    *,
    prices: Mapping[str, tuple[float, float]] | None = None,
    output_tokens: Mapping[str, int] = OUTPUT_TOKENS,
    counter: _Counter | None = None,
) -> DryRunReport:
    """The calls `run_experiment(config)` will make at most, without calling any LLM or writing files.

    Retries, and repair requests after unreadable replies, are not counted: they come on top.

    Args:
        config: The run to estimate.
        prices: USD per million (input, output) tokens by model name; the
            model each role runs on (see `model_for`) is looked up, an exact
            name or else the longest name it starts with.
        output_tokens: Assumed reply length per purpose.
        counter: The stand-in LLM to drive the run with (`show_prompts` keeps its requests).
    """
    import tempfile

    counter = counter if counter is not None else _Counter(output_tokens)
    load_run_tasks(config)  # fail on bad data before anything else
    with tempfile.TemporaryDirectory() as scratch:
        run_experiment(
            attrs.evolve(config, cache=None, max_calls=None, max_tokens=None), scratch, llm=counter, check_backend=False
        )
    calls = FrozenMap(sorted(counter.calls.items()))
    return DryRunReport(calls, counter.tokens_in, counter.tokens_out, _cost(config, counter, prices))


def _cost(config: RunConfig, counter: _Counter, prices: Mapping[str, tuple[float, float]] | None) -> float | None:
    if config.backend == "simulated":
        return 0.0  # offline: nothing to pay
    if not prices:
        return None
    total = 0.0
    for engine, (used_in, used_out) in counter.by_engine.items():
        price = price_of(prices, model_for(config, engine))
        if price is None:
            return None
        total += used_in / 1e6 * price[0] + used_out / 1e6 * price[1]
    return total


def dry_run_protocols(
    config: RunConfig,
    *,
    prices: Mapping[str, tuple[float, float]] | None = None,
    output_tokens: Mapping[str, int] = OUTPUT_TOKENS,
    known: DryRunReport | None = None,
) -> FrozenMap[str, DryRunReport]:
    """`dry_run` of `config` under each protocol ("official", "heldout"), by protocol name.

    The official variant drops the config's validation size (that protocol has no validation
    split); a protocol the splits cannot run (held-out without a validation split) is left out.
    `known` is `config`'s own dry run when the caller has it (with the same prices and output
    tokens): the variant that is `config` itself takes it instead of being run again.
    """
    found = {}
    for protocol in PROTOCOLS:
        # The official protocol has no validation split: the config's validation size is the held-out one's.
        validation = None if protocol == "official" else config.validation
        variant = attrs.evolve(config, protocol=protocol, validation=validation)
        if protocol == "heldout" and not all(t.split.validation for t in load_run_tasks(variant)):
            continue
        if known is not None and variant == config:
            found[protocol] = known
        else:
            found[protocol] = dry_run(variant, prices=prices, output_tokens=output_tokens)
    return FrozenMap(found)


def protocols_table(reports: Mapping[str, DryRunReport]) -> str:
    """Calls per purpose under each protocol, side by side."""
    purposes = sorted({p for r in reports.values() for p in r.by_purpose()})
    lines = [f"{'protocol':<10} " + " ".join(f"{p:>9}" for p in purposes) + f" {'total':>9}"]
    for name, report in reports.items():
        counts = report.by_purpose()
        cells = " ".join(f"{counts.get(p, 0):>9}" for p in purposes)
        lines.append(f"{name:<10} {cells} {report.total_calls:>9}")
    return "\n".join(lines)
