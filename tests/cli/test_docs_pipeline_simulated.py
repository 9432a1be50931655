"""The docs' own pipeline (docs/your-own-system.md) in the simulated world: offline, its scores rise above 0
under the method, and the ablations end differently from it (issue 33's acceptance)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from semgrad.experiments import RunConfig, run_experiment

from .test_docs_own_system import PAGE, page_parts

#: The method and the ablations compared with it on the page's system and items.
OPTIMIZERS = ("neighbor-sgd", "no-gradients", "no-neighbors", "textgrad")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each optimizer's task result on the page's my_system.py and items.json, simulated LLM, 4 iterations."""
    folder = tmp_path_factory.mktemp("docs-pipeline")
    files, _ = page_parts(PAGE.read_text("utf-8"))
    for name in ("my_system.py", "items.json"):
        Path(folder, name).write_text(files[name], "utf-8")
    found = {}
    for optimizer in OPTIMIZERS:
        config = RunConfig(
            task=f"{folder / 'my_system.py'}:build",
            data=str(folder / "items.json"),
            metric="numeric",
            optimizer=optimizer,
            iterations=4,
        )
        found[optimizer] = run_experiment(config, folder / optimizer, check_backend=False).to_json()["tasks"][0]
    return found


def test_the_docs_pipeline_rises_above_zero_under_the_method(outcomes):
    """The method lifts the page's pipeline from its initial score to above 0 on the training items and the test."""
    method = outcomes["neighbor-sgd"]
    assert method["accuracy"]["train"] > 0 and method["accuracy"]["test"] > 0
    assert method["accuracy"]["test"] > method["accuracy"]["initial_test"]


def test_each_ablation_ends_differently_from_the_method_on_the_docs_pipeline(outcomes):
    """No ablation ends with the method's scores and instructions: each removes something the method uses."""
    method = outcomes["neighbor-sgd"]
    for name in OPTIMIZERS[1:]:
        other = outcomes[name]
        assert (other["accuracy"], other["params"]["final"]) != (method["accuracy"], method["params"]["final"]), name
    assert outcomes["no-gradients"]["accuracy"]["test"] < method["accuracy"]["test"]
