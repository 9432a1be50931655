"""`CompareResult` / `MethodResult`: compare.json as typed values, round-tripped and checked once in from_json."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad.experiments import CompareResult, MethodResult, compare
from tests.experiments.test_plan import _data

texts = st.text(max_size=8)
scores = st.none() | st.floats(0, 1)
counts = st.integers(0, 2**53)
purposes = st.dictionaries(st.sampled_from(["forward", "backward", "rewrite", "critique"]), counts, max_size=3)


@st.composite
def method_json(draw: st.DrawFn) -> dict:
    """A method's row as compare writes it (a dry run's or a real run's)."""
    return {
        "optimizer": draw(texts),
        "scores": draw(st.lists(scores, max_size=4)),
        "test": draw(scores),
        "initial_test": draw(scores),
        "calls": draw(counts),
        "hits": draw(counts),
        "calls_by_purpose": draw(purposes),
        "tokens_by_purpose": draw(purposes),
        "input_tokens": draw(counts),
        "output_tokens": draw(counts),
        "cost_usd": draw(st.none() | st.floats(0, 1e6)),
        "wall_s": draw(st.none() | st.floats(0, 1e5)),
        "run_dir": draw(st.none() | texts),
        "stopped": draw(st.none() | st.just("budget")),
        "stopped_detail": draw(st.none() | texts),
        "refused": draw(counts),
        "failed_calls": draw(counts),
    }


@st.composite
def compare_json(draw: st.DrawFn) -> dict:
    """A compare.json as compare writes it."""
    return {
        "task": draw(texts),
        "backend": draw(st.none() | texts),
        "simulated": draw(st.booleans()),
        "seed": draw(st.none() | st.integers(0, 2**31)),
        "iterations": draw(st.none() | st.integers(0, 20)),
        "k": draw(st.none() | st.integers(0, 20)),
        "protocol": draw(st.none() | st.sampled_from(["official", "heldout"])),
        "sizes": draw(st.dictionaries(st.sampled_from(["train", "validation", "test"]), counts)),
        "dry_run": draw(st.booleans()),
        "token_note": draw(texts),
        "methods": draw(st.lists(method_json(), max_size=3)),
    }


@given(compare_json())
def test_a_compare_json_reads_back_unchanged(data):
    """to_json(from_json(x)) == x, in the same key order, and from_json(to_json(v)) == v."""
    result = CompareResult.from_json(data)
    assert result.to_json() == data
    assert list(result.to_json()) == list(data)
    assert [list(m) for m in result.to_json()["methods"]] == [list(m) for m in data["methods"]]
    assert CompareResult.from_json(result.to_json()) == result
    assert all(isinstance(method, MethodResult) for method in result.methods)


@given(compare_json())
def test_indexing_a_compare_result_gives_compare_json_s_keys(data):
    """result["methods"][i][key] is the file's value, as the dictionary compare returned before gave it."""
    result = CompareResult.from_json(data)
    assert {key: result[key] for key in data} == data
    for i, method in enumerate(data["methods"]):
        assert result["methods"][i]["calls"] == result.methods[i].calls == method["calls"]
        assert result.methods[i].get("optimizer") == method["optimizer"]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[CompareResult, dict, str]:
    """One comparison of two optimizers on a small system of the user's: what compare returned, its compare.json,
    and the folder of its data."""
    folder = tmp_path_factory.mktemp("compared")
    config = _data(folder / "in", 12)
    result = compare(config, ["tgd", "neighbor-sgd"], folder / "cmp")
    return result, json.loads((folder / "cmp" / "compare.json").read_text("utf-8")), str(folder / "in")


def _escaped(text: str) -> str:
    return text.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["methods"][0].update(test=float("nan")), "methods[0].test must be a score"),
        (lambda d: d["methods"][0]["scores"].append(1.5), "methods[0].scores[2] must be a score"),
        (lambda d: d["methods"][0].update(calls=-1), "methods[0].calls must be a count"),
        (lambda d: d["methods"][1]["calls_by_purpose"].update(forward="9"), "methods[1].calls_by_purpose.forward"),
        (lambda d: d["methods"][0].update(input_tokens=2**60), "methods[0].input_tokens must be a count"),
        (lambda d: d["methods"][0].update(cost_usd=float("inf")), "methods[0].cost_usd must be a finite amount"),
        (lambda d: d["methods"][0].update(wall_s=-1.0), "methods[0].wall_s must be a finite amount"),
        (lambda d: d["methods"][0].update(stopped=["budget"]), "methods[0].stopped must be a string"),
        (lambda d: d["methods"][0].update(refused=True), "methods[0].refused must be a count"),
        (lambda d: d.update(methods={}), "methods must be an array"),
        (lambda d: d["methods"].append("tgd"), "methods[2] must be an object"),
        (lambda d: d.update(seed="0"), "seed must be an integer"),
        (lambda d: d.update(simulated="yes"), "simulated must be true or false"),
        (lambda d: d["sizes"].update(test=0.5), "sizes.test must be a count"),
    ],
)
def test_from_json_refuses_a_hand_changed_field_naming_it(written, change, message):
    """A compare.json changed by hand fails from_json with one line naming the field."""
    data = copy.deepcopy(written[1])
    assert CompareResult.from_json(data).to_json() == data
    change(data)
    with pytest.raises(ValueError, match=_escaped(message)) as error:
        CompareResult.from_json(data)
    assert "\n" not in str(error.value)


def test_compare_returns_the_result_it_writes(written, tmp_path):
    """compare returns a CompareResult whose to_json is compare.json, read back equal; a dry one writes nothing."""
    result, data, folder = written
    assert isinstance(result, CompareResult) and result.to_json() == data
    assert CompareResult.from_json(data) == result
    assert [m.optimizer for m in result.methods] == ["tgd", "neighbor-sgd"]
    assert result.method("tgd").calls == sum(result.method("tgd").calls_by_purpose.values()) > 0
    config = _data(Path(folder), 12)
    dry = compare(config, ["tgd"], tmp_path / "dry", dry_run_only=True)
    assert dry.dry_run and dry.methods[0].scores == () and dry.methods[0].calls > 0
    assert not (tmp_path / "dry").exists()
