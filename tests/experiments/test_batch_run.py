"""`--batch` in a run: batch calls counted apart and priced at half (accounts, counters, plan), batch records kept in
the ledger as hostile input, the budget reserved before a batch is sent, and which phases go as batches."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semgrad.backends import anthropic, openai_compatible
from semgrad.core import LLMError, LLMFailure, LLMRequest, LLMResponse, Message
from semgrad.effects import Accounts
from semgrad.effects._accounting import BATCH_DISCOUNT, token_cost
from semgrad.effects._batching import BatchPolicy, BatchRecord
from semgrad.effects._checkpoint import CheckpointError
from semgrad.experiments import RunConfig, plan, run_experiment
from semgrad.experiments._ledger import Ledger
from semgrad.experiments._prices import run_cost
from semgrad.experiments._run_stack import Batching, RunStack, add_counters, counters_of
from tests.backends.batch_server import BatchProvider, batch_provider  # noqa: F401
from tests.cli.conftest import SYSTEM, items

from .._data import data_dir

REQUEST = LLMRequest((Message("user", "hi"),))

replies = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000), st.booleans()), min_size=0, max_size=20)


@settings(max_examples=50)
@given(replies)
def test_batch_calls_are_counted_apart_and_priced_at_half(found):
    """Each reply a batch answered is a call and a batch call; the accounts' cost, and the run's cost from its
    counters, price its tokens at BATCH_DISCOUNT of the table's, every other reply's at full."""
    accounts = Accounts()
    for used_in, used_out, batch in found:
        usage = {"input_tokens": used_in, "output_tokens": used_out, **({"batch": 1} if batch else {})}
        accounts = accounts.record(REQUEST, LLMResponse("ok", usage, "m"))
    price = (1.5, 4.0)
    expected = sum((BATCH_DISCOUNT if b else 1.0) * token_cost(price, i, o) for i, o, b in found)
    assert accounts.cost({"m": price}) == pytest.approx(expected)
    total = accounts.total()
    assert (total.calls, total.batch_calls) == (len(found), sum(b for *_, b in found))
    counters = counters_of(accounts)
    assert counters["batch_calls"] == total.batch_calls
    assert run_cost(RunConfig("gsm8k", model="m"), counters, {"m": price}) == pytest.approx(expected)
    assert add_counters(counters, counters)["batch_calls"] == 2 * total.batch_calls
    assert Accounts.from_json(accounts.to_json()) == accounts


def test_accounts_written_before_batch_calls_were_kept_still_load():
    """An accounts line without the batch fields (an older to_json) loads with them at 0."""
    old = [{"engine": "forward", "purpose": "forward", "model": "m", "error": "", "calls": 1, "errors": 0}]
    old[0].update(input_tokens=3, output_tokens=1, cache_hits=0, memo_hits=0)
    loaded = Accounts.from_json(old)
    assert loaded.total().calls == 1 and loaded.total().batch_calls == 0


def test_the_ledger_keeps_batch_records_and_refuses_a_bad_one(tmp_path):
    """A batch record saved in the ledger comes back from disk; a ledger whose record is not one is refused."""
    ledger = Ledger(tmp_path)
    record = BatchRecord("openai_compatible", "batch_1", ("a" * 56 + "-0",))
    ledger.batch_created(record)  # written at once
    assert Ledger.load(tmp_path).batch_records() == (record,)
    text = (tmp_path / "ledger.json").read_text("utf-8").replace('"batch_1"', '["not", "an", "id"]')
    (tmp_path / "ledger.json").write_text(text, "utf-8")
    with pytest.raises(CheckpointError, match="not a valid run ledger"):
        Ledger.load(tmp_path)


@pytest.mark.parametrize(
    "value",
    [None, {}, {"provider": "p", "id": "", "lines": []}, {"provider": "p", "id": "b", "lines": ["x" * 65]},
     {"provider": "p", "id": "b", "lines": "abc"}, {"provider": "p", "id": "b", "lines": [], "more": 1}],
)  # fmt: skip
def test_a_batch_record_from_disk_is_checked(value):
    """BatchRecord.from_json refuses anything but short strings in exactly its fields."""
    assert BatchRecord.from_json(value) is None


def test_the_budget_is_reserved_before_a_batch_is_sent(batch_provider):  # noqa: F811
    """With --max-calls 3 and five calls of one level, the batch holds three lines: the other two were refused by
    the budget (kind budget) before the batch was sent."""
    backend = openai_compatible(batch_provider.url + "/v1", model="m", api_key="sk-test")
    stack = RunStack(backend, real=True, max_calls=3, batch=Batching("eval", BatchPolicy(first_poll=0.001, settle=0)))
    stack.batching = True

    async def main():
        got: list = [None] * 5

        async def one(i):
            try:
                got[i] = await stack.llm(LLMRequest((Message("user", f"q{i}"),)))
            except LLMFailure as failure:
                got[i] = failure.error

        async with anyio.create_task_group() as group:
            for i in range(5):
                group.start_soon(one, i)
        return got

    got = anyio.run(main)
    assert [len(b["lines"]) for b in batch_provider.batches.values()] == [3]
    assert sorted(g.kind if isinstance(g, LLMError) else "ok" for g in got) == ["budget", "budget", "ok", "ok", "ok"]
    assert stack.tally.counters["batch_calls"] == 3 and batch_provider.calls == 0


@pytest.mark.parametrize(("phases", "kind"), [("eval", "openai"), ("all", "openai"), ("eval", "anthropic")])
def test_batch_eval_sends_the_final_evaluation_and_all_every_phase(tmp_path, batch_provider, phases, kind):  # noqa: F811
    """--batch eval: training calls are plain calls, the final evaluation's all batch calls; --batch all: no plain
    call at all (OpenAI's protocol and Anthropic's). The results and the report count the batch calls, the ids are
    in the ledger."""
    backend = "openai-compatible" if kind == "openai" else "anthropic"
    config = RunConfig(
        "bbh:navigate", data_dir=str(data_dir()), backend=backend, model="m", train=3, test=3,
        iterations=1, batch=phases, batch_poll=0.001,
    )  # fmt: skip
    if kind == "openai":
        llm = openai_compatible(batch_provider.url + "/v1", model="m", api_key="sk-test")
    else:
        llm = anthropic("m", base_url=batch_provider.url, api_key="sk-ant-test")
    run_experiment(config, tmp_path / "run", llm=llm, check_backend=False)
    counters = json.loads((tmp_path / "run" / "results.json").read_text("utf-8"))["counters"]
    lines = sum(len(b["lines"]) for b in batch_provider.batches.values())
    assert counters["batch_calls"] == lines == sum(batch_provider.billed.values()) > 0
    assert counters["calls"] == lines + batch_provider.calls
    if phases == "all":
        assert batch_provider.calls == 0
    else:
        assert batch_provider.calls > 0
    assert Ledger.load(tmp_path / "run").batch_records()[0].id == next(iter(batch_provider.batches))
    report = (tmp_path / "run" / "report.html").read_text("utf-8")
    assert "Batch calls" in report and f"{lines:,} (priced at half in the cost)" in report


def test_the_plan_prices_the_batched_phases_at_half(tmp_path: Path):
    """The plan of a --batch eval run has the same calls and tokens as without; its cost is the full cost less
    half the evaluation's tokens' cost; --batch all costs half of everything."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "system.py").write_text(SYSTEM)
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items(40)))
    base = RunConfig(
        f"{tmp_path / 'system.py'}:build", data=str(tmp_path / "items.jsonl"), iterations=1,
        backend="openai-compatible", model="m",
    )  # fmt: skip
    prices = {"m": (1.0, 2.0)}
    full, ev, every = (plan(attrs.evolve(base, batch=b), prices=prices) for b in (None, "eval", "all"))
    assert full.calls == ev.calls == every.calls and full.tokens_by_engine == ev.tokens_by_engine
    assert every.cost_usd == pytest.approx(full.cost_usd * BATCH_DISCOUNT)
    evaluated = sum(token_cost((1.0, 2.0), i, o) for i, o in ev.batch_tokens_by_engine.values())
    assert 0 < evaluated < full.cost_usd
    assert ev.cost_usd == pytest.approx(full.cost_usd - (1 - BATCH_DISCOUNT) * evaluated)


def test_the_dry_run_and_the_summary_say_what_goes_as_batches(tmp_path, capsys):
    """semgrad run --batch eval --dry-run says the evaluation goes as batches at half price, and its estimated
    cost is below the same run's without --batch; the end-of-run summary counts the batch calls."""
    from semgrad.cli import main
    from semgrad.cli._run_summary import print_summary

    common = ["run", "bbh:navigate", "--data-dir", str(data_dir()), "--backend", "openai-compatible", "--model",
              "gpt-4o-mini", "--base-url", "http://127.0.0.1:1/v1", "--train", "4", "--test", "4", "--iterations",
              "1", "--dry-run"]  # fmt: skip
    costs = []
    for extra in ([], ["--batch", "eval"]):
        assert main([*common, *extra]) == 0
        shown = capsys.readouterr().out
        costs.append(float(next(x for x in shown.splitlines() if x.startswith("estimated cost")).split("$")[1]))
    assert "(--batch eval: the final evaluation's calls go as provider batches, priced at half" in shown
    assert costs[1] < costs[0]
    config = RunConfig("bbh:navigate", data_dir=str(data_dir()), backend="openai-compatible", model="m", train=2,
                       test=2, iterations=1, batch="eval", batch_poll=0.001)  # fmt: skip
    provider = BatchProvider().start()
    try:
        llm = openai_compatible(provider.url + "/v1", model="m", api_key="sk-test")
        summary = run_experiment(config, tmp_path / "run", llm=llm, check_backend=False)
    finally:
        provider.stop()
    capsys.readouterr()
    print_summary(summary, tmp_path / "run")
    lines = sum(len(b["lines"]) for b in provider.batches.values())
    assert f"{lines} of the calls went as provider batches (--batch), priced at half" in capsys.readouterr().out


def test_batch_may_be_switched_on_or_off_when_a_run_is_resumed(tmp_path):
    """--batch and --batch-poll change how a run's calls are sent, not what it computes: a resumed run may add,
    change or drop them."""
    from semgrad.experiments._resume import resumed_config

    saved = RunConfig("gsm8k", backend="openai-compatible", model="m")
    assert resumed_config(saved, {"batch": "eval", "batch_poll": 1.0}, tmp_path).batch == "eval"
    batched_run = attrs.evolve(saved, batch="all")
    assert resumed_config(batched_run, {"batch": None}, tmp_path).batch is None
    assert RunConfig.from_json(batched_run.to_json()) == batched_run
    assert batched_run.differs_from(saved) == []
