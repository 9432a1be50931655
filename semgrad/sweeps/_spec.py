"""Sweep specs: a TOML file naming a grid of runs, checked before anything starts.

A spec names tasks, seeds, optimizers and the models per role; every
combination is one run (a `RunConfig`) with its own run directory, named
``<task>__seed<seed>__<optimizer>`` (plus ``__<models>`` when the spec gives
several model sets). Everything wrong with a spec is a `SweepError` with one
line naming the problem.

Theory of operation: `parse_spec` reads plain TOML data into a frozen
`SweepSpec` (types checked, task groups such as ``bbh:all`` expanded, relative
paths resolved against the spec's folder); `SweepSpec.runs` expands the grid in
a fixed order (tasks, then seeds, then optimizers, then model sets), so run
names, run order and the combined report are the same on every machine.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .._files import read_regular_text, unreadable
from ..core import FrozenMap
from ..experiments import BACKENDS, OPTIMIZERS, RunConfig
from ..tasks import DataError, expand_task_names, paper_iterations

__all__ = ["ModelSet", "PlannedRun", "Resources", "SweepError", "SweepSpec", "load_spec", "parse_spec"]

#: `RunConfig` fields a spec's ``[settings]`` table may set (shared by every run).
SETTINGS = (
    "data_dir",
    "backend",
    "iterations",
    "k",
    "train",
    "validation",
    "test",
    "base_url",
    "concurrency",
    "timeout",
    "cache",
    "max_calls",
    "max_tokens",
    "simulated_latency",
    "protocol",
    "temperature",
    "max_output_tokens",
    *(
        f"{role}_{option}"
        for role in ("forward", "backward", "optimizer")
        for option in ("temperature", "max_output_tokens")
    ),
    "breadth",
    "minibatch",
    "max_metric_calls",
    "max_items",
)
#: The most a sweep spec may hold: a spec is a page of TOML (a FIFO or a device is refused).
MAX_SPEC_BYTES = 2**20

_OWN = ("system", "data", "metric", "criteria", "llm")
_TOP = ("name", "tasks", "seeds", "optimizers", "models", "settings", "resources", *_OWN)
_MODEL_KEYS = ("name", "model", "forward", "backward", "optimizer")
_RESOURCE_KEYS = ("num_cpus", "cpus_per_run", "max_retries", "max_parallel", "lease_seconds")
_RESOURCE_NUMBERS = ("cpus_per_run", "lease_seconds")
_INTS = (
    "iterations",
    "k",
    "train",
    "validation",
    "test",
    "concurrency",
    "max_calls",
    "max_tokens",
    "max_output_tokens",
    "forward_max_output_tokens",
    "backward_max_output_tokens",
    "optimizer_max_output_tokens",
    "breadth",
    "minibatch",
    "max_metric_calls",
    "max_items",
)
_FLOATS = (
    "timeout",
    "simulated_latency",
    "temperature",
    "forward_temperature",
    "backward_temperature",
    "optimizer_temperature",
)
_TEXTS = ("data_dir", "backend", "base_url", "cache", "protocol")


class SweepError(ValueError):
    """A sweep cannot start: a bad spec, an unknown name, a run directory of another config."""


@attrs.frozen
class ModelSet:
    """The model per role of some runs (None: the backend's default).

    Attributes:
        name: Tells model sets apart in run names (needed when a spec has several).
        model: The model for every role not named below.
        forward, backward, optimizer: The model per role.
    """

    name: str | None = None
    model: str | None = None
    forward: str | None = None
    backward: str | None = None
    optimizer: str | None = None

    def config_fields(self) -> dict[str, Any]:
        """The `RunConfig` fields this model set fills in."""
        return {
            "model": self.model,
            "forward_model": self.forward,
            "backward_model": self.backward,
            "optimizer_model": self.optimizer,
        }


@attrs.frozen
class Resources:
    """How runs are scheduled.

    Attributes:
        num_cpus: The CPUs of a Ray started here (None: all of this machine's).
        cpus_per_run: The CPUs each run reserves (Ray's ``num_cpus`` per task).
        max_retries: How often Ray retries a run whose worker died.
        max_parallel: Runs in progress at once (None: as many as the CPUs allow).
        lease_seconds: Under Ray, the call slots a dead worker held are freed
            this long after its last heartbeat (heartbeats go every tenth of it).
    """

    num_cpus: int | None = None
    cpus_per_run: float = 1.0
    max_retries: int = 3
    max_parallel: int | None = None
    lease_seconds: float = 10.0


@attrs.frozen
class PlannedRun:
    """One run of a sweep: its directory name and its config.

    Attributes:
        name: The run directory's name inside the sweep directory.
        config: What the run does.
        models: The name of its model set (None when the spec has one).
    """

    name: str
    config: RunConfig
    models: str | None = None


@attrs.frozen
class SweepSpec:
    """A grid of runs and the settings they share.

    Attributes:
        name: The sweep's name (default: the spec file's stem).
        tasks: Task names, groups expanded (``bbh:all`` is the 27 BBH tasks).
        seeds: One run per seed.
        optimizers: Names from `semgrad.experiments.OPTIMIZERS`; the one-parameter
            ablation names its parameter: ``"one-parameter:answer.instruction"``.
        models: One or more model sets.
        settings: `RunConfig` fields shared by every run.
        max_concurrent_calls: Calls in flight at once across the whole sweep, per backend.
        resources: How runs are scheduled.

    Examples:
        >>> spec = parse_spec({"tasks": ["gsm8k"], "seeds": [0, 1], "optimizers": ["tgd"]}, name="demo")
        >>> [run.name for run in spec.runs()]
        ['gsm8k__seed0__tgd', 'gsm8k__seed1__tgd']
    """

    name: str
    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    optimizers: tuple[str, ...]
    models: tuple[ModelSet, ...] = (ModelSet(),)
    settings: FrozenMap[str, Any] = FrozenMap()
    max_concurrent_calls: FrozenMap[str, int] = FrozenMap()
    resources: Resources = Resources()

    @property
    def backend(self) -> str:
        """The backend every run uses."""
        return str(self.settings.get("backend", "simulated"))

    def runs(self) -> tuple[PlannedRun, ...]:
        """Every combination, in a fixed order: tasks, then seeds, optimizers and model sets."""
        several = len(self.models) > 1
        return tuple(
            PlannedRun(
                run_name(
                    _short_task(task, self.settings),
                    seed,
                    optimizer.replace(":", "-"),
                    models.name if several else None,
                ),
                RunConfig(
                    task=task,
                    seed=seed,
                    optimizer=optimizer.partition(":")[0],
                    param=optimizer.partition(":")[2] or None,
                    **{"iterations": paper_iterations(task), **self.settings},  # unset: the paper's (LIAR 8)
                    **models.config_fields(),
                ),
                models.name if several else None,
            )
            for task in self.tasks
            for seed in self.seeds
            for optimizer in self.optimizers
            for models in self.models
        )

    def describe(self) -> dict[str, Any]:
        """The spec as plain data for ``sweep.json`` (without the data directory, which is machine-specific)."""
        return {
            "name": self.name,
            "tasks": list(self.tasks),
            "seeds": list(self.seeds),
            "optimizers": list(self.optimizers),
            "models": [attrs.asdict(m) for m in self.models],
            "settings": {k: v for k, v in self.settings.items() if k not in ("data_dir", "cache", "data")},
            "max_concurrent_calls": dict(self.max_concurrent_calls),
        }


def _short_task(task: str, settings: Mapping[str, Any]) -> str:
    """A run name's task: your own system as its file's (or module's) stem and function."""
    if not settings.get("data"):
        return task
    from ..experiments._custom import parse_system_spec

    target, name = parse_system_spec(task)
    return f"{Path(target).stem if target.endswith('.py') else target}-{name}"


def run_name(task: str, seed: int, optimizer: str, models: str | None = None) -> str:
    """The directory name of a run: readable, stable, safe on every file system.

    Examples:
        >>> run_name("bbh:navigate", 0, "neighbor-sgd")
        'bbh-navigate__seed0__neighbor-sgd'
    """
    parts = [task.replace(":", "-"), f"seed{seed}", optimizer, *([models] if models else [])]
    return "__".join(parts)


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Read and check a TOML sweep spec; relative paths in it are relative to its folder.

    Raises:
        SweepError: The file cannot be read, is not TOML, or names something invalid.
    """
    file = Path(path)
    try:
        data = tomllib.loads(read_regular_text(file, limit=MAX_SPEC_BYTES))
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepError(f"cannot read the sweep spec {file}: {unreadable(exc)}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"the sweep spec {file} is not valid TOML: {exc}") from None
    except (ValueError, RecursionError) as exc:  # a 5,000-digit integer, arrays nested thousands deep
        raise SweepError(f"the sweep spec {file} is not valid TOML: {unreadable(exc)}") from None
    return parse_spec(data, name=file.stem, base_dir=file.resolve().parent)


def parse_spec(
    data: Mapping[str, Any], *, name: str = "sweep", base_dir: str | os.PathLike[str] | None = None
) -> SweepSpec:
    """Check plain spec data (as `tomllib` reads it) and build a `SweepSpec`.

    Args:
        data: The spec's tables and keys.
        name: The sweep's name when the data gives none.
        base_dir: Relative ``data_dir`` and ``cache`` paths are resolved against it.

    Raises:
        SweepError: One line naming the first problem.

    Examples:
        >>> parse_spec({"tasks": ["gsm8k"], "seeds": [0], "optimizers": ["adam"]})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.sweeps._spec.SweepError: unknown optimizer 'adam' in optimizers; choose from: neighbor-sgd, tgd, ...
    """
    _known_keys(data, _TOP, "the sweep spec")
    settings = _settings(_table(data, "settings"), base_dir)
    own = _own_system(data, base_dir)
    settings.update(own)
    if own.get("llm"):
        if settings.get("backend", "simulated") != "simulated":
            raise SweepError(f"llm replaces the backend: drop backend = {settings['backend']!r} from [settings]")
        settings["backend"] = "custom"
    spec = SweepSpec(
        name=_text(data.get("name", name), "name"),
        tasks=(own.pop("task"),) if "task" in own else _tasks(_list(data, "tasks", str)),
        seeds=_unique(_list(data, "seeds", int), "seeds"),
        optimizers=_optimizers(_list(data, "optimizers", str)),
        models=_model_sets(data.get("models", {})),
        settings=FrozenMap({k: v for k, v in settings.items() if k != "task"}),
        max_concurrent_calls=_limits(
            _table(data, "settings").get("max_concurrent_calls"), settings.get("backend", "simulated")
        ),
        resources=_resources(_table(data, "resources")),
    )
    try:
        spec.runs()
    except (TypeError, ValueError) as exc:
        raise SweepError(f"invalid [settings]: {exc}") from None
    return spec


def _own_system(data: Mapping[str, Any], base_dir: str | os.PathLike[str] | None) -> dict[str, Any]:
    """The spec's own system (as ``task``), items, metric, criteria and LLM: paths made absolute against
    `base_dir`, code specs canonical (the spec is typed by the user, so it may name code)."""
    from ..experiments._custom import canonical_spec
    from ..experiments._user_code import canonical_code_spec, is_code_spec

    own = {key: _text(data[key], key) for key in _OWN if key in data}
    if ("system" in own) != ("data" in own):
        raise SweepError('a sweep of your own system gives both system = "FILE.py:FUNCTION" and data = "FILE"')
    if "system" in own and "tasks" in data:
        raise SweepError("a sweep of your own system names no tasks: drop tasks, or system and data")

    def here(spec: str) -> str:
        target, colon, name = spec.rpartition(":")
        target, name = (target, name) if colon and name.isidentifier() else (spec, "")
        if base_dir is not None and (target.endswith(".py") or "/" in target):
            target = str(Path(base_dir, os.path.expanduser(target)))
        return f"{target}:{name}" if name else target

    found: dict[str, Any] = {}
    if "system" in own:
        found["task"] = canonical_spec(here(own["system"]))
        found["data"] = str(Path(base_dir or ".", os.path.expanduser(own["data"])).resolve())
    if "llm" in own:
        found["llm"] = canonical_code_spec(here(own["llm"]), "make")
    if "metric" in own:
        metric = own["metric"]
        found["metric"] = canonical_code_spec(here(metric), "metric") if is_code_spec(metric) else metric
    if "criteria" in own:
        found["criteria"] = own["criteria"]
    return found


def _known_keys(table: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in known:
            raise SweepError(f"unknown key {key!r} in {where}; known keys: {', '.join(known)}")


def _table(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise SweepError(f"[{key}] must be a table, got {type(value).__name__}")
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SweepError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _list(data: Mapping[str, Any], key: str, kind: type) -> list[Any]:
    if key not in data:
        mine = ' (or system = "FILE.py:FUNCTION" and data = "FILE" for your own)' if key == "tasks" else ""
        raise SweepError(f"the sweep spec names no {key}: add `{key} = [...]`{mine}")
    value = data[key]
    if not isinstance(value, list):
        raise SweepError(f"{key} must be a list, got {type(value).__name__}")
    if not value:
        raise SweepError(f"the sweep is empty: {key} is an empty list")
    for item in value:
        if not isinstance(item, kind) or isinstance(item, bool):
            raise SweepError(f"{key} must hold {'integers' if kind is int else 'strings'}, got {item!r}")
    return value


def _unique(items: list[Any], what: str) -> tuple[Any, ...]:
    seen = [item for i, item in enumerate(items) if item in items[:i]]
    if seen:
        raise SweepError(f"{what} names {seen[0]!r} twice")
    return tuple(items)


def _tasks(names: list[str]) -> tuple[str, ...]:
    try:
        return expand_task_names(*names)
    except DataError as exc:
        raise SweepError(str(exc)) from None


def _optimizers(names: list[str]) -> tuple[str, ...]:
    for name in names:
        optimizer, colon, param = name.partition(":")
        if colon and (optimizer != "one-parameter" or not param.strip()):
            raise SweepError(f"optimizer {name!r}: only one-parameter takes a parameter (one-parameter:NAME)")
        if optimizer == "one-parameter" and not colon:
            raise SweepError("one-parameter trains one named parameter: write one-parameter:NAME in optimizers")
        if optimizer not in OPTIMIZERS:
            raise SweepError(f"unknown optimizer {name!r} in optimizers; choose from: {', '.join(OPTIMIZERS)}")
    return _unique(names, "optimizers")


def _model_sets(value: Any) -> tuple[ModelSet, ...]:
    tables = value if isinstance(value, list) else [value]
    if not tables:
        raise SweepError("the sweep is empty: models is an empty list")
    sets = []
    for table in tables:
        if not isinstance(table, Mapping):
            raise SweepError(f"models must be a table or a list of tables, got {type(table).__name__}")
        _known_keys(table, _MODEL_KEYS, "[models]")
        sets.append(ModelSet(**{k: _text(v, f"models.{k}") for k, v in table.items()}))
    if len(sets) > 1:
        names = [s.name for s in sets]
        if None in names:
            raise SweepError("with several model sets, give each a `name` (it goes into the run names)")
        _unique([n.replace("/", "-") for n in names if n], "models")
        sets = [attrs.evolve(s, name=s.name.replace("/", "-") if s.name else None) for s in sets]
    return tuple(sets)


def _settings(table: Mapping[str, Any], base_dir: str | os.PathLike[str] | None) -> dict[str, Any]:
    _known_keys(table, (*SETTINGS, "max_concurrent_calls"), "[settings]")
    settings = {}
    for key, value in table.items():
        if key == "max_concurrent_calls":
            continue
        if key in _INTS and (not isinstance(value, int) or isinstance(value, bool)):
            raise SweepError(f"settings.{key} must be an integer, got {value!r}")
        if key == "temperature" and value == "none":  # TOML has no null: no temperature is sent
            settings[key] = None
            continue
        if key in _FLOATS and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            also = ' (or "none": no temperature is sent)' if key == "temperature" else ""
            raise SweepError(f"settings.{key} must be a number{also}, got {value!r}")
        if key in _TEXTS:
            _text(value, f"settings.{key}")
        if key in ("data_dir", "cache") and base_dir is not None:
            value = str(Path(base_dir, os.path.expanduser(value)))
        settings[key] = float(value) if key in _FLOATS else value
    if settings.get("backend", "simulated") not in BACKENDS:
        raise SweepError(f"unknown backend {settings['backend']!r} in [settings]; choose from: {', '.join(BACKENDS)}")
    return settings


def _limits(value: Any, backend: str) -> FrozenMap[str, int]:
    if value is None:
        return FrozenMap()
    limits = value if isinstance(value, Mapping) else {backend: value}
    for name, limit in limits.items():
        if name not in BACKENDS:
            raise SweepError(
                f"unknown backend {name!r} in settings.max_concurrent_calls; choose from: {', '.join(BACKENDS)}"
            )
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise SweepError(
                f"settings.max_concurrent_calls must be a positive integer (or a table of them), got {limit!r}"
            )
    return FrozenMap(limits)


def _resources(table: Mapping[str, Any]) -> Resources:
    _known_keys(table, _RESOURCE_KEYS, "[resources]")
    for key, value in table.items():
        real = key in _RESOURCE_NUMBERS
        number = isinstance(value, (int, float)) if real else isinstance(value, int)
        # TOML reads `inf` and `nan` as floats: neither is a number of CPUs or seconds (nan passed `< 1e-9`)
        if (
            not number
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value < (0 if key == "max_retries" else 1e-9)
        ):
            raise SweepError(f"resources.{key} must be a positive {'number' if real else 'integer'}, got {value!r}")
    values: dict[str, Any] = {k: float(v) if k in _RESOURCE_NUMBERS else v for k, v in table.items()}
    return Resources(**values)
