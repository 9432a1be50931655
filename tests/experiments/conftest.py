"""Every results.json a test in this folder leaves in its tmp_path reads back into a RunSummary unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from semgrad.experiments import RunSummary


@pytest.fixture(autouse=True)
def results_round_trip(request: pytest.FixtureRequest) -> Iterator[None]:
    """After the test: to_json(from_json(x)) == x for each results.json under its tmp_path that a run wrote
    (one a test tampered with, which from_json refuses, is left out)."""
    folder = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if folder is None:
        return
    for path in folder.rglob("results.json"):
        data = json.loads(path.read_text("utf-8"))
        try:
            summary = RunSummary.from_json(data)
        except ValueError:
            continue
        assert summary.to_json() == data, path
