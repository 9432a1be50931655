"""The public API: DESIGN section 3's names, a core of at most 45 names without clashes, and old names kept."""

from __future__ import annotations

import importlib
import warnings

import pytest

import semgrad
import semgrad.core as core
from semgrad.core import optim, rules

#: What DESIGN section 3 imports, module by module.
DESIGN = {
    "semgrad.core": ("GraphBuilder", "forward", "backward", "rules", "optim"),
    "semgrad.effects": ("run", "run_sync", "fit", "cached", "retrying", "limited"),
    "semgrad.backends": ("fake", "openai_compatible"),
}
#: Top-level names of the capabilities DESIGN section 3 lists as next ("Names the next capabilities commit to").
NEXT = {"semgrad.effects": ("system",)}


def test_design_section_3_imports_resolve_without_a_warning():
    """Every name DESIGN section 3 imports exists where it says, with no deprecation warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for module, names in DESIGN.items():
            loaded = importlib.import_module(module)
            for name in names:
                assert getattr(loaded, name) is not None, (module, name)


def test_semgrad_all_is_design_section_3():
    """semgrad.__all__ is DESIGN section 3's names (its next capabilities' included) and its three packages,
    each resolving to the same object."""
    named = {**DESIGN, "semgrad.effects": DESIGN["semgrad.effects"] + NEXT["semgrad.effects"]}
    expected = {name for names in named.values() for name in names} | {"core", "effects", "backends"}
    assert set(semgrad.__all__) == expected and len(semgrad.__all__) == len(expected)
    for module, names in named.items():
        for name in names:
            assert getattr(semgrad, name) is getattr(importlib.import_module(module), name)


def test_the_core_exports_at_most_45_names_each_defined():
    """semgrad.core.__all__ has at most 45 names, no duplicates, each one importable."""
    assert len(core.__all__) <= 45 and len(set(core.__all__)) == len(core.__all__)
    assert all(hasattr(core, name) for name in core.__all__)


def test_no_public_name_means_two_things():
    """A name in core, rules and optim names one thing: no program/transform, module/rule or rule/optimizer clash."""
    spaces = {"core": set(core.__all__), "rules": set(rules.__all__), "optim": set(optim.__all__)}
    for a, b in (("core", "rules"), ("core", "optim"), ("rules", "optim")):
        shared = spaces[a] & spaces[b]
        clashing = {name for name in shared if getattr(globals()[a], name) is not getattr(globals()[b], name)}
        assert not clashing, (a, b, clashing)


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("semgrad.core", "pure", "semgrad.core.programs.pure"),
        ("semgrad.core", "sampling", "semgrad.core.calls.sampling"),
        ("semgrad.core", "normalized_match", "semgrad.core.scoring.normalized_match"),
        ("semgrad.core", "parse_tagged", "semgrad.core.prompts.parse_tagged"),
        ("semgrad.core", "numeric", "semgrad.core.autodiff"),
        ("semgrad.core.optim", "backward", "semgrad.core.optim.backpropagate"),
        ("semgrad.core.rules", "textgrad", "semgrad.core.rules.textgrad_backward"),
        ("semgrad", "Runner", "semgrad.effects.Runner"),
        ("semgrad", "LLMRequest", "semgrad.core.LLMRequest"),
    ],
)
def test_an_old_name_still_resolves_to_its_new_home_with_a_warning(module, old, new):
    """A renamed or moved name resolves for one release to the object of its new name, with a DeprecationWarning."""
    where, _, name = new.rpartition(".")
    target = getattr(importlib.import_module(where), name)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} is deprecated: use {new}"):
        assert getattr(importlib.import_module(module), old) is target


def test_an_unknown_name_is_still_an_attribute_error():
    """The deprecation hook answers only the names that moved: a typo is an AttributeError naming it."""
    with pytest.raises(AttributeError, match="no attribute 'GraphBuildr'"):
        _ = core.GraphBuildr


def test_the_numeric_shim_module_warns_and_gives_autodiff_s_objects():
    """import semgrad.core.numeric (the old module) warns and gives the very ops of semgrad.core.autodiff."""
    import sys

    sys.modules.pop("semgrad.core.numeric", None)
    with pytest.warns(DeprecationWarning, match="semgrad.core.numeric is deprecated"):
        shim = importlib.import_module("semgrad.core.numeric")
    assert shim.EXP is core.autodiff.EXP and shim.OPS is core.autodiff.OPS


def test_backends_all_lists_the_simulated_backend():
    """semgrad.backends.__all__ names simulated, the built-in offline LLM, and it resolves."""
    import semgrad.backends as backends

    assert "simulated" in backends.__all__ and backends.simulated.__name__ == "semgrad.backends.simulated"
