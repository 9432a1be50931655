"""A re-run sweep trusts nothing its run folders hold: tampered results and symlinked folders fail their run alone."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from semgrad.cli import main
from semgrad.sweeps import SweepError, run_sweep

from ._helpers import grid_spec

GRID = {"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["neighbor-sgd", "tgd"]}
TAMPERED = "gsm8k__seed0__tgd"


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-run sweep (``out``) and its spec (``s.toml``); tests work on copies of ``out``."""
    root = tmp_path_factory.mktemp("finished")
    spec = grid_spec(root / "s.toml", GRID, iterations=1, train=2, validation=2, test=2)
    result = run_sweep(spec, root / "out", local=True)
    assert not result.failed and (root / "out" / TAMPERED / "results.json").is_file()
    return root


@pytest.fixture
def sweep(finished: Path, tmp_path: Path) -> Path:
    """A copy of the finished sweep directory."""
    return Path(shutil.copytree(finished / "out", tmp_path / "out", symlinks=True))


def _strict_json(path: Path) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{path} holds {constant}, which is not JSON")

    return json.loads(path.read_text("utf-8"), parse_constant=refuse)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_run_folder_symlinked_outside_the_sweep_fails_and_nothing_is_written_there(finished, sweep, tmp_path):
    """A run folder replaced by a symlink to a folder outside the sweep fails that run with one line; the outside
    folder is left as it was, the other run is skipped, and sweep.json is written."""
    outside = tmp_path / "outside"
    shutil.move(sweep / TAMPERED, outside)
    (outside / "results.json").unlink()
    os.symlink(outside, sweep / TAMPERED)
    before = _snapshot(outside)
    result = run_sweep(finished / "s.toml", sweep, local=True)
    assert [o.status for o in result.outcomes] == ["skipped", "failed"]
    error = result.failed[0].error
    assert "\n" not in error and str(sweep / TAMPERED) in error and "symbolic link" in error
    assert _snapshot(outside) == before and "results.json" not in before
    summary = _strict_json(sweep / "sweep.json")
    assert summary["totals"]["failed"] == 1 and summary["runs"][1]["accuracy"]["test"] is None


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(results: dict[str, Any]) -> None:
        target: Any = results
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _stopped_with_text_score(results: dict[str, Any]) -> None:
    results["tasks"][0]["accuracy"]["test"] = "abc"
    results["tasks"][0]["stopped"] = results["stopped"] = "budget"


TAMPERINGS = {
    "nan": (_set(("tasks", 0, "accuracy", "test"), float("nan")), "tasks[0].accuracy.test"),
    "huge": (_set(("tasks", 0, "accuracy", "test"), 1e308), "tasks[0].accuracy.test"),
    "above-one": (_set(("tasks", 0, "accuracy", "train"), 1.5), "tasks[0].accuracy.train"),
    "text-score-stopped": (_stopped_with_text_score, "tasks[0].accuracy.test"),
    "calls-array": (_set(("calls",), []), "calls must be an object"),
    "calls-text": (_set(("calls", "by_purpose", "forward"), "x"), "calls.by_purpose.forward"),
    "calls-negative": (_set(("calls", "by_purpose", "forward"), -5), "calls.by_purpose.forward"),
    "tokens-float": (_set(("tokens", "input"), 1.5), "tokens.input"),
    "cost-infinite": (_set(("cost_usd",), float("inf")), "cost_usd"),
    "iterations-text": (_set(("tasks", 0, "iterations"), "abcd"), "tasks[0].iterations"),
    "errors-bool": (_set(("errors",), True), "errors"),
}


@pytest.mark.parametrize("tampering", list(TAMPERINGS))
def test_a_tampered_results_json_fails_its_run_alone(finished, sweep, tampering):
    """A run whose results.json holds a score outside [0, 1] (NaN, 1e308, text), a count that is not a
    non-negative integer or a container of the wrong type is not skipped as finished: it fails with one line
    naming the file and the field, the file is left as it is, and the sweep writes a valid sweep.json."""
    change, field = TAMPERINGS[tampering]
    path = sweep / TAMPERED / "results.json"
    results = json.loads(path.read_text("utf-8"))
    change(results)
    path.write_text(json.dumps(results), "utf-8")
    tampered = path.read_bytes()
    result = run_sweep(finished / "s.toml", sweep, local=True)
    assert [o.status for o in result.outcomes] == ["skipped", "failed"]
    error = result.failed[0].error
    assert "\n" not in error and f"{path}: " in error and field in error, error
    assert result.failed[0].test is None and path.read_bytes() == tampered
    summary = _strict_json(sweep / "sweep.json")
    assert summary["totals"]["failed"] == 1 and summary["runs"][1]["calls"] is None
    assert all(v is None or 0 <= v <= 1 for variant in summary["averages"].values() for v in variant.values())
    assert (sweep / "sweep.html").is_file()


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"tasks": []}', "[" * 100_000])
def test_an_unreadable_results_json_fails_its_run_alone(finished, sweep, content):
    """A results.json that is not JSON, not an object, has no task, or nests too deeply fails its run (one line
    naming the file) instead of being resumed over; the other run is skipped."""
    path = sweep / TAMPERED / "results.json"
    path.write_text(content, "utf-8")
    result = run_sweep(finished / "s.toml", sweep, local=True)
    assert [o.status for o in result.outcomes] == ["skipped", "failed"]
    assert "\n" not in result.failed[0].error and f"{path}: " in result.failed[0].error
    assert path.read_text("utf-8") == content and _strict_json(sweep / "sweep.json")["totals"]["failed"] == 1


def test_the_cli_reports_a_tampered_score_as_a_failed_run(finished, sweep, capsys):
    """`semgrad sweep` over a run whose results.json says its test accuracy is NaN exits 1 with one line naming
    the file; it never prints the tampered score as a skipped run's."""
    path = sweep / TAMPERED / "results.json"
    results = json.loads(path.read_text("utf-8"))
    results["tasks"][0]["accuracy"]["test"] = float("nan")
    path.write_text(json.dumps(results), "utf-8")
    assert main(["sweep", str(finished / "s.toml"), "--local", "--out", str(sweep)]) == 1
    err = capsys.readouterr().err
    assert f"{TAMPERED}: failed: SweepError: {path}: tasks[0].accuracy.test" in err
    assert "nan" not in err.replace("got nan", "") and err.strip().splitlines()[-1].startswith("semgrad: error: 1 of 2")
    with pytest.raises(SweepError, match="1 of 2 runs failed"):
        main(["--debug", "sweep", str(finished / "s.toml"), "--local", "--out", str(sweep), "-q"])


def test_a_fifo_in_place_of_a_run_s_results_fails_that_run_without_hanging(finished, sweep):
    """A FIFO where a run's results.json should be fails that run with one line naming it (the read does not
    block waiting for a writer); the other run is skipped as finished."""
    path = sweep / TAMPERED / "results.json"
    path.unlink()
    os.mkfifo(path)
    result = run_sweep(finished / "s.toml", sweep, local=True)
    assert [o.status for o in result.outcomes] == ["skipped", "failed"]
    assert "results.json" in result.outcomes[1].error and "not a regular file" in result.outcomes[1].error


@pytest.mark.timeout(30)
@pytest.mark.parametrize("make", ["fifo", "dev-zero", "nested"])
def test_a_run_s_config_json_that_is_no_file_or_nests_too_deeply_stops_the_sweep_with_one_line_naming_it(
    finished, sweep, make
):
    """A FIFO, /dev/zero or deeply nested JSON as a run's config.json stops the sweep with one line naming it."""
    path = sweep / TAMPERED / "config.json"
    path.unlink()
    if make == "fifo":
        os.mkfifo(path)
    elif make == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text("[" * 100_000 + "]" * 100_000, "utf-8")
    with pytest.raises(SweepError) as caught:
        run_sweep(finished / "s.toml", sweep, local=True)
    assert str(caught.value).startswith(f"cannot read {path}: ") and "\n" not in str(caught.value)


class _LoseOneItem:
    """Fails (for good) the forward calls of one test item of the tgd run: a few calls out of many."""

    def __call__(self, llm, name, run_dir):
        from semgrad.backends.fake import FunctionLLM
        from semgrad.core import LLMError, LLMFailure
        from semgrad.effects._routing import call

        async def maybe_fail(request):
            if name == TAMPERED and request.purpose == "forward" and request.sample == self.item:
                raise LLMFailure(LLMError("bad_request", "refused by the server"))
            return await call(llm, request)

        return FunctionLLM(maybe_fail)


def test_sweep_html_says_how_many_calls_of_a_run_got_no_reply(tmp_path):
    """A run that lost calls (under the share that fails it) says how many, by kind, on its row of sweep.html."""
    from semgrad.experiments import load_run_tasks
    from semgrad.sweeps import load_spec

    spec = load_spec(grid_spec(tmp_path / "s.toml", GRID, iterations=1, train=4, test=3))
    instrument = _LoseOneItem()
    instrument.item = load_run_tasks(spec.runs()[1].config)[0].split.test[0].id
    result = run_sweep(spec, tmp_path / "out", local=True, instrument=instrument)
    assert not result.failed and [o.errors for o in result.outcomes][0] == 0
    lost = result.outcomes[1].errors
    page = (tmp_path / "out" / "sweep.html").read_text("utf-8")
    assert lost and f'<td class="error">{lost} calls without a reply (bad_request {lost})</td>' in page
    assert page.count("calls without a reply") == 1
