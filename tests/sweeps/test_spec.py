"""Sweep specs: the grid, names and settings; every bad spec fails with one line, before anything starts."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.cli import main
from semgrad.experiments import RunConfig
from semgrad.sweeps import ModelSet, SweepError, check_sweep, load_spec, parse_spec, run_sweep

from ._helpers import DATA, GRID, ROOT, grid_spec, write_spec


def semgrad(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the command line in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "semgrad", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def one_line_error(result: subprocess.CompletedProcess, fragment: str) -> str:
    """Assert a non-zero exit with exactly one stderr line naming `fragment`."""
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("semgrad: error: ") and fragment in lines[0], lines[0]
    return lines[0]


def test_every_combination_is_one_run_with_a_stable_readable_name():
    """Tasks x seeds x optimizers expand in a fixed order, each a RunConfig with the shared settings."""
    spec = parse_spec({**GRID, "settings": {"iterations": 2, "train": 4, "backend": "simulated"}}, name="s")
    runs = spec.runs()
    assert len(runs) == 12
    assert runs[0].name == "bbh-navigate__seed0__neighbor-sgd"
    assert runs[-1].name == "gsm8k__seed1__tgd"
    assert len({run.name for run in runs}) == 12
    assert runs[5].config == RunConfig("bbh:boolean_expressions", seed=0, optimizer="tgd", iterations=2, train=4)


def test_task_groups_expand_and_relative_paths_resolve_against_the_spec(tmp_path):
    """bbh:all names the 27 BBH tasks; a relative data_dir is relative to the spec's folder."""
    path = write_spec(
        tmp_path / "paper.toml",
        {"tasks": ["bbh:all"], "seeds": [0], "optimizers": ["tgd"]},
        settings={"data_dir": "data"},
    )
    spec = load_spec(path)
    assert spec.name == "paper" and len(spec.runs()) == 27
    assert spec.settings["data_dir"] == str(tmp_path / "data")


def test_model_sets_per_role_fill_the_config_and_several_extend_the_grid():
    """[models] sets the model per role; several named sets add a dimension to the grid and to run names."""
    one = parse_spec(
        {"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["tgd"], "models": {"forward": "small", "backward": "big"}}
    )
    (run,) = one.runs()
    assert run.config.models() == {"forward": "small", "backward": "big"} and run.name == "gsm8k__seed0__tgd"
    two = parse_spec(
        {
            "tasks": ["gsm8k"],
            "seeds": [0],
            "optimizers": ["tgd"],
            "models": [{"name": "mini", "model": "gpt-4o-mini"}, {"name": "big", "model": "gpt-4o"}],
        }
    )
    assert [r.name for r in two.runs()] == ["gsm8k__seed0__tgd__mini", "gsm8k__seed0__tgd__big"]
    assert two.models[1] == ModelSet(name="big", model="gpt-4o")


def test_temperature_none_in_a_spec_sends_no_temperature():
    """settings.temperature = "none" (TOML has no null) gives runs whose requests carry no temperature; any other
    text is a SweepError."""
    spec = parse_spec({"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["tgd"], "settings": {"temperature": "none"}})
    (run,) = spec.runs()
    assert run.config.temperature is None and "temperature" not in run.config.sampling()["forward"]
    with pytest.raises(SweepError, match="temperature must be a number"):
        parse_spec({"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["tgd"], "settings": {"temperature": "cold"}})


def test_the_call_limit_is_kept_per_backend():
    """max_concurrent_calls as a number limits the sweep's backend; as a table, the backends it names."""
    spec = parse_spec({**GRID, "settings": {"backend": "openai-compatible", "max_concurrent_calls": 3}})
    assert dict(spec.max_concurrent_calls) == {"openai-compatible": 3}
    spec = parse_spec({**GRID, "settings": {"max_concurrent_calls": {"anthropic": 2, "simulated": 5}}})
    assert dict(spec.max_concurrent_calls) == {"anthropic": 2, "simulated": 5}


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({**GRID, "tasks": ["bbh:navigat"]}, "unknown task 'bbh:navigat'; valid names:"),
        ({**GRID, "optimizers": ["adam"]}, "unknown optimizer 'adam' in optimizers; choose from: neighbor-sgd"),
        ({**GRID, "seeds": []}, "the sweep is empty: seeds is an empty list"),
        ({**GRID, "tasks": []}, "the sweep is empty: tasks is an empty list"),
        ({"tasks": ["gsm8k"], "seeds": [0]}, "names no optimizers"),
        ({**GRID, "models": []}, "the sweep is empty: models is an empty list"),
        ({**GRID, "seeds": [0, 0]}, "seeds names 0 twice"),
        ({**GRID, "seeds": ["0"]}, "seeds must hold integers"),
        ({**GRID, "seed": [0]}, "unknown key 'seed' in the sweep spec"),
        ({**GRID, "settings": {"iteratons": 2}}, "unknown key 'iteratons' in [settings]"),
        ({**GRID, "settings": {"iterations": "2"}}, "settings.iterations must be an integer"),
        ({**GRID, "settings": {"backend": "openai"}}, "unknown backend 'openai'"),
        ({**GRID, "settings": {"k": 0}}, "invalid [settings]: --k must be at least 1"),
        ({**GRID, "settings": {"max_concurrent_calls": 0}}, "max_concurrent_calls must be a positive integer"),
        ({**GRID, "resources": {"cpus_per_run": 0}}, "resources.cpus_per_run must be a positive number"),
        ({**GRID, "models": [{"model": "a"}, {"model": "b"}]}, "give each a `name`"),
    ],
)
def test_a_bad_spec_is_one_sweep_error_naming_the_problem(data, fragment):
    """Unknown names, empty grids, wrong types and unknown keys are a SweepError whose one line names the problem."""
    with pytest.raises(SweepError) as info:
        parse_spec(data)
    message = str(info.value)
    assert fragment in message and "\n" not in message, message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("key", ["lease_seconds", "cpus_per_run"])
@pytest.mark.parametrize("value", ["inf", "nan"])
def test_resources_refuse_an_infinite_or_nan_number(tmp_path, key, value):
    """`lease_seconds = inf` or `cpus_per_run = nan` (TOML's own floats) is a SweepError, as 0 is."""
    path = tmp_path / "s.toml"
    path.write_text(f'tasks = ["gsm8k"]\nseeds = [0]\noptimizers = ["tgd"]\n[resources]\n{key} = {value}\n', "utf-8")
    with pytest.raises(SweepError, match=f"^resources.{key} must be a positive number, got {value}$"):
        load_spec(path)


def test_unreadable_and_malformed_files_are_sweep_errors(tmp_path):
    """A missing file, a folder, non-UTF-8 bytes and invalid TOML each give one line naming the file."""
    (tmp_path / "bad.toml").write_text("tasks = [\n", "utf-8")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00")
    cases = {
        tmp_path / "missing.toml": "cannot read the sweep spec",
        tmp_path: "cannot read the sweep spec",
        tmp_path / "binary.toml": "not UTF-8",
        tmp_path / "bad.toml": "is not valid TOML",
    }
    for path, fragment in cases.items():
        with pytest.raises(SweepError, match=fragment) as info:
            load_spec(path)
        assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_data_is_caught_before_any_run_directory_exists(tmp_path):
    """A data directory that does not exist fails the sweep before the sweep directory is created."""
    spec = parse_spec({**GRID, "settings": {"data_dir": str(tmp_path / "nope")}})
    out = tmp_path / "sweep"
    with pytest.raises(SweepError, match="does not exist"):
        run_sweep(spec, out, local=True)
    assert not out.exists()


def test_a_run_directory_of_another_config_is_refused_before_anything_starts(tmp_path):
    """A sweep directory holding a run of the same name but another config fails up front, naming the difference."""
    spec = load_spec(grid_spec(tmp_path / "s.toml"))
    run = spec.runs()[3]
    RunConfig(run.config.task, data_dir=str(DATA), seed=run.config.seed, optimizer=run.config.optimizer, k=3).save(
        tmp_path / "out" / run.name
    )
    with pytest.raises(SweepError, match="differs in k"):
        check_sweep(spec, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [run.name]


def test_a_sweep_is_never_written_into_a_folder_of_other_files(tmp_path):
    """A sweep refuses an --out holding files and no sweep, up front, and writes nothing there."""
    spec = load_spec(grid_spec(tmp_path / "s.toml"))
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "main.py").write_text("print('mine')\n")
    with pytest.raises(SweepError, match=r"project is not empty \(main.py\) and holds no sweep"):
        check_sweep(spec, mine)
    assert sorted(p.name for p in mine.iterdir()) == ["main.py"]
    (mine / ".gitkeep").write_text("")
    (mine / "main.py").unlink()
    assert check_sweep(spec, mine) == spec.runs()  # hidden entries alone: as good as empty
    (mine / "notes.txt").write_text("mine")
    (mine / spec.runs()[0].name).mkdir()  # a sweep's own folder: re-running it is fine, notes and all
    assert check_sweep(spec, mine) == spec.runs()


def test_too_large_splits_are_caught_before_anything_starts(tmp_path):
    """Split sizes the data cannot hold fail up front with the task and seed named."""
    spec = load_spec(grid_spec(tmp_path / "s.toml", train=100000))
    with pytest.raises(SweepError, match=r"^bbh:navigate \(seed 0\): "):
        check_sweep(spec, tmp_path / "out")


def test_a_parameter_no_task_has_is_caught_before_anything_starts(tmp_path):
    """A one-parameter run naming a parameter its task lacks fails the sweep up front, before any run folder."""
    grid = {"tasks": ["bbh:navigate"], "seeds": [0], "optimizers": ["tgd", "one-parameter:answer.instructions"]}
    spec = load_spec(grid_spec(tmp_path / "s.toml", grid))
    with pytest.raises(SweepError, match=r"^bbh-navigate__seed0__one-parameter-answer\.instructions: no trainable "):
        run_sweep(spec, tmp_path / "out", local=True)
    assert not (tmp_path / "out").exists()


def test_local_and_address_exclude_each_other(tmp_path):
    """--local with --address is refused before anything starts."""
    spec = parse_spec({"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["tgd"]})
    with pytest.raises(SweepError, match="--local"):
        run_sweep(spec, tmp_path / "o", local=True, address="auto")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({**GRID, "tasks": ["bbh:nope"]}, "unknown task 'bbh:nope'"),
        ({**GRID, "optimizers": ["sgd"]}, "unknown optimizer 'sgd'"),
        ({**GRID, "optimizers": []}, "the sweep is empty"),
    ],
)
def test_the_cli_prints_one_line_and_creates_nothing(tmp_path, spec, fragment):
    """`semgrad sweep` with a bad spec exits non-zero with one `semgrad: error:` line, and writes no directory."""
    path = write_spec(tmp_path / "s.toml", spec, settings={"data_dir": str(DATA)})
    one_line_error(semgrad("sweep", str(path), "--local", "--out", str(tmp_path / "out")), fragment)
    assert not (tmp_path / "out").exists()


def test_the_cli_refuses_a_number_of_cpus_below_one(tmp_path, capsys):
    """`semgrad sweep --num-cpus 0` is one error line, exit 1, before anything starts (as --max-parallel 0 is)."""
    spec = grid_spec(tmp_path / "s.toml", {**GRID, "tasks": ["gsm8k"], "seeds": [0]})
    assert main(["sweep", str(spec), "--local", "--num-cpus", "0", "--out", str(tmp_path / "out")]) == 1
    assert "semgrad: error: --num-cpus must be at least 1, got 0" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_cli_reports_an_unreadable_spec_in_one_line(tmp_path, capsys):
    """An unreadable spec file is one error line from main(), exit status 1."""
    assert main(["sweep", str(tmp_path / "none.toml"), "--local"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("semgrad: error: cannot read the sweep spec")


def test_without_ray_the_default_path_says_how_to_proceed(tmp_path, monkeypatch):
    """Without Ray installed, a non-local sweep fails before starting and suggests the extra or --local."""
    monkeypatch.setitem(sys.modules, "ray", None)
    spec = write_spec(
        tmp_path / "s.toml", {"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["tgd"]}, settings={"data_dir": str(DATA)}
    )
    expected = r"Ray is not installed: pip install -e '\.\[ray\]' in the semgrad checkout, or pass --local"
    with pytest.raises(SweepError, match=expected):
        run_sweep(spec, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_spec_without_iterations_runs_each_task_for_the_papers():
    """A sweep that sets no iterations gives each run the paper's for its task (LIAR 8, the others 4), as
    `semgrad run` does; a spec's own iterations win."""
    spec = parse_spec({"tasks": ["bbh:navigate", "gsm8k", "liar"], "seeds": [0], "optimizers": ["tgd"]})
    assert {run.config.task: run.config.iterations for run in spec.runs()} == {
        "bbh:navigate": 4,
        "gsm8k": 4,
        "liar": 8,
    }
    set_here = parse_spec({"tasks": ["liar"], "seeds": [0], "optimizers": ["tgd"], "settings": {"iterations": 2}})
    assert [run.config.iterations for run in set_here.runs()] == [2]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["bbh:snarks", "bbh:hyperbaton", "bbh:navigate", "gsm8k"]),
            st.floats(0, 1),
            st.integers(1, 300),
        ),
        min_size=1,
        max_size=8,
        unique_by=lambda t: t[0],
    )
)
def test_sweep_averages_weigh_tasks_by_their_test_items_and_the_unweighted_ones_do_not(tasks):
    """sweep.json's averages are item-weighted per group, as `run bbh:all` and the paper report BBH; the unweighted
    means sit beside them."""
    from semgrad.experiments._averages import task_averages
    from semgrad.sweeps._summary import averages
    from semgrad.tasks import bbh_category

    def category(task):
        return bbh_category(task.split(":")[1]) if task.startswith("bbh:") else None

    rows = [
        {"task": t, "category": category(t), "optimizer": "tgd", "accuracy": {"test": a}, "test_items": n}
        for t, a, n in tasks
    ]
    as_run = [{"category": r["category"], "accuracy": r["accuracy"], "sizes": {"test": r["test_items"]}} for r in rows]
    weighted, plain = task_averages(as_run)
    ours, ours_plain = averages(rows)["tgd"], averages(rows, weighted=False)["tgd"]
    for group, key in (("nlp", "bbh_nlp"), ("algorithmic", "bbh_algorithmic"), ("overall", "overall")):
        for mine, theirs in ((ours[key], weighted[group]), (ours_plain[key], plain[group])):
            assert (mine is None and theirs is None) or abs(mine - theirs) < 1e-9


def test_a_failed_run_takes_only_its_own_variant_s_group_average_away():
    """A variant whose run of one task failed has no average over that task's groups; the other variants keep
    theirs, item-weighted by the task's size that its other runs report."""
    from semgrad.sweeps._summary import averages

    def row(task, optimizer, test, size):
        return {"task": task, "category": "nlp", "optimizer": optimizer, "accuracy": {"test": test}, "test_items": size}

    rows = [
        row("bbh:snarks", "neighbor-sgd", 1.0, 30),
        row("bbh:hyperbaton", "neighbor-sgd", 0.0, 10),
        row("bbh:snarks", "tgd", 0.5, 30),
        row("bbh:hyperbaton", "tgd", None, None),  # failed: no score, no size
    ]
    for weighted, full in ((True, 0.75), (False, 0.5)):
        found = averages(rows, weighted=weighted)
        assert found["neighbor-sgd"]["bbh_nlp"] == found["neighbor-sgd"]["overall"] == full
        assert found["tgd"]["bbh_nlp"] is None and found["tgd"]["overall"] is None  # not snarks' 0.5 alone
    seeds = [
        row("bbh:snarks", "tgd", None, None),
        row("bbh:snarks", "tgd", 1.0, 30),
        row("bbh:hyperbaton", "tgd", 0.0, 10),
    ]
    assert averages(seeds)["tgd"]["bbh_nlp"] == 0.75  # a failed seed leaves the task's size known
