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
