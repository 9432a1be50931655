"""Sampling options per engine (role): what every request of a run carries in ``LLMRequest.options``.

The official implementation sends temperature 0 and at most 1024 output tokens
on every call; those are the defaults here. Options are part of the request, so
they are part of its cache key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._frozen import FrozenMap
from ._requests import ENGINES

__all__ = ["OFFICIAL_OPTIONS", "EngineOptions", "engine_options", "merged_options", "sampling"]

#: The official code's options on every call.
OFFICIAL_OPTIONS: FrozenMap[str, Any] = FrozenMap({"temperature": 0.0, "max_tokens": 1024})

#: Sampling options by engine ("forward", "backward", "optimizer").
EngineOptions = FrozenMap[str, FrozenMap[str, Any]]


def sampling(
    *,
    temperature: float | None = 0.0,
    max_tokens: int | None = 1024,
    forward: Mapping[str, Any] | None = None,
    backward: Mapping[str, Any] | None = None,
    optimizer: Mapping[str, Any] | None = None,
) -> EngineOptions:
    """Options per engine: `temperature` and `max_tokens` for every engine, then each
    engine's own mapping on top (None for a shared value leaves it to the provider).

    Examples:
        >>> opts = sampling(forward={"temperature": 0.7})
        >>> dict(opts["forward"]), dict(opts["optimizer"])
        ({'temperature': 0.7, 'max_tokens': 1024}, {'temperature': 0.0, 'max_tokens': 1024})
        >>> dict(sampling(temperature=None, max_tokens=None)["backward"])
        {}
    """
    shared = {k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens)) if v is not None}
    own = {"forward": forward, "backward": backward, "optimizer": optimizer}
    return FrozenMap((e, FrozenMap({**shared, **dict(own.get(e) or {})})) for e in ENGINES)


def engine_options(options: Mapping[str, Mapping[str, Any]] | None) -> EngineOptions:
    """`options` as `fit` takes them, completed: None gives the official options for every engine;
    a mapping gives each engine it names exactly those options, and the others the official ones.

    Examples:
        >>> dict(engine_options({"forward": {}})["forward"]), dict(engine_options(None)["backward"])
        ({}, {'temperature': 0.0, 'max_tokens': 1024})
    """
    given = dict(options or {})
    unknown = [e for e in given if e not in ENGINES]
    if unknown:
        raise ValueError(f"options are given per engine ({', '.join(ENGINES)}); got {', '.join(map(repr, unknown))}")
    return FrozenMap((e, FrozenMap(given[e]) if e in given else OFFICIAL_OPTIONS) for e in ENGINES)


def merged_options(base: Mapping[str, Any] | None, own: Mapping[str, Any] | None) -> FrozenMap[str, Any]:
    """`own` options over `base` ones (a stage's own options win over the run's).

    Examples:
        >>> dict(merged_options({"temperature": 0.0, "max_tokens": 1024}, {"temperature": 1.0}))
        {'temperature': 1.0, 'max_tokens': 1024}
    """
    if not own:
        return base if type(base) is FrozenMap else FrozenMap(base or {})
    if not base:
        return own if type(own) is FrozenMap else FrozenMap(own)
    return FrozenMap({**base, **own})
