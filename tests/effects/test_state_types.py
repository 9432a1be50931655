"""Checkpoints tag run state by stable names from one registry; older module-path tags are still read."""

from __future__ import annotations

import json
import sys

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from semgrad._bundled_pairs import gsm8k_sample
from semgrad.backends.simulated import SimulatedLLM
from semgrad.core import Example, optim
from semgrad.core.scoring import numeric_match
from semgrad.effects import CheckpointError, fit_sync, register_state_type, registered_state_types
from semgrad.effects._checkpoint import decode, encode
from semgrad.topologies import paper_graph

#: The tags checkpoints held before the registry (module:QualName), by the stable tag that replaced each.
OLD_TAGS = {
    "parameter": "semgrad.core._graph:Parameter",
    "params": "semgrad.core._graph:Params",
    "empty-state": "semgrad.core.optim._base:EmptyState",
    "stage-report": "semgrad.core.optim._base:StageReport",
    "select-state": "semgrad.core.optim._stages:SelectState",
    "gate-state": "semgrad.core.optim._stages:GateState",
    "momentum-state": "semgrad.core.optim._stages:MomentumState",
    "every-k-state": "semgrad.core.optim._combining:EveryKState",
    "copro-state": "semgrad.core.optim._copro:CoproState",
    "iteration-record": "semgrad.effects._fit:IterationRecord",
    "fit-state": "semgrad.effects._fit:_RunState",
}


def _demo(**options):
    samples = gsm8k_sample()
    items = [Example({"question": q}, a, id=i) for i, (q, a) in enumerate(samples)]
    graph, params = paper_graph()
    llm = SimulatedLLM(dict(samples), seed=5)
    return fit_sync(graph, params, optim.neighbor_sgd(k=2), train=items[:5], validation=items[5:], llm=llm,
                    loss=numeric_match(), **options)  # fmt: skip


def _tags(value):
    """Every ``$attrs`` tag in a checkpoint's JSON."""
    if isinstance(value, dict):
        found = [value["$attrs"]] if "$attrs" in value else []
        return found + [t for v in value.values() for t in _tags(v)]
    if isinstance(value, list):
        return [t for v in value for t in _tags(v)]
    return []


def _retag(value, tags):
    if isinstance(value, dict):
        return {k: (tags.get(v, v) if k == "$attrs" else _retag(v, tags)) for k, v in value.items()}
    if isinstance(value, list):
        return [_retag(v, tags) for v in value]
    return value


def test_a_checkpoint_names_its_types_by_registered_tags_not_module_paths(tmp_path):
    """Every type tag a fit checkpoint writes is a registered stable tag, none a module path."""
    _demo(iterations=1, checkpoint=tmp_path / "ckpt.json")
    tags = set(_tags(json.loads((tmp_path / "ckpt.json").read_text())))
    assert {"fit-state", "params", "iteration-record"} <= tags
    assert tags <= set(registered_state_types()) and not any(":" in t for t in tags), tags


def test_a_checkpoint_in_the_old_module_path_format_resumes_to_the_same_result(tmp_path):
    """A checkpoint whose tags are the old module paths (semgrad.core._graph:Params, ...) resumes to the result of an
    uninterrupted run, as one with today's tags does."""
    full = _demo(iterations=2)
    _demo(iterations=1, checkpoint=tmp_path / "ckpt.json")
    data = json.loads((tmp_path / "ckpt.json").read_text())
    old = _retag(data, OLD_TAGS)
    assert set(_tags(old)) <= set(OLD_TAGS.values()) and set(_tags(old)) != set(_tags(data))
    (tmp_path / "old.json").write_text(json.dumps(old))
    resumed = _demo(iterations=2, resume=tmp_path / "old.json")
    assert (resumed.params, resumed.history, resumed.best_score) == (full.params, full.history, full.best_score)


def test_every_declared_run_state_type_is_registered():
    """Each class a semgrad module lists in CHECKPOINT_TYPES is registered, so a checkpoint can hold it."""
    registered = set(registered_state_types().values())
    declared = [
        cls
        for name, module in list(sys.modules.items())
        if name.startswith("semgrad.")
        for cls in getattr(module, "CHECKPOINT_TYPES", ())
    ]
    assert declared and not [cls for cls in declared if cls not in registered]


@attrs.frozen
class _Moved:
    """A user's state class, registered under a stable tag."""

    n: int = 0


register_state_type("tests/moved-state", _Moved, aliases=["old.place:_Moved"])


def test_a_registered_class_decodes_after_it_moves_and_from_its_alias():
    """A registered class is written under its tag whatever its module, read back after it moved, and read from
    an alias; no fit(state_types=...) is needed."""
    before = encode(_Moved(3))
    assert before == {"$attrs": "tests/moved-state", "fields": {"n": 3}}
    original = _Moved.__module__
    try:
        _Moved.__module__ = "somewhere.else"
        assert encode(_Moved(3)) == before and decode(before) == _Moved(3)
    finally:
        _Moved.__module__ = original
    assert decode({"$attrs": "old.place:_Moved", "fields": {"n": 4}}) == _Moved(4)


def test_an_unregistered_tag_or_class_is_refused():
    """A tag no class is registered under is refused on decode, and an unregistered class on encode."""

    @attrs.frozen
    class Stranger:
        n: int = 0

    with pytest.raises(CheckpointError, match="not a run-state type"):
        decode({"$attrs": "stranger", "fields": {}})
    with pytest.raises(TypeError, match="cannot checkpoint"):
        encode(Stranger())


def test_registering_refuses_ambiguity():
    """A tag (or alias) that already names another class, a second tag for a registered class, and a class that is
    no attrs class are refused; registering the same pair again is a no-op."""

    @attrs.frozen
    class Other:
        n: int = 0

    assert register_state_type("tests/moved-state", _Moved) is _Moved
    with pytest.raises(ValueError, match="already names"):
        register_state_type("tests/moved-state", Other)
    with pytest.raises(ValueError, match="already names"):
        register_state_type("tests/other", Other, aliases=["old.place:_Moved"])
    with pytest.raises(ValueError, match="already registered"):
        register_state_type("tests/moved-again", _Moved)
    with pytest.raises(TypeError, match="attrs class"):
        register_state_type("tests/dict", dict)
    assert "tests/other" not in registered_state_types()


@given(st.text(max_size=12).map(lambda t: t + ":X"))
def test_a_tag_with_a_colon_is_refused(tag):
    """A tag holding ':' (the shape of a module path) is never accepted as a stable tag."""

    @attrs.frozen
    class Any_:
        n: int = 0

    with pytest.raises(ValueError, match="tag"):
        register_state_type(tag, Any_)


def test_every_core_checkpoint_type_is_registered():
    """Every class a core module lists in its ``CHECKPOINT_TYPES`` has a stable tag, so fit can checkpoint it."""
    import importlib

    from semgrad.effects._state_types import tag_of

    modules = ("semgrad.core._graph", "semgrad.core.optim._base", "semgrad.core.optim._stages")
    modules += ("semgrad.core.optim._combining", "semgrad.core.optim._copro")
    listed = [cls for name in modules for cls in importlib.import_module(name).CHECKPOINT_TYPES]
    assert [cls.__name__ for cls in listed if tag_of(cls) is None] == []
