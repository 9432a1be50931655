"""The official and held-out protocols of `semgrad run`: what each costs, in a dry run and on the CLI."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from semgrad.backends.fake import HashLLM, RecordingLLM
from semgrad.cli import main
from semgrad.experiments import RunConfig, dry_run_protocols, load_run_tasks, run_experiment

from .._data import data_dir

ROOT = Path(__file__).resolve().parents[2]
DATA = data_dir()


def test_dry_run_reports_each_protocols_counts():
    """Official: 3N forward once, then 3N per iteration; held-out: 3N + 3V per iteration plus 3V once;
    both make k backward and 3 rewrites per iteration."""
    config = RunConfig(
        "bbh:navigate", data_dir=str(DATA), iterations=2, train=6, validation=4, test=5, protocol="heldout"
    )
    reports = dry_run_protocols(config)
    (task,) = load_run_tasks(config)
    n, v, t = len(task.split.train), len(task.split.validation), len(task.split.test)
    assert (n, v, t) == (6, 4, 5)
    # After the run both score the train, validation (held-out only), test and initial test splits.
    assert reports["official"].by_purpose() == {"forward": 3 * n * 3 + 3 * (n + 2 * t), "backward": 4, "rewrite": 6}
    assert reports["heldout"].by_purpose() == {
        "forward": 2 * (3 * n + 3 * v) + 3 * v + 3 * (n + v + 2 * t),
        "backward": 4,
        "rewrite": 6,
    }


def test_the_official_protocol_is_the_default_and_a_run_makes_its_counts(tmp_path):
    """`RunConfig` defaults to the official protocol, and a real run (a recording fake) makes the counts the
    dry run reports for it."""
    config = RunConfig("bbh:navigate", data_dir=str(DATA), iterations=2, train=6, test=5)
    assert config.protocol == "official"
    rec = RecordingLLM(HashLLM())
    run_experiment(config, tmp_path / "run", llm=rec)
    evaluation = 3 * (6 + 5 + 5)  # the final train and test scores, and the initial test score
    counts = dict(rec.counts())
    assert counts == dry_run_protocols(config)["official"].by_purpose()
    assert counts == {"forward": 3 * 6 * 3 + evaluation, "backward": 4, "rewrite": 6}


def test_an_unknown_protocol_is_refused():
    """RunConfig names the valid protocols when given another."""
    with pytest.raises(ValueError, match="official, heldout"):
        RunConfig("gsm8k", protocol="paper")


def test_cli_protocol_flag_and_dry_run_table(capsys):
    """`semgrad run --protocol heldout --dry-run` runs, and prints a line per protocol with its total."""
    args = ["run", "bbh:navigate", "--data-dir", str(DATA), "--iterations", "1", "--train", "4", "--validation", "2"]
    assert main([*args, "--protocol", "heldout", "--dry-run"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()]
    lines = {row[0]: row for row in rows if row[:1] in (["official"], ["heldout"])}
    reports = dry_run_protocols(
        RunConfig("bbh:navigate", data_dir=str(DATA), iterations=1, train=4, validation=2, protocol="heldout")
    )
    assert lines["official"][-1] == str(reports["official"].total_calls)
    assert lines["heldout"][-1] == str(reports["heldout"].total_calls)
    assert "this run: heldout" in out


def test_a_known_dry_run_stands_for_its_own_protocol_and_no_other():
    """`dry_run_protocols(config, known=dry_run(config))` equals the plain call: the known report is taken for
    the variant that is the config itself, and the other protocol is still run."""
    from semgrad.experiments import dry_run

    heldout = RunConfig("bbh:navigate", data_dir=str(DATA), iterations=1, train=4, validation=3, test=3)
    heldout = attrs.evolve(heldout, protocol="heldout")
    plain = dry_run_protocols(heldout)
    known = dry_run(heldout)
    assert set(plain) == {"official", "heldout"} and plain["official"] != plain["heldout"]
    reused = dry_run_protocols(heldout, known=known)
    assert reused == plain and reused["heldout"] is known and reused["official"] is not known
    official = attrs.evolve(heldout, protocol="official", validation=None)
    assert dry_run_protocols(official, known=dry_run(official))["official"] == plain["official"]


def test_backward_calls_run_on_the_optimizer_model_unless_one_is_named():
    """As the official code (one optimizer model for backward and rewrite calls): --optimizer-model serves backward
    calls too, --backward-model overrides it, and --model alone serves every role."""
    from semgrad.experiments._prices import model_for

    paper = RunConfig("gsm8k", backend="openai-compatible", model="gpt-4o-mini", optimizer_model="gpt-4-turbo")
    assert [model_for(paper, role) for role in ("forward", "backward", "optimizer")] == [
        "gpt-4o-mini",
        "gpt-4-turbo",
        "gpt-4-turbo",
    ]
    own = attrs.evolve(paper, backward_model="gpt-4o")
    assert model_for(own, "backward") == "gpt-4o" and model_for(own, "optimizer") == "gpt-4-turbo"
    alone = RunConfig("gsm8k", backend="openai-compatible", model="gpt-4o-mini")
    assert {model_for(alone, role) for role in ("forward", "backward", "optimizer")} == {"gpt-4o-mini"}
