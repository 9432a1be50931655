"""One accounting model: the live line, results.json, the report, the budget and compare agree on calls, tokens
and cost."""

from __future__ import annotations

import io
import json

import attrs
import pytest

from semgrad.core import LLMResponse
from semgrad.experiments import RunConfig, compare, run_experiment
from semgrad.experiments._progress import RunProgress, dollars
from semgrad.experiments._run import build_llm, load_run_tasks
from semgrad.report._format import money

from .._data import data_dir

DATA = data_dir()

PRICES = {"gpt-4o": (2.5, 10.0)}


def _config(tmp_path, cache: bool) -> RunConfig:
    return RunConfig(
        "bbh:navigate",
        data_dir=str(DATA),
        iterations=1,
        train=3,
        test=2,
        backend="openai-compatible",
        model="gpt-4o",
        cache=str(tmp_path / "cache.sqlite") if cache else None,
    )


def _provider(config: RunConfig, sent: list[object]):
    inner = build_llm(RunConfig("bbh:navigate", data_dir=str(DATA), train=3, test=2), load_run_tasks(config))

    def provider(request):
        sent.append(request)
        text = inner(request)
        # a dated snapshot: priced by the entry it extends, as the model that answered
        return LLMResponse(getattr(text, "text", text), {"input_tokens": 10, "output_tokens": 2}, "gpt-4o-2024-08-06")

    return provider


@pytest.mark.parametrize("cache", [False, True], ids=["no cache", "cache"])
def test_the_live_line_results_report_and_compare_agree_on_calls_and_cost(tmp_path, cache):
    """On one fake run (replies with tokens and a dated model name, costing under one cent), the calls the provider
    received, the live line's calls, results.json's calls, the report's total and compare's calls column are one
    number; the cost is one number too, shown with four decimals (never $0.00); cache and memo hits are apart from
    calls."""
    config = _config(tmp_path, cache)
    sent: list[object] = []
    progress = RunProgress(io.StringIO(), prices=PRICES, fancy=False)
    summary = run_experiment(config, tmp_path / "run", llm=_provider(config, sent), on_reply=progress, prices=PRICES)
    data = json.loads((tmp_path / "run" / "results.json").read_text("utf-8"))
    calls = data["counters"]["calls"]
    cost = data["cost_usd"]
    assert calls == len(sent) == sum(data["calls"]["by_purpose"].values()) == summary.total_calls
    assert cost == pytest.approx(len(sent) * (10 * 2.5 + 2 * 10.0) / 1e6) and 0 < cost < 0.01
    hits = sum(data["counters"]["hits"].values())
    assert (data["counters"]["hits"].get("cache", 0) > 0) == cache  # the run's own repeated requests, cached
    assert data["counters"]["hits"]["memo"] > 0  # the official protocol's memo answers, counted apart

    figures = progress.figures()
    assert figures["calls"] == calls and figures["hits"] == hits and figures["cost"] == pytest.approx(cost)
    line = progress.counts()
    assert dollars(cost) in line and "$0.00," not in line and dollars(cost) == money(cost)

    report = (tmp_path / "run" / "report.html").read_text("utf-8")
    assert f"(total {calls:,})" in report and money(cost) in report

    sent_by_compare: list[object] = []
    config_b = _config(tmp_path / "b", cache) if cache else config
    (tmp_path / "b").mkdir()
    table = compare(
        config_b,
        [config.optimizer],
        tmp_path / "cmp",
        prices=PRICES,
        llm_factory=lambda cfg: _provider(cfg, sent_by_compare),
    )
    row = table["methods"][0]
    assert row["calls"] == len(sent_by_compare) == calls and row["hits"] == hits
    assert row["cost_usd"] == pytest.approx(cost)


class _StackWatch:
    """An ``on_reply`` that keeps the run's stack (`run_experiment` hands it to ``watch``) and counts nothing."""

    def __init__(self) -> None:
        self.top = None

    def watch(self, llm) -> None:
        self.top = llm

    def __call__(self, request, reply) -> None:
        pass

    def budget(self):
        """The run's budget layer (``budgeted``) inside the stack."""
        llm, seen = self.top, 0
        while llm is not None and seen < 20:
            if hasattr(llm, "max_calls") and hasattr(llm, "refused"):
                return llm
            llm = getattr(llm, "inner", None) or getattr(llm, "llm", None)
            seen += 1
        raise AssertionError("no budget layer in the run's stack")


def test_the_budget_results_json_and_compare_agree_on_calls_and_tokens(tmp_path):
    """On one fake run under a budget (--max-calls), the calls and tokens the budget counted, those of results.json
    (its calls by purpose too) and compare's calls, tokens and tokens by purpose for the same run are the same
    numbers, and the calls are those the provider received."""
    config = attrs.evolve(_config(tmp_path, cache=False), max_calls=10_000, max_tokens=10_000_000)
    sent: list[object] = []
    watch = _StackWatch()
    run_experiment(config, tmp_path / "run", llm=_provider(config, sent), on_reply=watch, prices=PRICES)
    budget = watch.budget()
    counters = json.loads((tmp_path / "run" / "results.json").read_text("utf-8"))["counters"]
    tokens = counters["input_tokens"] + counters["output_tokens"]
    assert budget.refused == 0 and budget.calls == counters["calls"] == len(sent) > 0
    assert budget.tokens == tokens == len(sent) * 12
    assert sum(counters["calls_by_purpose"].values()) == budget.calls

    sent_by_compare: list[object] = []
    table = compare(
        config, [config.optimizer], tmp_path / "cmp", prices=PRICES, llm_factory=lambda c: _provider(c, sent_by_compare)
    )
    row = table["methods"][0]
    assert row["calls"] == len(sent_by_compare) == budget.calls
    assert row["input_tokens"] + row["output_tokens"] == sum(row["tokens_by_purpose"].values()) == budget.tokens
    assert row["input_tokens"] == counters["input_tokens"] and row["calls_by_purpose"] == counters["calls_by_purpose"]
    by_purpose = {p: 12 * n for p, n in counters["calls_by_purpose"].items()}  # each reply reports 10 + 2 tokens
    assert row["tokens_by_purpose"] == by_purpose
