"""`semgrad compare`: the baselines from the command line, side by side, dry runs first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semgrad.cli import main
from semgrad.experiments import OPTIMIZERS, RunConfig, compare, make_optimizer, parse_optimizers
from semgrad.sweeps import parse_spec

from .._data import data_dir

ROOT = Path(__file__).resolve().parents[2]
DATA = data_dir()
SMALL = ["--train", "4", "--validation", "2", "--test", "3", "--iterations", "2", "--breadth", "3"]


@pytest.mark.parametrize("name", ["textgrad", "optoprime", "copro"])
def test_baselines_are_optimizers_of_runs_and_sweeps(name):
    """Each baseline is a `--optimizer` choice, builds its chain, and is accepted by a sweep spec."""
    assert name in OPTIMIZERS
    assert name.replace("optoprime", "optoprime_update") in make_optimizer(RunConfig("gsm8k", optimizer=name)).name
    spec = parse_spec({"tasks": ["gsm8k"], "seeds": [0], "optimizers": [name], "settings": {"breadth": 3}})
    assert spec.runs()[0].config.optimizer == name and spec.runs()[0].config.breadth == 3


def test_parse_optimizers_rejects_unknown_names():
    """An unknown optimizer name is a one-line error naming the choices."""
    with pytest.raises(ValueError, match="unknown optimizer 'adam'; choose from: neighbor-sgd"):
        parse_optimizers("textgrad,adam")


def test_dry_run_gives_each_methods_calls_before_anything_is_called(tmp_path, capsys):
    """`compare --dry-run` prints each method's calls by purpose and writes nothing."""
    out = tmp_path / "cmp"
    code = main(["compare", "bbh:navigate", "--data-dir", str(DATA), "--dry-run", "--out", str(out), "-q", *SMALL])
    printed = capsys.readouterr().out
    assert code == 0 and not out.exists()
    rows = {line.split("|")[1].strip(): line for line in printed.splitlines() if line.startswith("| ")}
    assert set(rows) >= {"neighbor-sgd", "textgrad", "optoprime", "copro"}
    summary = compare(
        RunConfig("bbh:navigate", data_dir=str(DATA), train=4, validation=2, test=3, iterations=2, breadth=3),
        ["textgrad", "optoprime"],
        out,
        dry_run_only=True,
    )
    by_name = {m["optimizer"]: m["calls_by_purpose"] for m in summary["methods"]}
    assert by_name["textgrad"]["backward"] == 2 * 6 * 2 and by_name["textgrad"]["rewrite"] == 2 * 3
    assert by_name["optoprime"]["rewrite"] == 2 and "backward" not in by_name["optoprime"]


def test_compare_on_the_simulated_backend_writes_one_table_and_chart(tmp_path, capsys):
    """`compare` runs every method on the same splits and seed and writes compare.json, .md and .html."""
    out = tmp_path / "cmp"
    code = main(
        ["compare", "bbh:navigate", "--data-dir", str(DATA), "--optimizers", "neighbor-sgd,textgrad,optoprime,copro",
         "--out", str(out), "-q", *SMALL]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    summary = json.loads((out / "compare.json").read_text())
    assert summary["simulated"] is True
    assert [m["optimizer"] for m in summary["methods"]] == ["neighbor-sgd", "textgrad", "optoprime", "copro"]
    sizes = {json.dumps(json.loads((out / m / "results.json").read_text())["tasks"][0]["sizes"]) for m in
             ("neighbor-sgd", "textgrad", "optoprime", "copro")}  # fmt: skip
    assert len(sizes) == 1
    for method in summary["methods"]:
        assert len(method["scores"]) == 3 and method["wall_s"] >= 0
        assert sum(method["calls_by_purpose"].values()) == method["calls"]
        assert set(method["tokens_by_purpose"]) == set(method["calls_by_purpose"])
    table = (out / "compare.md").read_text()
    page = (out / "compare.html").read_text()
    assert sum(line.startswith("| ") for line in table.splitlines()) == 5 and "backward calls" in table
    assert "<polyline" in page and "SIMULATED" in page and "<script" not in page
    for name in ("neighbor-sgd", "textgrad", "optoprime", "copro"):  # each row opens its method's report
        assert f'<a href="{name}/report.html">' in page and (out / name / "report.html").is_file()
    # Both say what the scores are: task, protocol, split sizes (as the runs had them), seed and iterations.
    caption = "Task bbh:navigate, heldout protocol, 4 training / 2 validation / 3 test items, seed 0, 2 iterations"
    assert table.startswith(caption) and caption in page
    assert summary["protocol"] == "heldout" and summary["sizes"] == json.loads(sizes.pop())


def test_compare_caps_each_method_and_says_when_one_stopped(tmp_path, capsys):
    """With --max-calls, no method's run sends more requests than the cap; a stopped method is named, exit 3."""
    out = tmp_path / "cmp"
    code = main(
        ["compare", "bbh:navigate", "--data-dir", str(DATA), "--optimizers", "neighbor-sgd,textgrad", "--max-calls",
         "20", "--out", str(out), "-q", *SMALL]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 3
    for name in ("neighbor-sgd", "textgrad"):
        assert f"{name} stopped early: the budget is spent" in err
        saved = json.loads((out / name / "results.json").read_text())
        refused = saved["errors_by_kind"].get("budget", 0)
        assert saved["stopped"] == "budget" and saved["counters"]["calls"] - refused <= 20
    summary = json.loads((out / "compare.json").read_text())
    assert [m["stopped"] for m in summary["methods"]] == ["budget", "budget"]


def test_compare_trains_one_parameter_alongside_the_others_with_param(tmp_path, capsys):
    """`compare --param NAME` gives NAME to one-parameter alone; the other optimizers run as usual."""
    out = tmp_path / "cmp"
    flags = ["--optimizers", "neighbor-sgd,one-parameter", "--param", "answer.instruction", "--out", str(out)]
    code = main(["compare", "bbh:navigate", "--data-dir", str(DATA), "--dry-run", "-q", *flags, *SMALL])
    assert code == 0, capsys.readouterr().err
    rows = [line.split("|")[1].strip() for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert {"neighbor-sgd", "one-parameter"} <= set(rows)


def test_compare_without_one_parameter_refuses_param(tmp_path, capsys):
    """`--param` with no one-parameter among --optimizers is a one-line error, not silently ignored."""
    code = main(["compare", "bbh:navigate", "--data-dir", str(DATA), "--dry-run", "--param", "answer.instruction",
                 "--optimizers", "textgrad", "--out", str(tmp_path / "cmp"), *SMALL])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and "--param is for the one-parameter optimizer" in err and len(err.strip().splitlines()) == 1


def test_compare_takes_the_same_model_and_sampling_flags_as_run():
    """Every server, model and sampling flag of `semgrad run` is a flag of `semgrad compare`, read into its config."""
    from semgrad.cli import _config, build_parser

    flags = ["--base-url", "http://127.0.0.1:1", "--model", "m", "--forward-model", "f", "--backward-model", "b",
             "--optimizer-model", "o", "--temperature", "0.3", "--max-output-tokens", "77",
             "--forward-temperature", "0.9", "--backward-max-output-tokens", "55",
             "--optimizer-temperature", "0.1"]  # fmt: skip
    run = _config(build_parser().parse_args(["run", "bbh:navigate", *flags]))
    cmp_args = build_parser().parse_args(["compare", "bbh:navigate", *flags])
    cmp = _config(cmp_args, optimizer="neighbor-sgd")
    assert cmp.sampling() == run.sampling() and cmp.models() == run.models()
    assert (cmp.base_url, cmp.model) == (run.base_url, run.model) == ("http://127.0.0.1:1", "m")


def test_temperature_none_sends_no_temperature_except_a_role_s_own():
    """`--temperature none` leaves temperature out of every request's options except a role's that sets its own
    (Claude Opus 4.7 and OpenAI's reasoning models refuse one); anything else but a number is a usage error."""
    from semgrad.cli import _config, build_parser
    from semgrad.experiments import RunConfig

    args = build_parser().parse_args(["run", "bbh:navigate", "--temperature", "None", "--forward-temperature", "0"])
    config = _config(args)
    sampling = config.sampling()
    assert dict(sampling["forward"]) == {"temperature": 0.0, "max_tokens": 1024}
    assert dict(sampling["backward"]) == dict(sampling["optimizer"]) == {"max_tokens": 1024}
    assert RunConfig.from_json(config.to_json()) == config and config.to_json()["temperature"] is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "bbh:navigate", "--temperature", "cold"])


def test_a_comparison_into_a_folder_that_holds_one_says_to_choose_another(tmp_path, capsys):
    """A second comparison into the same --out stops in one line saying to choose another --out (compare has
    no --resume to point to)."""
    args = [
        "compare",
        "bbh:navigate",
        "--data-dir",
        str(DATA),
        "--optimizers",
        "tgd",
        "--out",
        str(tmp_path / "c"),
        *SMALL,
    ]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "already holds a run; choose another --out" in err and "--resume" not in err


def test_a_comparison_is_never_written_into_a_folder_of_other_files(tmp_path, capsys):
    """`semgrad compare --out DIR` into a folder of other files stops in one line and writes nothing there."""
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "main.py").write_text("print('mine')\n")
    args = ["compare", "bbh:navigate", "--data-dir", str(DATA), "--optimizers", "tgd", "--out", str(mine), *SMALL]
    assert main(args) == 1
    assert "is not empty (main.py) and holds no comparison" in capsys.readouterr().err
    assert sorted(p.name for p in mine.iterdir()) == ["main.py"]


def test_a_comparison_runs_the_papers_iterations_unless_told(capsys):
    """`semgrad compare liar` runs the paper's 8 iterations, as `semgrad run liar` does; --iterations wins."""
    args = ["compare", "liar", "--data-dir", str(DATA), "--optimizers", "tgd", "--dry-run"]
    assert main(args) == 0
    assert "8 iterations" in capsys.readouterr().out
    assert main([*args, "--iterations", "2"]) == 0
    assert "2 iterations" in capsys.readouterr().out


def test_a_stopped_method_s_row_says_it_is_partial_in_compare_md_and_html():
    """compare.md and compare.html name a method that stopped early on its own row, which is partial."""
    from semgrad.report._compare import compare_table, render_compare

    methods = [{"optimizer": "tgd", "scores": [0.5], "stopped": "budget"}, {"optimizer": "textgrad", "scores": [0.5]}]
    summary = {"task": "gsm8k", "methods": methods}
    rows = [line for line in compare_table(summary).splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| tgd (stopped early: budget; partial) |") and rows[1].startswith("| textgrad |")
    assert '<th scope="row" class="method">tgd (stopped early: budget; partial)</th>' in render_compare(summary)


def test_a_stopped_method_s_row_says_how_many_of_its_counted_calls_were_never_sent(tmp_path, capsys):
    """A budget-stopped method's row says how many of the calls it counts its budget refused (never sent)."""
    out = tmp_path / "cmp"
    flags = ["--optimizers", "tgd", "--max-calls", "20", "--concurrency", "16", "--out", str(out), "-q"]
    assert main(["compare", "bbh:navigate", "--data-dir", str(DATA), *flags, *SMALL]) == 3
    refused = json.loads((out / "tgd" / "results.json").read_text())["errors_by_kind"]["budget"]
    (method,) = json.loads((out / "compare.json").read_text())["methods"]
    assert refused > 0 and method["refused"] == refused and method["calls"] - refused <= 20
    assert (
        f"| tgd (stopped early: budget; partial; {refused} of its calls refused, never sent) |"
        in (out / "compare.md").read_text()
    )


def test_a_method_whose_calls_failed_says_so_on_its_row(tmp_path):
    """A method that lost calls (after retries) says how many on its row of compare.md; a clean one says nothing."""
    from semgrad.backends.fake import FunctionLLM
    from semgrad.core import LLMError, LLMFailure
    from semgrad.experiments import build_llm, load_run_tasks

    config = RunConfig("bbh:navigate", data_dir=str(DATA), train=4, test=3, iterations=1)
    tasks = load_run_tasks(config)

    def factory(cfg):
        inner = build_llm(cfg, tasks)
        if cfg.optimizer == "neighbor-sgd":
            return inner

        def fail_one(request):  # one test item's calls fail for good: a few out of many
            if request.purpose == "forward" and request.sample == tasks[0].split.test[0].id:
                raise LLMFailure(LLMError("bad_request", "refused by the server"))
            return inner(request)

        return FunctionLLM(fail_one)

    summary = compare(config, ["neighbor-sgd", "tgd"], tmp_path / "cmp", llm_factory=factory)
    lost = {m["optimizer"]: m["failed_calls"] for m in summary["methods"]}
    assert lost["neighbor-sgd"] == 0 and lost["tgd"] > 0
    rows = [line for line in (tmp_path / "cmp" / "compare.md").read_text().splitlines() if line.startswith("| ")]
    assert rows[1].startswith("| neighbor-sgd |") and rows[2].startswith(
        f"| tgd ({lost['tgd']} calls without a reply) |"
    )


def test_a_simulated_comparison_costs_nothing_whatever_model_it_names(tmp_path):
    """A comparison on the simulated backend shows a cost of 0 even with a priced --model, as its dry run does."""
    config = RunConfig("bbh:navigate", data_dir=str(DATA), train=4, test=3, iterations=1, model="gpt-4o")
    prices = {"gpt-4o": (2.5, 10.0)}
    ran = compare(config, ["neighbor-sgd"], tmp_path / "cmp", prices=prices)
    planned = compare(config, ["neighbor-sgd"], tmp_path / "plan", dry_run_only=True, prices=prices)
    assert ran["methods"][0]["input_tokens"] == 0  # the simulated LLM uses none, and none are estimated
    assert ran["methods"][0]["cost_usd"] == planned["methods"][0]["cost_usd"] == 0.0
