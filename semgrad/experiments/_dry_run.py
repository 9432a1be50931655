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

from ..core import FrozenMap
from ..report import money
from ._config import PROTOCOLS, RunConfig
from ._plan import OUTPUT_TOKENS, RunPlan, _Counter, estimate_tokens, plan
from ._run_tasks import load_run_tasks

__all__ = ["DryRunReport", "dry_run", "dry_run_protocols", "estimate_tokens", "report_of"]


@attrs.frozen
class DryRunReport:
    """The calls a run will make at most, by (engine, purpose), with token and cost estimates.

    Retries, and repair requests after unreadable replies, are not counted.
    """

    calls: FrozenMap[tuple[str, str], int]
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = None
    #: Of the input tokens, those the provider is expected to serve from its prompt cache (priced so).
    cached_input_tokens: int = 0

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
        cached = f" ({self.cached_input_tokens:,} of them from a prompt cache)" if self.cached_input_tokens else ""
        lines.append(f"estimated tokens: {self.input_tokens:,} in{cached}, {self.output_tokens:,} out")
        lines.append(
            "estimated cost: "
            + (money(self.cost_usd) if self.cost_usd is not None else "unknown (a model has no price; --prices FILE)")
        )
        return "\n".join(lines)


def dry_run(
    config: RunConfig,
    *,
    prices: Mapping[str, tuple[float, ...]] | None = None,
    output_tokens: Mapping[str, int] = OUTPUT_TOKENS,
    counter: _Counter | None = None,
) -> DryRunReport:
    """The calls `run_experiment(config)` will make at most, without calling any LLM or writing files.

    The table of `plan(config)` (see `RunPlan`). Retries, and repair requests after unreadable
    replies, are not counted: they come on top.

    Args:
        config: The run to estimate.
        prices: USD per million (input, output) tokens by model name; the
            model each role runs on (see `model_for`) is looked up, an exact
            name or else the longest name it starts with.
        output_tokens: Assumed reply length per purpose.
        counter: The stand-in LLM to drive the run with (`show_prompts` keeps its requests).
    """
    return report_of(plan(config, prices=prices, output_tokens=output_tokens, counter=counter))


def report_of(planned: RunPlan) -> DryRunReport:
    """A plan's calls, tokens and cost as a `DryRunReport`."""
    return DryRunReport(
        planned.calls, planned.input_tokens, planned.output_tokens, planned.cost_usd, planned.cached_input_tokens
    )


def dry_run_protocols(
    config: RunConfig,
    *,
    prices: Mapping[str, tuple[float, ...]] | None = None,
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
        if known is not None and variant == config:
            found[protocol] = known
            continue
        tasks = load_run_tasks(variant)
        if protocol == "heldout" and not all(t.split.validation for t in tasks):
            continue
        found[protocol] = report_of(plan(variant, prices=prices, output_tokens=output_tokens, tasks=tasks))
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
