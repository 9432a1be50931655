"""`plan(config) -> RunPlan`: a run's tasks and calls as a value, cheap on large data, read by `semgrad run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import semgrad.experiments._custom as custom
import semgrad.experiments._plan as planning
import semgrad.experiments._run as running
from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.cli import main
from semgrad.experiments import RunConfig, RunPlan, dry_run, plan, run_experiment
from tests.cli.conftest import SYSTEM, items


def _data(folder: Path, n: int) -> RunConfig:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "system.py").write_text(SYSTEM)
    (folder / "items.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items(n)))
    return RunConfig(f"{folder / 'system.py'}:build", data=str(folder / "items.jsonl"), iterations=1)


def _driven(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the purpose of every request the plan's stand-in LLM actually answers."""
    seen: list[str] = []
    answer = planning._Counter.__call__

    def counted(self, request):  # type: ignore[no-untyped-def]
        seen.append(request.purpose)
        return answer(self, request)

    monkeypatch.setattr(planning._Counter, "__call__", counted)
    return seen


def test_a_plan_scaled_from_a_sample_counts_the_calls_a_run_makes(tmp_path):
    """On 100 items (a test split of 60, above SAMPLE) a plan's calls per purpose are a run's; it writes nothing."""
    config = _data(tmp_path / "in", 100)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    planned = plan(config)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert [split for _, split in planned.scaled] == ["test", "initial_test"]
    rec = RecordingLLM(HashLLM())
    run_experiment(config, tmp_path / "run", llm=rec)
    assert planned.by_purpose() == dict(rec.counts())
    assert planned.total_calls == sum(planned.by_phase().values()) == len(rec.requests)


def test_a_scaled_plan_estimates_the_tokens_of_a_plan_that_drives_every_item(tmp_path, monkeypatch):
    """Scaling a split from SAMPLE items gives the same calls as driving all of them, and tokens within 5%."""
    config = _data(tmp_path, 300)
    scaled = plan(config)
    monkeypatch.setattr(planning, "SAMPLE", 10**9)
    whole = plan(config)
    assert scaled.scaled and not whole.scaled
    assert scaled.calls_by_phase == whole.calls_by_phase
    assert scaled.output_tokens == whole.output_tokens
    assert abs(scaled.input_tokens - whole.input_tokens) <= 0.05 * whole.input_tokens


def test_planning_twenty_thousand_items_drives_no_more_requests_than_two_thousand(tmp_path, monkeypatch):
    """The requests the plan drives stay the same from 2,000 to 20,000 items while its calls grow tenfold
    (the evaluation splits are scaled, not replayed), so planning is linear in reading the items alone."""
    driven = _driven(monkeypatch)
    small = plan(_data(tmp_path / "small", 2_000))
    at_small = len(driven)
    driven.clear()
    large = plan(_data(tmp_path / "large", 20_000))
    assert len(driven) == at_small
    assert large.by_phase()["train"] == small.by_phase()["train"]
    assert large.by_phase()["evaluate"] > 9 * small.by_phase()["evaluate"]
    assert at_small < small.total_calls / 10


def test_a_run_given_its_plan_loads_nothing_again_and_refuses_another_configs_plan(tmp_path, monkeypatch):
    """run_experiment(plan=...) runs the plan's tasks without loading the data again; a plan of another config
    is refused before anything is written."""
    config = _data(tmp_path / "in", 12)
    planned = plan(config)
    assert isinstance(planned, RunPlan) and planned.config == config
    with pytest.raises(ValueError, match="another config"):
        run_experiment(RunConfig(config.task, data=config.data, iterations=2), tmp_path / "other", plan=planned)
    assert not (tmp_path / "other").exists()

    def no_reading(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the data was read again")

    monkeypatch.setattr(custom, "read_items", no_reading)
    summary = run_experiment(config, tmp_path / "run", plan=planned)
    assert summary["tasks"][0]["sizes"] == {"train": 4, "validation": 0, "test": 8}


def test_semgrad_run_reads_the_data_once_trains_once_and_builds_one_llm(tmp_path, monkeypatch, capsys):
    """A `semgrad run` with progress (which plans) reads the data file once, calls fit once per task for real
    (the plan drives its own) and builds its LLM once: the run is not executed twice."""
    config = _data(tmp_path / "in", 12)
    reads, fits, builds = [], [], []
    read, fit, build = custom.read_items, running.fit, running.build_llm
    monkeypatch.setattr(custom, "read_items", lambda *a, **k: reads.append(1) or read(*a, **k))
    monkeypatch.setattr(running, "fit", lambda *a, **k: fits.append(1) or fit(*a, **k))
    monkeypatch.setattr(running, "build_llm", lambda *a, **k: builds.append(1) or build(*a, **k))
    code = main(["run", config.task, "--data", config.data, "--iterations", "1", "--out", str(tmp_path / "run")])
    assert code == 0, capsys.readouterr().err
    assert (len(reads), len(fits), len(builds)) == (1, 1, 1)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "checkpoint.json",
        "config.json",
        "journal.jsonl",
        "ledger.json",
        "report.html",
        "results.json",
    ]


def test_dry_run_is_the_table_of_the_plan(tmp_path):
    """dry_run(config) reports exactly the plan's calls, tokens and cost."""
    config = _data(tmp_path, 40)
    planned, report = plan(config, prices={"m": (1.0, 2.0)}), dry_run(config, prices={"m": (1.0, 2.0)})
    assert (report.calls, report.input_tokens, report.output_tokens, report.cost_usd) == (
        planned.calls,
        planned.input_tokens,
        planned.output_tokens,
        planned.cost_usd,
    )
    assert planned.preflight_calls == 3
