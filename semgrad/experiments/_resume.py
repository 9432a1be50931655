"""Resuming from a run folder: the saved ``config.json`` plus the flags typed now, which may only extend it.

``semgrad run --resume --out DIR`` continues the run exactly as ``DIR/config.json``
describes it. Flags typed with it may only extend the run (more iterations, a
larger call or token budget) or change how it runs (concurrency, timeout, cache);
any other difference is refused in one line.

A run of your own system loads code, and nothing read from a file may decide
what gets imported: so ``config.json``'s system spec is never loaded by itself.
The user types the spec again (``semgrad run my_system.py:build --resume --out
DIR``); it is compared, as text, with the saved one -- a file spec made absolute
first -- and only an equal spec is loaded.

Nor may a file decide where calls go, with the API key, or where a file is
written outside the run folder: a run on a real backend resumes only when its
``--backend`` (and ``--base-url``, when it has one) is typed again, and a run
with a cache only when its ``--cache`` is (``--cache ''`` goes on without it).
Anyone who can write to a run folder could otherwise send the key to their own
server, or make the cache write into any file.

Examples:
    >>> from semgrad.experiments import RunConfig
    >>> saved = RunConfig("bbh:navigate", data_dir="d", iterations=2)
    >>> resumed_config(saved, {"iterations": 4}, "runs/x").iterations
    4
    >>> resumed_config(saved, {"seed": 1}, "runs/x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    semgrad.experiments._run.SetupError: cannot resume runs/x: its config.json has seed 0, not 1; --resume may only ...
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .._files import read_regular_text
from ._config import RunConfig
from ._run import SetupError

__all__ = ["load_saved_config", "resumed_config"]

#: The largest config.json read back (real ones are a kilobyte or two).
CONFIG_BYTES = 2**20
#: May change freely on resume: how the run runs, not what it computes.
_FREE = ("concurrency", "timeout", "cache", "simulated_latency")
#: May only grow on resume (None means no limit, the largest).
_GROW = ("iterations", "max_calls", "max_tokens")


def load_saved_config(run_dir: str | os.PathLike[str]) -> RunConfig:
    """The `RunConfig` in ``run_dir/config.json``.

    Raises:
        SetupError: No such file, or not a run config (one line).
    """
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise SetupError(f"nothing to resume in {run_dir}: no config.json")
    try:
        return RunConfig.from_json(json.loads(read_regular_text(path, limit=CONFIG_BYTES)))
    except (OSError, ValueError, TypeError, RecursionError) as exc:
        why = "JSON nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise SetupError(f"cannot resume {run_dir}: {path} is not a run config ({why})") from None


def _grows(before: Any, after: Any) -> bool:
    if after is None:
        return True
    return before is not None and after >= before


def resumed_config(saved: RunConfig, given: Mapping[str, Any], run_dir: str | os.PathLike[str]) -> RunConfig:
    """`saved` with the typed flags `given` (RunConfig field names; ``task`` when typed) applied.

    Raises:
        SetupError: A typed flag would change what the run computes, a smaller
            value was given for one that may only grow, or the run is of your
            own system and its spec was not typed again (or differs).
    """
    _check_destinations(saved, given, run_dir)
    if saved.data:
        _check_system(saved, given.get("task"), run_dir)
    elif given.get("task") not in (None, saved.task):
        raise SetupError(f"cannot resume {run_dir}: it is a run of {saved.task}, not {given['task']}")
    changes: dict[str, Any] = {}
    for name, value in given.items():
        if name == "task" or name not in attrs.fields_dict(RunConfig):
            continue
        before = getattr(saved, name)
        if name == "data" and value is not None:
            value = str(Path(value).resolve())
        if value == before or name in _FREE or (name in _GROW and _grows(before, value)):
            changes[name] = value
            continue
        flag = "--" + name.replace("_", "-")
        if name in _GROW:
            raise SetupError(f"cannot resume {run_dir}: {flag} may only grow ({before} saved, {value} given)")
        raise SetupError(
            f"cannot resume {run_dir}: its config.json has {name} {before}, not {value}; --resume may only "
            "extend a run (more --iterations, a larger --max-calls or --max-tokens) or change --concurrency, "
            "--timeout, --cache"
        )
    return attrs.evolve(saved, **changes)


def _check_destinations(saved: RunConfig, given: Mapping[str, Any], run_dir: str | os.PathLike[str]) -> None:
    """Refuse to take where calls go, or where the cache is written, from ``config.json`` alone."""
    untyped = []
    if saved.backend != "simulated":
        untyped.append(("backend", saved.backend))
        if saved.base_url:
            untyped.append(("base_url", saved.base_url))
    if saved.cache:
        untyped.append(("cache", saved.cache))
    missing = [(name, value) for name, value in untyped if name not in given]
    if not missing:
        return
    flags = " ".join(f"--{name.replace('_', '-')} {shlex.quote(str(value))}" for name, value in missing)
    what = []
    if any(name != "cache" for name, _ in missing):
        where = f" at {saved.base_url}" if saved.base_url else ""
        what.append(f"sends its calls, with your API key, to {saved.backend}{where}")
    if any(name == "cache" for name, _ in missing):
        what.append(f"writes its cache to {saved.cache}")
    raise SetupError(
        f"{run_dir} {' and '.join(what)}; semgrad takes these only from what you type: "
        f"semgrad run --resume --out {shlex.quote(str(run_dir))} {flags}"
        + (" (or --cache '' to go on without the cache)" if any(name == "cache" for name, _ in missing) else "")
    )


def _check_system(saved: RunConfig, typed: str | None, run_dir: str | os.PathLike[str]) -> None:
    from ._custom import canonical_spec

    if typed is None:
        raise SetupError(
            f"{run_dir} is a run of your own system {saved.task}; semgrad loads code only when you type it: "
            f"semgrad run {saved.task} --resume --out {run_dir}"
        )
    if canonical_spec(typed) != saved.task:
        raise SetupError(f"cannot resume {run_dir}: it is a run of {saved.task}, not {canonical_spec(typed)}")
