"""`semgrad run --gate-rule lcb --gate-alpha A`: the noise-aware gate from the command line."""

from __future__ import annotations

import json

import pytest

from semgrad.experiments import RunConfig

from .conftest import one_line_error, semgrad


def test_run_with_the_lcb_gate_keeps_the_rule_in_config_json_and_its_verdicts_in_the_results(
    tmp_path, system_file, items_file
):
    """--gate-rule lcb --gate-alpha 0.1: config.json keeps both, and every iteration's gate report in
    results.json gives the lcb bound behind its verdict."""
    out = tmp_path / "run"
    flags = ["--gate-rule", "lcb", "--gate-alpha", "0.1", "--iterations", "2", "--out", str(out)]
    result = semgrad("run", str(system_file), "--data", str(items_file), *flags, "-q")
    assert result.returncode == 0, result.stderr
    config = json.loads((out / "config.json").read_text())
    assert (config["gate_rule"], config["gate_alpha"]) == ("lcb", 0.1)
    (task,) = json.loads((out / "results.json").read_text())["tasks"]
    gates = [notes for record in task["iterations"] for stage, notes in record["report"] if stage == "validation_gate"]
    assert len(gates) == 2
    assert all(" rule lcb: paired gain " in notes[0] and "90% bound" in notes[0] for notes in gates), gates


def test_the_lcb_rule_for_an_optimizer_without_the_gate_is_refused_in_one_line(tmp_path, system_file, items_file):
    """--gate-rule lcb with an optimizer that has no validation gate (textgrad) is refused before anything runs."""
    result = semgrad(
        "run", str(system_file), "--data", str(items_file), "--optimizer", "textgrad", "--gate-rule", "lcb"
    )
    one_line_error(result, "--gate-rule lcb is for the optimizers with a validation gate: neighbor-sgd")


@pytest.mark.parametrize("alpha", [0.0, 0.6, float("nan")])
def test_a_gate_alpha_out_of_range_is_refused(alpha):
    """A level outside [1e-9, 0.5] (or NaN) is no config: it would be refused by the gate after the first calls."""
    with pytest.raises(ValueError, match="--gate-alpha must be from 1e-09 to 0.5"):
        RunConfig("gsm8k", gate_rule="lcb", gate_alpha=alpha)
