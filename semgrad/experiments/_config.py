"""Run configuration: what `semgrad run` was asked to do, as one frozen value."""

from __future__ import annotations

import json
import math
import typing
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .._files import write_text_atomically
from ..core import FrozenMap, optim
from ..core.calls import ENGINES
from ..core.optim import Transform
from ..tasks import MAX_ITEMS, PAPER_MODELS

__all__ = [
    "BACKENDS",
    "METRIC_NAMES",
    "NAMED_BACKENDS",
    "BASELINES",
    "OPTIMIZERS",
    "PARETO",
    "PROTOCOLS",
    "RunConfig",
    "make_optimizer",
]

BACKENDS = ("simulated", "openai-compatible", "anthropic", "custom")
#: The backends a user chooses by name; "custom" is the LLM of ``--llm FILE.py:make``.
NAMED_BACKENDS = BACKENDS[:3]
#: The metrics named by a word; ``--metric FILE.py:fn`` names the user's own.
METRIC_NAMES = ("exact", "normalized", "numeric", "judge")
#: "official": the gate scores candidates on the training items and that forward is reused
#: (the official code's loop); "heldout": the gate scores them on a disjoint validation split.
PROTOCOLS = ("official", "heldout")
#: What ``--batch`` may send as provider batches: the final evaluation, or every phase.
BATCH_PHASES = ("eval", "all")
#: The paper's baselines as their packages run them (see `semgrad.core.optim`).
BASELINES = ("textgrad", "optoprime", "copro", "gepa")
#: The Pareto searches: GEPA's (a baseline) and ours, driven by semantic gradients; ``--minibatch`` and
#: ``--max-metric-calls`` are theirs.
PARETO = ("gepa", "pareto-sgd")
OPTIMIZERS = (
    "neighbor-sgd",
    "tgd",
    "via-feedback",
    *[a for a in optim.ABLATIONS if a != "full"],
    *BASELINES,
    "pareto-sgd",
)
#: The optimizers whose validation gate ``--gate-rule`` chooses the rule of.
GATED = ("neighbor-sgd", "via-feedback", *[a for a in optim.ABLATIONS if a not in ("full", "no-gate")])


def _choice(allowed: tuple[str, ...], what: str) -> Any:
    def check(instance: Any, attribute: Any, value: str) -> None:
        if value not in allowed:
            raise ValueError(f"unknown {what} {value!r}; choose one of: {', '.join(allowed)}")

    return check


def _metric(instance: Any, attribute: Any, value: str) -> None:
    from ._user_code import is_code_spec

    if value not in METRIC_NAMES and not is_code_spec(value):
        raise ValueError(
            f"unknown metric {value!r}; choose one of: {', '.join(METRIC_NAMES)}, or your own FILE.py:FUNCTION"
        )


def _non_negative(instance: Any, attribute: Any, value: int | None) -> None:
    if value is not None and value < 0:
        raise ValueError(f"--{attribute.name.replace('_', '-')} must be 0 or more, got {value}")


def _positive(instance: Any, attribute: Any, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"--{attribute.name.replace('_', '-')} must be at least 1, got {value}")


def _at_least(low: float, *, strictly: bool = False) -> Any:
    """A validator: a finite number at least `low` (above it, when `strictly`), or None."""

    def check(instance: Any, attribute: Any, value: float | None) -> None:
        if value is None:
            return
        if not (math.isfinite(value) and (value > low if strictly else value >= low)):
            bound = f"above {low:g}" if strictly else f"at least {low:g}"
            raise ValueError(f"--{attribute.name.replace('_', '-')} must be a number {bound}, got {value}")

    return check


#: The most iterations a run may ask for: a run is planned (every iteration replayed offline) before it
#: starts, so an absurd number from a file would hang it there.
MAX_ITERATIONS = 1000


def _iterations(instance: Any, attribute: Any, value: int) -> None:
    if not 0 <= value <= MAX_ITERATIONS:
        raise ValueError(f"--iterations must be from 0 to {MAX_ITERATIONS}, got {str(value)[:20]}")


def _gate_rule(instance: Any, attribute: Any, value: str) -> None:
    """A validator: a rule of `optim.GATE_RULES`, other than the default only for an optimizer with the gate."""
    _choice(optim.GATE_RULES, "gate rule")(instance, attribute, value)
    if value != "sum" and instance.optimizer not in GATED:
        raise ValueError(f"--gate-rule {value} is for the optimizers with a validation gate: {', '.join(GATED)}")


def _gate_alpha(instance: Any, attribute: Any, value: float) -> None:
    """A validator: the lcb rule's level, in [1e-9, 0.5] (the range `optim.validation_gate` takes)."""
    if not 1e-9 <= value <= 0.5:
        raise ValueError(f"--gate-alpha must be from 1e-09 to 0.5, got {value}")


def _no_credentials(instance: Any, attribute: Any, value: str | None) -> None:
    """A validator: a base URL without ``user:password@`` (config.json keeps the URL, and never a key)."""
    if value is None:
        return
    try:
        parts = urllib.parse.urlsplit(value)
        has_credentials = parts.username is not None or parts.password is not None
    except ValueError:  # an unreadable URL: the backend says what is wrong with it
        return
    if has_credentials:
        raise ValueError(
            "--base-url must not hold credentials (user:password@host): the run's config.json keeps the URL; "
            "pass the key in the backend's API-key environment variable"
        )


@attrs.frozen
class RunConfig:
    """Everything a run depends on (never an API key).

    Saved as ``config.json`` in the run directory; `--resume` refuses a run
    directory whose config differs in anything that changes results.

    With `data` set, `task` is a system spec (``my_system.py:build``) run on the
    items in that file and scored by `metric` (with `criteria` for the judge);
    see `semgrad.experiments._custom`.
    """

    task: str
    data_dir: str | None = None
    backend: str = attrs.field(default="simulated", validator=_choice(BACKENDS, "backend"))
    optimizer: str = attrs.field(default="neighbor-sgd", validator=_choice(OPTIMIZERS, "optimizer"))
    iterations: int = attrs.field(default=4, validator=_iterations)
    k: int = attrs.field(default=2, validator=_positive)
    seed: int = 0
    train: int | None = attrs.field(default=None, validator=_positive)
    validation: int | None = attrs.field(default=None, validator=_non_negative)
    test: int | None = attrs.field(default=None, validator=_positive)
    base_url: str | None = attrs.field(default=None, validator=_no_credentials)
    model: str | None = None
    forward_model: str | None = None
    backward_model: str | None = None
    optimizer_model: str | None = None
    concurrency: int = attrs.field(default=8, validator=_positive)
    timeout: float = attrs.field(default=120.0, validator=_at_least(0, strictly=True))
    cache: str | None = None
    max_calls: int | None = attrs.field(default=None, validator=_positive)
    max_tokens: int | None = attrs.field(default=None, validator=_positive)
    simulated_latency: float = attrs.field(default=0.0, validator=_at_least(0))
    #: "official" or "heldout"; None picks "heldout" when a validation size is given, else "official".
    protocol: str = attrs.field(default=None, validator=attrs.validators.optional(_choice(PROTOCOLS, "protocol")))
    param: str | None = attrs.field(default=None)
    #: None: no temperature is sent (models that refuse one: Claude Opus 4.7, OpenAI's reasoning models),
    #: except to the roles whose own temperature is set.
    temperature: float | None = attrs.field(default=0.0, validator=_at_least(0))
    max_output_tokens: int = attrs.field(default=1024, validator=_positive)
    forward_temperature: float | None = attrs.field(default=None, validator=_at_least(0))
    backward_temperature: float | None = attrs.field(default=None, validator=_at_least(0))
    optimizer_temperature: float | None = attrs.field(default=None, validator=_at_least(0))
    forward_max_output_tokens: int | None = attrs.field(default=None, validator=_positive)
    backward_max_output_tokens: int | None = attrs.field(default=None, validator=_positive)
    optimizer_max_output_tokens: int | None = attrs.field(default=None, validator=_positive)
    data: str | None = None
    #: Your own data: "exact" and "normalized" compare normalised text. The paper's tasks: "exact" (the
    #: default) is the protocol's metric (`semgrad.tasks.Task.metric`); "normalized" or "numeric" replaces it.
    #: Or the user's own metric, ``FILE.py:FUNCTION`` (made absolute), loaded only when typed.
    metric: str = attrs.field(default="exact", validator=_metric)
    criteria: str | None = None
    breadth: int = attrs.field(default=10, validator=attrs.validators.ge(2))
    #: The gate's acceptance rule, "sum" (strict) or "lcb" (noise-aware; see `optim.validation_gate`), and the
    #: lcb bound's one-sided level.
    gate_rule: str = attrs.field(default="sum", validator=_gate_rule)
    gate_alpha: float = attrs.field(default=0.05, validator=_gate_alpha)
    #: The Pareto searches' (`PARETO`) training items per proposal, and their budget in metric calls (one per
    #: item scored; None: no budget but `iterations`).
    minibatch: int = attrs.field(default=3, validator=_positive)
    max_metric_calls: int | None = attrs.field(default=None, validator=_positive)
    #: The most items a data file may hold; None: `semgrad.tasks.MAX_ITEMS` (`items_limit`).
    max_items: int | None = attrs.field(default=None, validator=_positive)

    #: The user's own LLM factory (``--llm FILE.py:make``, made absolute; the backend is then "custom"),
    #: loaded only when typed.
    llm: str | None = None
    #: Mark each request's stable prefix (its system text) for the provider's prompt cache (Anthropic's
    #: ``cache_control``; OpenAI caches prefixes by itself): ``--prompt-cache on|off``. It changes no reply.
    prompt_cache: bool = True

    #: ``--batch``: "eval" sends the final evaluation as provider batches (half price, answered within a
    #: day), "all" training too; None: every call is made at once. `batch_poll`: seconds before a batch's
    #: first status poll (the waits grow from there, up to a minute or `batch_poll`).
    batch: str | None = attrs.field(default=None, validator=attrs.validators.optional(_choice(BATCH_PHASES, "--batch")))
    batch_poll: float = attrs.field(default=5.0, validator=_at_least(0, strictly=True))

    #: Fields that may differ between a run and its resumption.
    RESUMABLE_CHANGES = (
        "prompt_cache",
        "iterations",
        "concurrency",
        "timeout",
        "batch",
        "batch_poll",
        "cache",
        "max_calls",
        "max_tokens",
        "simulated_latency",
        "max_items",
    )

    @property
    def items_limit(self) -> int:
        """The most items a data file of this run may hold: `max_items`, else `semgrad.tasks.MAX_ITEMS`.

        Examples:
            >>> RunConfig("gsm8k").items_limit, RunConfig("gsm8k", max_items=50).items_limit
            (1000000, 50)
        """
        return MAX_ITEMS if self.max_items is None else self.max_items

    def models(self) -> dict[str, str]:
        """The model per engine, for backends that take one (an engine left out runs on `model`).

        Backward calls run on the optimizer model unless `backward_model` names one, as the
        paper's code runs them (its ``opt_model`` serves backward and optimizer calls alike).

        Examples:
            >>> RunConfig("gsm8k", model="gpt-4o-mini", optimizer_model="gpt-4-turbo").models()
            {'backward': 'gpt-4-turbo', 'optimizer': 'gpt-4-turbo'}

        Under the official protocol on an OpenAI-compatible server, a run that names no
        ``model`` runs each role on the paper's (`semgrad.tasks.PAPER_MODELS`):

            >>> RunConfig("gsm8k", backend="openai-compatible").models()
            {'forward': 'gpt-4o-mini', 'backward': 'gpt-4-turbo', 'optimizer': 'gpt-4-turbo'}
        """
        backward = self.backward_model or self.optimizer_model
        found = {"forward": self.forward_model, "backward": backward, "optimizer": self.optimizer_model}
        if self.protocol == "official" and not self.data and self.backend == "openai-compatible" and not self.model:
            # the paper's models by default: forward gpt-4o-mini, backward and rewrites gpt-4-turbo
            found = {role: found[role] or PAPER_MODELS[role] for role in found}
            found["backward"] = self.backward_model or self.optimizer_model or PAPER_MODELS["backward"]
        return {k: v for k, v in found.items() if v}

    def __attrs_post_init__(self) -> None:
        if self.protocol is None:  # a validation size asks for the held-out protocol; else the paper's
            object.__setattr__(self, "protocol", "heldout" if self.validation else "official")
        if (self.backend == "custom") != bool(self.llm):
            raise ValueError("the custom backend is the LLM of --llm FILE.py:make: give --llm, not --backend custom")
        if not self.data:  # the paper's tasks: split and scored as the paper does
            if self.protocol == "official" and self.validation:
                raise ValueError(
                    "the official protocol has no validation set: drop --validation, or pass --protocol heldout"
                )
            if self.metric == "judge" or self.criteria:
                raise ValueError(
                    "--metric and --criteria are for your own system (with --data); "
                    "the paper's tasks are scored as the paper scores them (or --metric normalized / numeric)"
                )
        elif self.criteria and self.metric != "judge":
            raise ValueError("--criteria is for --metric judge")
        if self.batch and self.backend == "simulated":
            raise ValueError(
                "--batch needs a provider with a batch API (--backend openai-compatible on OpenAI's API, or "
                "anthropic); the simulated backend has none: drop --batch"
            )

    @param.validator
    def _check_param(self, attribute: Any, value: str | None) -> None:
        if self.optimizer == "one-parameter" and not value:
            raise ValueError("--optimizer one-parameter trains one named parameter: pass --param NAME")
        if value and self.optimizer != "one-parameter":
            raise ValueError(f"--param is for --optimizer one-parameter, not {self.optimizer}")

    def sampling(self) -> FrozenMap[str, FrozenMap[str, Any]]:
        """Sampling options per engine: the shared temperature and output-token cap, and each role's overrides.

        Examples:
            >>> opts = RunConfig("gsm8k", forward_temperature=0.7).sampling()
            >>> dict(opts["forward"]), dict(opts["backward"])
            ({'temperature': 0.7, 'max_tokens': 1024}, {'temperature': 0.0, 'max_tokens': 1024})
            >>> opts = RunConfig("gsm8k", temperature=None, forward_temperature=0.0).sampling()
            >>> dict(opts["forward"]), dict(opts["optimizer"])  # None: no temperature is sent
            ({'temperature': 0.0, 'max_tokens': 1024}, {'max_tokens': 1024})
        """
        found = {}
        for engine in ENGINES:
            temperature = getattr(self, f"{engine}_temperature")
            temperature = self.temperature if temperature is None else temperature
            tokens = getattr(self, f"{engine}_max_output_tokens")
            options = {} if temperature is None else {"temperature": temperature}
            options["max_tokens"] = self.max_output_tokens if tokens is None else tokens
            found[engine] = FrozenMap(options)
        return FrozenMap(found)

    def to_json(self) -> dict[str, Any]:
        """A plain dict for ``config.json``."""
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunConfig:
        """The config saved in ``config.json``, each field checked to be of its type first.

        Raises:
            ValueError: Not an object, or a field of another type (one line naming it).

        Examples:
            >>> RunConfig.from_json({"task": "gsm8k", "iterations": 2.5})
            Traceback (most recent call last):
            ...
            ValueError: iterations must be an integer, got 2.5
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        types = _field_types()
        found = {}
        for name, value in data.items():
            if name not in types:
                continue  # a field of another version of semgrad
            allowed = types[name]
            if not (
                (value is None and type(None) in allowed)
                or type(value) in allowed
                or (type(value) is int and float in allowed)
            ):
                what = " or ".join(_TYPE_WORDS[t] for t in allowed)
                raise ValueError(f"{name} must be {what}, got {repr(value)[:60]}")
            found[name] = value
        return cls(**found)

    def save(self, run_dir: Path) -> None:
        """Write ``config.json`` (atomically)."""
        write_text_atomically(run_dir / "config.json", json.dumps(self.to_json(), indent=1) + "\n")

    def differs_from(self, other: RunConfig) -> list[str]:
        """Names of fields that differ and matter for resuming."""
        return [
            f.name
            for f in attrs.fields(RunConfig)
            if f.name not in self.RESUMABLE_CHANGES and getattr(self, f.name) != getattr(other, f.name)
        ]


_TYPE_WORDS = {int: "an integer", float: "a number", str: "text", bool: "true or false", type(None): "null"}


def _field_types() -> dict[str, tuple[type, ...]]:
    """Each `RunConfig` field's allowed JSON value types (``int | None`` gives int and NoneType)."""
    hints = typing.get_type_hints(RunConfig)
    return {f.name: tuple(typing.get_args(hints[f.name]) or (hints[f.name],)) for f in attrs.fields(RunConfig)}


def official_shuffles(config: RunConfig) -> tuple[int, ...]:
    """The sizes of the lists the paper's script for `config`'s task shuffles before its first error-sample
    draw (its module-level generator's only other use): BBH the task file twice (once per split), GSM8K the
    train file then the test file, LIAR the filtered train file once; () when the files are not at hand.

    Examples:
        >>> official_shuffles(RunConfig("gsm8k"))  # no data directory
        ()
    """
    from ..tasks import liar_official_keep, load_bbh, load_gsm8k, load_liar

    if config.data or not config.data_dir:
        return ()
    family, _, name = config.task.partition(":")
    limit = config.items_limit
    try:
        if family == "bbh" and name and name != "all":
            n = len(load_bbh(config.data_dir, name, max_items=limit))
            return (n, n)
        if family == "gsm8k":
            train, test = (load_gsm8k(config.data_dir, f, max_items=limit) for f in ("train", "test"))
            return (len(train), len(test))
        if family == "liar":
            kept = load_liar(config.data_dir, "train", drop_incomplete=False, max_items=limit)
            return (sum(1 for e in kept if liar_official_keep(e)),)
    except Exception:  # the run's own loading reports a missing or malformed file
        return ()
    return ()


def _protocol_options(config: RunConfig, *, planning: bool = False) -> dict[str, Any]:
    """How error samples are drawn and fed back: the paper's way under the official protocol (one generator
    seeded once after the split's shuffles, no fallback, a redrawn sample's feedback reused while its backward
    questions are unchanged), ours otherwise. `planning`: a redrawn sample is asked again, so a plan's dry run
    (every item wrong, every candidate rejected) counts the most backward calls a run can make."""
    if config.protocol == "official":
        return {"draw": "official", "fallback": False, "reuse": not planning, "shuffled": official_shuffles(config)}
    return {"draw": "per-iteration", "fallback": True, "reuse": False}


def make_optimizer(config: RunConfig, *, planning: bool = False) -> Transform:
    """The optimizer a config names (the paper's and its ablations with the protocol's selection, see
    `official_shuffles`; TextGrad under the official protocol with its script's batch,
    `optim.TEXTGRAD_BATCH`, whatever ``--k`` says).

    `planning`: the optimizer a plan drives (see `semgrad.experiments.plan`): under the official protocol a
    redrawn sample's feedback is asked for again instead of reused, so the plan is an upper bound on calls.
    """
    common = _protocol_options(config, planning=planning)
    if config.gate_rule != "sum":
        common["gate"] = optim.validation_gate(rule=config.gate_rule, alpha=config.gate_alpha)
    if config.optimizer == "neighbor-sgd":
        return optim.neighbor_sgd(config.k, seed=config.seed, **common)
    if config.optimizer == "via-feedback":
        return optim.neighbor_sgd(config.k, seed=config.seed, via_feedback=True, **common)
    if config.optimizer == "tgd":
        return optim.tgd(config.k, seed=config.seed)
    if config.optimizer == "textgrad":
        return optim.textgrad(optim.TEXTGRAD_BATCH if config.protocol == "official" else config.k, seed=config.seed)
    if config.optimizer == "optoprime":
        return optim.optoprime(config.k, seed=config.seed)
    if config.optimizer == "copro":
        # No depth: one round per iteration, so the rounds are the run's iterations, and a resumed run given
        # more (--resume --iterations N) is the optimizer it checkpointed and goes on as one started with N.
        return optim.copro(breadth=config.breadth, depth=None)
    if config.optimizer in PARETO:
        return _pareto(config)
    return optim.ablation(config.optimizer, config.k, seed=config.seed, param=config.param, **common)


def _pareto(config: RunConfig) -> Transform:
    """GEPA's search, with GEPA's proposals or ours (one proposal per iteration; ``--max-metric-calls`` its budget)."""
    search = {"minibatch": config.minibatch, "max_metric_calls": config.max_metric_calls, "seed": config.seed}
    if config.optimizer == "gepa":
        return optim.gepa(**search)
    return optim.pareto_sgd(**search)
