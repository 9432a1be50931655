"""A typed user script type-checks against semgrad's public API, and a misspelled argument does not.

The test extra installs mypy; elsewhere the mypy test is skipped when it is not installed.
"""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import pytest

from semgrad.effects import fit, fit_sync

ROOT = Path(__file__).resolve().parents[1]

#: What a user writes: the docstrings' own calls (plain dicts for mapping fields), a built-in rule where a
#: `Rule` is expected, and `fit_sync` with fit's arguments.
USER_SCRIPT = """
from semgrad.backends import fake
from semgrad.core import Example, LLMRequest, Message, NodeRun, Trace, backward, forward, optim, rules
from semgrad.core.optim import Step
from semgrad.effects import FitResult, RetryPolicy, fit_sync, run_sync
from semgrad.topologies import paper_graph

graph, params = paper_graph()
example = Example({"question": "2+2?"}, "4", id="q1")
request = LLMRequest((Message("user", "hi"),), purpose="summarize", node="q", options={"temperature": 0.0})
trace = Trace(0, "g", "out", {"out": NodeRun("out", "llm", value="4")})
step = Step(graph, options={"forward": {"temperature": 0.0}})
policy = RetryPolicy(max_attempts_by_kind={"malformed": 3})
forwarded = run_sync(forward(graph, params, {"question": "q"}), fake.HashLLM())
grads = run_sync(backward(graph, params, forwarded, "wrong", rule=rules.neighbor_aware()), fake.HashLLM())
stage = optim.backpropagate(rules.per_edge())
train = [{"inputs": {"question": "q"}, "target": "7"}]
result: FitResult = fit_sync(graph, params, optim.neighbor_sgd(k=1), train=train, llm=fake.HashLLM(), iterations=1)
"""

#: A misspelled keyword (`iteration`) that `fit_sync(*args, **kwargs)` let through to run time.
MISTAKE = """
wrong = fit_sync(graph, params, optim.neighbor_sgd(k=1), train=train, llm=fake.HashLLM(), iteration=2)
"""


def _mypy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> tuple[str, int]:
    api = pytest.importorskip("mypy.api", reason="mypy is not installed (the test extra has it)")
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(source))
    monkeypatch.setenv("MYPYPATH", str(ROOT))
    args = ["--strict", "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"), str(script)]
    stdout, stderr, status = api.run(args)
    return stdout + stderr, status


@pytest.mark.slow
def test_a_typed_user_script_passes_mypy_strict_and_a_misspelled_fit_sync_argument_fails(tmp_path, monkeypatch):
    """mypy --strict accepts plain dicts for FrozenMap fields, a built-in rule as a `Rule` and fit_sync's arguments,
    and reports fit_sync(..., iteration=2) as an unexpected keyword."""
    output, status = _mypy(tmp_path, monkeypatch, USER_SCRIPT)
    assert status == 0, output
    output, status = _mypy(tmp_path, monkeypatch, USER_SCRIPT + MISTAKE)
    assert status == 1 and 'Unexpected keyword argument "iteration" for "fit_sync"' in output, output
    assert output.count("error:") == 1, output


def test_fit_sync_takes_fits_parameters_and_use_uvloop():
    """fit_sync's parameters are fit's, in the same order, kinds, defaults and annotations, then use_uvloop."""
    ours = list(inspect.signature(fit_sync).parameters.values())
    assert ours[:-1] == list(inspect.signature(fit).parameters.values())
    assert (ours[-1].name, ours[-1].kind, ours[-1].default) == ("use_uvloop", inspect.Parameter.KEYWORD_ONLY, None)


#: docs/optimizers.md's scoring line: `evaluate` gives a program of a tuple, `mean_score` takes a sequence.
COVARIANT = """
from semgrad.backends import fake
from semgrad.core import Program, as_examples, optim
from semgrad.core.programs import pure
from semgrad.core.scoring import normalized_match
from semgrad.effects import run_sync
from semgrad.topologies import paper_graph

graph, params = paper_graph()
train = as_examples([{"inputs": {"question": "q"}, "target": "7"}])
final: float = optim.mean_score(run_sync(optim.evaluate(graph, params, train, normalized_match()), fake.HashLLM()))
flag: Program[int] = pure(True)
"""


@pytest.mark.slow
def test_a_program_of_a_subtype_passes_where_a_program_of_its_supertype_is_expected(tmp_path, monkeypatch):
    """mypy --strict accepts a Program[tuple[X, ...]] where a Program[Sequence[X]] is expected: Program is covariant."""
    output, status = _mypy(tmp_path, monkeypatch, COVARIANT)
    assert status == 0, output


#: A stage's own options, as sampling() gives them per engine (FrozenMaps), or any other mapping.
STAGE_OPTIONS = """
from types import MappingProxyType

from semgrad.core import optim, rules
from semgrad.core.calls import sampling

opts = sampling(temperature=0.7)
stages = [
    optim.propose_rewrite(options=opts["optimizer"]),
    optim.critique(options=MappingProxyType({"temperature": 0.7})),
    rules.neighbor_aware(options=opts["backward"]),
]
"""


@pytest.mark.slow
def test_every_stage_takes_its_own_options_as_any_mapping(tmp_path, monkeypatch):
    """mypy --strict accepts a FrozenMap or any mapping as propose_rewrite's and critique's options, as the rules'."""
    output, status = _mypy(tmp_path, monkeypatch, STAGE_OPTIONS)
    assert status == 0, output
