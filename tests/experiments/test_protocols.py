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
    """`RunConfig` defaults to the official protocol, and a real run (a recording fake) makes at most the calls
    the dry run reports for it, purpose by purpose: its memo answers an identical request of the training loop
    again without a call, and a redrawn item keeps its feedback, which the dry run does not count on."""
    config = RunConfig("bbh:navigate", data_dir=str(DATA), iterations=2, train=6, test=5)
    assert config.protocol == "official"
    rec = RecordingLLM(HashLLM())
    run_experiment(config, tmp_path / "run", llm=rec)
    evaluation = 3 * (6 + 5 + 5)  # the final train and test scores, and the initial test score
    counts = dict(rec.counts())
    planned = dry_run_protocols(config)["official"].by_purpose()
    assert planned == {"forward": 3 * 6 * 3 + evaluation, "backward": 4, "rewrite": 6}
    assert set(counts) == set(planned) and all(counts[p] <= planned[p] for p in planned), (counts, planned)
    # Here the memo answers some forward requests (a hint whose instruction the rewrite left as it was is asked
    # the same question again); every backward and rewrite request differs.
    assert counts["forward"] < planned["forward"] and counts["backward"] == 4 and counts["rewrite"] == 6


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


def _states(state):
    """Every stage state inside an optimizer state (chains nest them in tuples)."""
    if isinstance(state, tuple):
        return [s for part in state for s in _states(part)]
    inner = getattr(state, "inner", None)
    return [state, *(_states(inner) if inner is not None else [])]


@pytest.mark.parametrize("optimizer", ["neighbor-sgd", "no-gate", "no-neighbours-as-run"])
def test_the_official_protocol_reuses_a_redrawn_samples_feedback_and_its_plan_does_not(optimizer):
    """Issue 31 point 3: ``--protocol official`` keeps a redrawn sample's feedback (its backward stage holds the
    replies), the held-out protocol and the plan's optimizer (an upper bound on calls) ask again."""
    from semgrad.core.optim import BackwardState
    from semgrad.experiments import make_optimizer
    from semgrad.topologies import paper_graph

    _, params = paper_graph()
    official = RunConfig("bbh:navigate", optimizer=optimizer, protocol="official")

    def keeps(config, **options):
        return any(isinstance(s, BackwardState) for s in _states(make_optimizer(config, **options).init(params)))

    assert keeps(official)
    assert not keeps(official, planning=True)
    assert not keeps(attrs.evolve(official, protocol="heldout"))


@pytest.mark.parametrize("k", [1, 2, 5])
def test_official_textgrad_draws_its_scripts_batch_whatever_k_says(k):
    """Issue 31 point 11: TextGrad under ``--protocol official`` backpropagates a batch of `optim.TEXTGRAD_BATCH`
    (3, TextGrad's script's default and `optim.textgrad`'s) items, whatever ``--k``; held-out keeps ``--k``."""
    import inspect

    from semgrad.core import Example, optim
    from semgrad.effects import fit_sync
    from semgrad.experiments import make_optimizer
    from semgrad.topologies import paper_graph

    assert optim.TEXTGRAD_BATCH == 3
    assert inspect.signature(optim.textgrad).parameters["k"].default == optim.TEXTGRAD_BATCH
    train = [Example({"question": f"What is {i} + {i}?"}, str(2 * i), id=str(i)) for i in range(8)]
    for protocol, batch in (("official", optim.TEXTGRAD_BATCH), ("heldout", k)):
        graph, params = paper_graph()
        config = RunConfig("bbh:navigate", optimizer="textgrad", protocol=protocol, k=k)
        result = fit_sync(graph, params, make_optimizer(config), train=train, llm=HashLLM(), iterations=1)
        notes = next(r.notes for r in result.history[0].report if r.stage == "sample_batch")
        assert f"{batch} items" in notes[0], (protocol, notes)
