"""The command line's parsing: no option is read as an abbreviation, and the global flags go on either side of
the subcommand."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.cli import build_parser, main

from .conftest import semgrad

#: Each subcommand with the positional arguments it needs.
POSITIONALS = {
    "demo": [],
    "run": [],
    "compare": ["bbh:navigate"],
    "report": ["some/run"],
    "graph": ["paper"],
    "sweep": ["spec.toml"],
    "data": ["get", "bbh"],
}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[attr-defined]


def _abbreviations() -> list[tuple[str, str]]:
    """Each subcommand with each proper prefix of its long options that is not itself one of its options."""
    found = []
    for name, sub in _subparsers().items():
        options = {o for a in sub._actions for o in a.option_strings if o.startswith("--")}
        for option in sorted(options):
            found += [(name, option[:n]) for n in range(3, len(option)) if option[:n] not in options]
    return found


def test_no_subcommand_takes_an_abbreviated_option(capsys):
    """Every proper prefix of every long option of every subcommand is refused as an unrecognised argument."""
    abbreviations = _abbreviations()
    assert ("compare", "--data-") in abbreviations and ("run", "--dat") in abbreviations
    assert ("graph", "--form") in abbreviations and ("sweep", "--loc") in abbreviations
    for name, prefix in abbreviations:
        with pytest.raises(SystemExit) as exit:
            build_parser().parse_args([name, *POSITIONALS[name], prefix])
        assert exit.value.code == 2
        assert f"unrecognized arguments: {prefix}" in capsys.readouterr().err, (name, prefix)


def test_the_top_level_takes_no_abbreviation_either(capsys):
    """`semgrad --deb demo`, `--no-uv demo` and `--vers demo` are refused, not read as --debug, --no-uvloop
    and --version."""
    for prefix in ("--deb", "--no-uv", "--vers"):
        with pytest.raises(SystemExit) as exit:
            build_parser().parse_args([prefix, "demo"])
        assert exit.value.code == 2
        assert f"unrecognized arguments: {prefix}" in capsys.readouterr().err


def test_an_abbreviation_is_refused_in_one_line_naming_the_full_option():
    """`semgrad compare TASK --data-d DIR` exits 2 with one error line saying --data-d is not --data-dir
    abbreviated."""
    result = semgrad("compare", "bbh:navigate", "--data-d", "data", "--dry-run")
    assert result.returncode == 2, result.stdout
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert errors == [
        "semgrad: error: unrecognized arguments: --data-d data; "
        "--data-d is not an abbreviation of --data-dir (options are never abbreviated)"
    ]


@given(
    st.sampled_from(sorted(POSITIONALS)),
    st.sampled_from(["before", "after", "both", "neither"]),
    st.sampled_from(["before", "after", "both", "neither"]),
)
def test_the_global_flags_work_before_or_after_the_subcommand(name, debug, no_uvloop):
    """--debug and --no-uvloop are set when typed before the subcommand, after it, or both, and unset otherwise."""
    where = {"--debug": debug, "--no-uvloop": no_uvloop}
    before = [flag for flag, at in where.items() if at in ("before", "both")]
    after = [flag for flag, at in where.items() if at in ("after", "both")]
    args = build_parser().parse_args([*before, name, *POSITIONALS[name], *after])
    assert args.debug is (debug != "neither") and args.no_uvloop is (no_uvloop != "neither")


@pytest.mark.parametrize("place", ["before", "after"])
def test_debug_after_the_subcommand_shows_the_traceback(capsys, place):
    """With --debug on either side of the subcommand an error propagates (a traceback); without it, one line."""
    argv = ["graph", "layered", "--width", "0"]
    with pytest.raises(ValueError, match="is not a graph to draw"):
        main(["--debug", *argv] if place == "before" else [*argv, "--debug"])
    assert main(argv) == 1
    assert capsys.readouterr().err.startswith("semgrad: error: --width 0 --depth 4 is not a graph to draw")
