"""The documented sweep spec for the paper's LIAR table (docs/liar-ablations.toml) is valid and complete."""

from __future__ import annotations

from pathlib import Path

import pytest

from semgrad.experiments import make_optimizer
from semgrad.sweeps import SweepError, load_spec, parse_spec
from semgrad.topologies import liar_graph

ROOT = Path(__file__).resolve().parents[2]


def test_the_documented_liar_spec_runs_the_papers_table():
    """Full, no gradients, no neighbours, each of the six LIAR parameters alone and no gate: 10 runs of 8
    iterations under the official protocol on the shared data, each with a valid optimizer for the LIAR graph;
    the README points to the spec."""
    spec = load_spec(ROOT / "docs" / "liar-ablations.toml")
    assert "docs/liar-ablations.toml" in (ROOT / "README.md").read_text("utf-8")
    assert Path(spec.runs()[0].config.data_dir).resolve() == (ROOT.parent / "shared" / "data").resolve()
    runs = spec.runs()
    _, params = liar_graph()
    assert [r.config.optimizer for r in runs] == [
        "neighbor-sgd",
        "no-gradients",
        "no-neighbors",
        *["one-parameter"] * 6,
        "no-gate",
    ]
    assert [r.config.param for r in runs if r.config.param] == list(params.trainable())
    assert all(r.config.task == "liar" and r.config.iterations == 8 and r.config.protocol == "official" for r in runs)
    assert len({r.name for r in runs}) == len(runs) and all(":" not in r.name for r in runs)
    for run in runs:
        make_optimizer(run.config).init(params)  # an unknown parameter name would raise here


def test_one_parameter_in_a_spec_needs_a_name():
    """A spec's bare one-parameter, or a parameter on another optimizer, is a one-line error."""
    base = {"tasks": ["liar"], "seeds": [0]}
    with pytest.raises(SweepError, match="one-parameter:NAME"):
        parse_spec({**base, "optimizers": ["one-parameter"]})
    with pytest.raises(SweepError, match="only one-parameter takes a parameter"):
        parse_spec({**base, "optimizers": ["no-gate:answer.instruction"]})


def test_a_liar_run_scored_on_its_training_items_shows_train_accuracy_in_the_sweep():
    """A run scored on train (LIAR, official protocol) puts its train accuracy in by_task and the chart, marked
    '(train)'; a results.json that says anything else for scored_on counts as test."""
    from semgrad.sweeps._execute import run_row
    from semgrad.sweeps._page import render_sweep
    from semgrad.sweeps._summary import by_task, scored_on

    (run,) = parse_spec({"tasks": ["liar"], "seeds": [0], "optimizers": ["tgd"]}).runs()
    accuracy = {"train": 0.82, "validation": None, "test": 0.61, "initial_test": 0.5}
    row = run_row(run, {"tasks": [{"accuracy": accuracy, "scored_on": "train"}], "calls": {"by_purpose": {}}})
    assert row["scored_on"] == "train" and by_task([row]) == {"liar": {"tgd": 0.82}}
    for hostile in ("TRAIN", ["train"], None, 7):
        other = run_row(run, {"tasks": [{"accuracy": accuracy, "scored_on": hostile}], "calls": {"by_purpose": {}}})
        assert other["scored_on"] == "test" and by_task([other]) == {"liar": {"tgd": 0.61}}
    page = render_sweep(
        {"sweep": {"name": "s"}, "runs": [row], "by_task": by_task([row]), "scored_on": scored_on([row])}
    )
    assert "liar (train)" in page and "82.0 % (train accuracy)" in page


def test_the_sweep_chart_tells_a_zero_score_from_no_score():
    """A score of 0 draws a visible bar on the axis; a variant that ran with no score draws a dash, never a bar."""
    from semgrad.sweeps._chart import optimizer_chart

    svg = optimizer_chart({"liar": {"full": 0.0, "no-gradients": None}})
    (zero,) = [line for line in svg.splitlines() if "full: 0.0 %" in line]
    assert zero.startswith("<rect") and float(zero.split('height="')[1].split('"')[0]) >= 1.5
    (missing,) = [line for line in svg.splitlines() if "no-gradients: no score" in line]
    assert missing.startswith("<text") and svg.count("<rect") == 3  # two legend swatches and the zero bar
