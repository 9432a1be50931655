"""Dry runs priced by a dated bundled table (or --prices FILE), --help shows defaults, --show-prompts, --version."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.experiments import RunConfig, dry_run, run_experiment
from semgrad.experiments._inspect import first_requests
from semgrad.experiments._prices import DEFAULT_MODELS, bundled_prices, load_prices, price_of

from .conftest import one_line_error, semgrad


def test_the_bundled_table_is_dated_sourced_and_prices_the_default_models():
    """The shipped table names its date and source and prices both backends' default models."""
    table = bundled_prices()
    assert len(table.date) == 10 and table.date[4] == "-" and "http" in table.source
    assert all(len(rates) in (2, 4) and min(rates) >= 0 for rates in table.models.values())
    for model, rates in table.models.items():  # cache rates: a read costs less than input, a write no less
        assert len(rates) == 2 or rates[2] <= rates[0] <= rates[3], model
    assert all(price_of(table.models, model) for model in DEFAULT_MODELS.values())


@given(st.sampled_from(sorted(bundled_prices().models)), st.from_regex(r"-[0-9]{4}-[0-9]{2}-[0-9]{2}", fullmatch=True))
def test_a_dated_model_name_takes_the_price_of_the_entry_it_dates(model, suffix):
    """A provider's dated model name is priced like the entry it adds the date to, even where a longer entry
    starts the same way (claude-opus-4-5000-01-01 is Opus 4 of a date, not Opus 4.5)."""
    table = bundled_prices().models
    assert price_of(table, model + suffix) == table[model]


def test_a_newer_model_is_not_priced_as_the_older_model_its_name_extends():
    """Models whose names extend an older entry's at another price have their own entries (Opus 4.5 is not Opus 4)."""
    table = bundled_prices().models
    opus = price_of(table, "claude-opus-4-5-20251101")
    assert opus == (5.0, 25.0, 0.5, 6.25) != price_of(table, "claude-opus-4-1-20250805")
    assert price_of(table, "gpt-5-mini-2025-08-07") == (0.25, 2.0, 0.025, 0.25) != price_of(table, "gpt-5-2025-08-07")
    assert price_of(table, "claude-haiku-4-5-20251001") == (1.0, 5.0, 0.1, 1.25)


@pytest.mark.parametrize(
    "model", ["o3-pro", "gpt-5-pro", "gpt-5.4", "gpt-5.4-mini", "claude-opus-4-7", "gpt-4o-audio-preview"]
)
def test_a_model_that_extends_an_entry_by_more_than_a_snapshot_is_unpriced(model):
    """Only snapshot suffixes (dates, -latest, -preview) inherit an entry's price: o3-pro costs ten times o3's, so
    another model's name is unpriced (the estimate says so) rather than priced as the entry it extends."""
    table = bundled_prices().models
    assert price_of(table, model) is None
    assert price_of(table, "o3-2025-04-16") == price_of(table, "o3-latest") == table["o3"]
    assert (
        price_of(table, "gpt-4-0613") == table["gpt-4"]
        and price_of(table, "gpt-4-turbo-preview") == table["gpt-4-turbo"]
    )


def _config(system_file, items_file, **changes):
    return RunConfig(
        f"{system_file}:build", data=str(items_file), backend="openai-compatible", model="gpt-4o-mini",
        iterations=1, **changes,
    )  # fmt: skip


def test_a_dry_run_is_priced_by_the_bundled_table_or_a_given_file(tmp_path, system_file, items_file):
    """A dry run's cost is its estimated tokens per role at the model's price, from the bundled table or --prices."""
    config = _config(system_file, items_file)
    table = bundled_prices()
    plan = dry_run(config, prices=table.models)
    low, high = table.models["gpt-4o-mini"][:2]  # its prompts are too short for a prompt cache
    assert plan.cost_usd == pytest.approx((plan.input_tokens * low + plan.output_tokens * high) / 1e6)
    mine = tmp_path / "prices.json"
    mine.write_text(json.dumps({"gpt-4o-mini": [100.0, 100.0]}))
    assert dry_run(config, prices=load_prices(str(mine)).models).cost_usd == pytest.approx(
        (plan.input_tokens + plan.output_tokens) * 100.0 / 1e6
    )
    mine.write_text(json.dumps({"gpt-4o-mini": "free"}))
    with pytest.raises(ValueError, match="price of 'gpt-4o-mini' must be"):
        load_prices(str(mine))


def test_the_confirmation_threshold_works_without_a_price_file(tmp_path, system_file, items_file):
    """With no --prices, the dry run before a real run is priced and a run above --confirm-above needs --yes."""
    result = semgrad(
        "run", f"{system_file}:build", "--data", str(items_file), "--backend", "openai-compatible",
        "--base-url", "http://127.0.0.1:9/v1", "--model", "gpt-4o-mini", "--confirm-above", "0",
        "--out", str(tmp_path / "o"),
    )  # fmt: skip
    one_line_error(result, "--yes")
    assert "estimated cost: $" in result.stdout and bundled_prices().date in result.stdout
    assert not (tmp_path / "o").exists()


def test_help_shows_the_defaults():
    """`semgrad run --help` shows the defaults of the options that have one."""
    text = " ".join(semgrad("run", "--help").stdout.split())
    for fragment in ("(default: 2)", "(default: neighbor-sgd)", "(default: 8)", "(default: exact)", "prices.json"):
        assert fragment in text
    for backend, model in DEFAULT_MODELS.items():  # the help names the models the backends default to
        assert f"{model} on {backend}" in text


def test_version():
    """`semgrad --version` prints the package version."""
    from semgrad import __version__

    assert semgrad("--version").stdout.strip() == f"semgrad {__version__}"


def test_show_prompts_prints_the_exact_first_requests_and_calls_nothing(tmp_path, system_file, items_file):
    """The first forward request --show-prompts prints is the one a run sends first; every purpose of the
    run is shown, and nothing is called or written."""
    config = RunConfig(f"{system_file}:build", data=str(items_file), iterations=1)
    shown = first_requests(config, 2)
    recorder = RecordingLLM(HashLLM())
    run_experiment(config, tmp_path / "real", llm=recorder)
    sent = [r for r in recorder.requests if r.purpose == "forward"][:2]
    assert shown["forward"] == sent
    assert set(shown) == set(recorder.counts()) and all(len(v) <= 2 for v in shown.values())
    result = semgrad("run", f"{system_file}:build", "--data", str(items_file), "--show-prompts", "1",
                     "--out", str(tmp_path / "o"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "===== forward #1: engine forward, node plan" in result.stdout and "----- user -----" in result.stdout
    assert sent[0].messages[-1].content in result.stdout
    assert "===== rewrite #1" in result.stdout and "===== forward #2" not in result.stdout
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("model", "price"),
    [
        ("gpt-4o-2024-05-13", (5.0, 15.0)),
        ("gpt-4-0125-preview", (10.0, 30.0)),
        ("gpt-4-1106-preview", (10.0, 30.0)),
        ("gpt-3.5-turbo-1106", (1.0, 2.0)),
        ("gpt-3.5-turbo-0613", (1.5, 2.0)),
    ],
)
def test_a_snapshot_sold_at_another_price_than_its_family_has_its_own(model, price):
    """Snapshots of a listed model that the provider prices apart (the first GPT-4o, GPT-4 Turbo's previews) are
    priced as sold, not as the family entry their name extends."""
    assert price_of(bundled_prices().models, model) == price
