"""An error in your own code shows its type and your frames (file:line) in one short block, --debug after the
subcommand shows the traceback, and a run that cannot start leaves no folder behind."""

from __future__ import annotations

import pytest

from semgrad.experiments._user_code import UserCodeError, call_user

from .conftest import semgrad

BAD_KEY = """from semgrad.core import GraphBuilder

CONFIG = {}


def instruction():
    return CONFIG["model"]


def build():
    b = GraphBuilder()
    q = b.input("question")
    b.llm("respond", inputs=[q], instruction=instruction())
    return b.build(output="respond")
"""

FAILING_LLM = """def make():
    def llm(request):
        raise RuntimeError("my client is down")

    return llm
"""


def _block(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def test_a_key_error_in_build_shows_its_type_and_your_frames(tmp_path, items_file):
    """A KeyError in build() is 'KeyError in your code (bad.py:build): 'model'' and bad.py's two frames, no
    traceback and no frame of semgrad's."""
    (tmp_path / "bad.py").write_text(BAD_KEY)
    result = semgrad("run", "bad.py:build", "--data", "items.jsonl", cwd=tmp_path)
    assert result.returncode == 1
    assert _block(result.stderr) == [
        "semgrad: error: KeyError in your code (bad.py:build): 'model'",
        f"  at {tmp_path / 'bad.py'}:13 in build",
        f"  at {tmp_path / 'bad.py'}:7 in instruction",
    ]
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("command", ["run", "compare", "graph"])
def test_a_missing_module_names_your_file_and_line(tmp_path, items_file, command):
    """`import numpyy` in the system file is a ModuleNotFoundError naming the file and line, in every subcommand."""
    (tmp_path / "my_system.py").write_text("import json\nimport numpyy\n\n\ndef build():\n    pass\n")
    data = [] if command == "graph" else ["--data", "items.jsonl", "--out", "out"]
    result = semgrad(command, "my_system.py:build", *data, cwd=tmp_path)
    assert result.returncode == 1
    lines = _block(result.stderr)
    assert lines[-2:] == [
        "semgrad: error: ModuleNotFoundError in your code (importing my_system.py): No module named 'numpyy'",
        f"  at {tmp_path / 'my_system.py'}:2 in <module>",
    ]


def test_an_error_in_your_metric_names_it_and_debug_after_the_command_shows_the_traceback(
    tmp_path, system_file, items_file
):
    """A metric that raises is a block naming it and its line; --debug typed after `run` gives the traceback."""
    (tmp_path / "metric.py").write_text("def score(output, target):\n    return int(target) / 0\n")
    args = ["run", "my_system.py:build", "--data", "items.jsonl", "--metric", "metric.py:score", "--out", "r"]
    result = semgrad(*args, cwd=tmp_path)
    assert result.returncode == 1
    assert _block(result.stderr)[-2:] == [
        "semgrad: error: ZeroDivisionError in your code (metric.py:score): division by zero",
        f"  at {tmp_path / 'metric.py'}:2 in score",
    ]
    debug = semgrad(*args, "--debug", cwd=tmp_path)
    assert debug.returncode != 0 and "Traceback (most recent call last)" in debug.stderr
    assert "UserCodeError" in debug.stderr and "ZeroDivisionError" in debug.stderr


def test_a_run_whose_preflight_fails_leaves_no_folder_behind(tmp_path, system_file, items_file):
    """With an LLM that cannot answer, the run fails in its preflight: a new --out is not left behind, and an
    empty one given is left empty (a new run may use it)."""
    (tmp_path / "llm.py").write_text(FAILING_LLM)
    result = semgrad("run", "my_system.py", "--data", "items.jsonl", "--llm", "llm.py", "--out", "new", cwd=tmp_path)
    assert result.returncode == 1
    assert "RuntimeError in your code (the LLM llm.py:make made): my client is down" in result.stderr
    assert not (tmp_path / "new").exists()
    (tmp_path / "empty").mkdir()
    semgrad("run", "my_system.py", "--data", "items.jsonl", "--llm", "llm.py", "--out", "empty", cwd=tmp_path)
    assert list((tmp_path / "empty").iterdir()) == []


def test_only_your_own_frames_are_shown():
    """call_user keeps the frames of code outside semgrad and Python (this test file), innermost last, and drops
    its own frame and json's."""
    import json

    def helper():
        return json.loads("{oops")

    def outer():
        return helper()

    with pytest.raises(UserCodeError) as error:
        call_user("outer", outer)
    assert error.value.where == "outer" and isinstance(error.value.error, json.JSONDecodeError)
    assert [frame.rsplit(" in ", 1)[1] for frame in error.value.frames] == ["outer", "helper"]
    assert all(frame.startswith(f"{__file__}:") for frame in error.value.frames)


KEY_ERROR_LLM = """SETTINGS = {}


class MyLLM:
    def __call__(self, request):
        return self.answer(request)

    def answer(self, request):
        return SETTINGS["model"]


def make():
    return MyLLM()
"""


def test_a_key_error_in_your_llm_during_the_preflight_names_its_type_and_your_frames(tmp_path, system_file, items_file):
    """An LLM of `--llm my_llm.py:make` whose call raises KeyError: the preflight's error is the one short block of
    your code's errors, naming KeyError and my_llm.py's lines (innermost last), exit 1, no run folder left."""
    (tmp_path / "my_llm.py").write_text(KEY_ERROR_LLM)
    args = ["run", "my_system.py:build", "--data", "items.jsonl", "--llm", "my_llm.py:make", "--out", "r"]
    result = semgrad(*args, cwd=tmp_path)
    assert result.returncode == 1
    lines = _block(result.stderr)
    assert lines[-3:] == [
        "semgrad: error: KeyError in your code (the LLM my_llm.py:make made): 'model'",
        f"  at {tmp_path / 'my_llm.py'}:6 in __call__",
        f"  at {tmp_path / 'my_llm.py'}:9 in answer",
    ], result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "r").exists() and not (tmp_path / "runs").exists()


WORKING_LLM = """def make():
    return lambda request: "The answer is 4."
"""


def test_a_compare_whose_preflight_fails_leaves_no_method_folder_and_its_out_may_be_reused(
    tmp_path, system_file, items_file
):
    """compare on your own system with an LLM that cannot answer fails in the first method's preflight: a new --out
    is not left behind, an empty one stays empty, and a compare with a working LLM then runs into that --out."""
    (tmp_path / "llm.py").write_text(FAILING_LLM)
    (tmp_path / "good.py").write_text(WORKING_LLM)
    common = ["compare", "my_system.py:build", "--data", "items.jsonl", "--yes", "--optimizers", "tgd,no-gradients"]
    result = semgrad(*common, "--llm", "llm.py:make", "--out", "new", cwd=tmp_path)
    assert result.returncode == 1 and "RuntimeError in your code" in result.stderr, result.stderr
    assert not (tmp_path / "new").exists()
    (tmp_path / "empty").mkdir()
    result = semgrad(*common, "--llm", "llm.py:make", "--out", "empty", cwd=tmp_path)
    assert result.returncode == 1
    assert list((tmp_path / "empty").iterdir()) == []
    again = semgrad(*common, "--llm", "good.py:make", "--out", "empty", "--iterations", "1", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "empty" / "compare.json").is_file()


def test_only_an_exception_of_your_llm_becomes_your_codes_error():
    """raise_if_user_code shows the exception behind the stack's 'exception' failure as your code's, and leaves a
    failure your LLM reported itself (an LLMFailure of its own kind, even raised while handling a KeyError) alone."""
    from semgrad.core import LLMError, LLMFailure
    from semgrad.experiments._user_code import raise_if_user_code

    def failed(kind: str) -> LLMFailure:
        try:
            try:
                {}["model"]
            except KeyError:
                raise LLMFailure(LLMError(kind, "no model")) from None
        except LLMFailure as failure:
            return failure
        raise AssertionError("unreachable")

    raise_if_user_code("/here/my_llm.py:make", [failed("server")])  # the LLM's own typed failure: not raised
    with pytest.raises(UserCodeError, match=r"KeyError in your code \(the LLM my_llm.py:make made\): 'model'") as error:
        raise_if_user_code("/here/my_llm.py:make", [failed("exception")])
    assert error.value.frames and all(frame.startswith(f"{__file__}:") for frame in error.value.frames)
