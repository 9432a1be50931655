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

Nor may a file decide where the API key goes, or where a new file is written
outside the run folder. Anyone who can write to a run folder could otherwise
send the key to their own server, or have a cache created anywhere:

* a real backend's saved ``base_url`` is used only when ``--base-url`` is typed
  again, unless it is on this machine (a loopback address). Without one, calls
  go to the provider's own API (or ``$OPENAI_BASE_URL``), the key's home;
* a saved cache path is used only when ``--cache`` is typed again (``--cache ''``
  goes on without it), unless the file exists already -- the cache then checks
  that it is a semgrad cache, and changes nothing in any other file -- or lies
  in the run folder.

Everything else still comes from ``config.json`` alone: ``--resume --out DIR``
continues a run as it was started.

Examples:
    >>> from semgrad.experiments import RunConfig
    >>> saved = RunConfig("bbh:navigate", data_dir="d", iterations=2)
    >>> resumed_config(saved, {"iterations": 4}, "runs/x").iterations
    4
    >>> resumed_config(saved, {"seed": 1}, "runs/x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    semgrad.experiments._errors.SetupError: cannot resume runs/x: its config.json has seed 0, not 1; ...
"""

from __future__ import annotations

import ipaddress
import json
import os
import shlex
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .._files import read_regular_text
from ._config import RunConfig
from ._errors import SetupError

__all__ = ["load_saved_config", "resumed_config"]

#: The largest config.json read back (real ones are a kilobyte or two).
CONFIG_BYTES = 2**20
#: May change freely on resume: how the run runs, not what it computes.
_FREE = ("concurrency", "timeout", "cache", "simulated_latency", "max_items", "batch", "batch_poll")
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
    given = _typed_code(saved, given, run_dir)
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
            "--timeout, --cache, --max-items"
        )
    return attrs.evolve(saved, **changes)


def _typed_code(saved: RunConfig, given: Mapping[str, Any], run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """`given` with the LLM and metric specs typed made absolute; the user's own LLM or metric of the saved run
    must be typed again (semgrad loads code only when it is typed, never because config.json names it)."""
    from ._user_code import canonical_code_spec, is_code_spec

    found = dict(given)
    if found.get("llm"):
        found["llm"] = canonical_code_spec(found["llm"], "make")
        found.setdefault("backend", "custom")
    if found.get("metric") and is_code_spec(found["metric"]):
        found["metric"] = canonical_code_spec(found["metric"], "metric")
    missing = [
        f"--{name} {value}"
        for name, value in (("llm", saved.llm), ("metric", saved.metric))
        if value and is_code_spec(value) and name not in found
    ]
    if missing:
        raise SetupError(
            f"{run_dir} runs your own code ({', '.join(missing)}); semgrad loads code only when you type it: "
            f"add {' '.join(missing)} to semgrad run --resume"
        )
    return found


def _check_destinations(saved: RunConfig, given: Mapping[str, Any], run_dir: str | os.PathLike[str]) -> None:
    """Refuse to take from ``config.json`` alone a server the API key would go to, or a new cache file to
    create outside the run folder (see the module's docs). The refusal says what the file claims, as the
    file's words, and never offers them as a command to type."""
    claims, flags = [], []
    if saved.backend != "simulated" and saved.base_url and "base_url" not in given and not _on_this_machine(saved):
        claims.append(f"sends its calls, with your API key, to {_quoted(saved.base_url)}")
        flags.append("--base-url URL (the server you mean)")
    if saved.cache and "cache" not in given and not _known_cache(saved.cache, run_dir):
        claims.append(f"creates its cache at {_quoted(saved.cache)}")
        flags.append("--cache FILE (or --cache '' to go on without one)")
    if claims:
        raise SetupError(
            f"cannot resume {run_dir}: {_file_says(run_dir)} the run {' and '.join(claims)}; that is the file's claim, "
            "not yours, and semgrad takes a server or a new cache file only from what you type: check it, then "
            f"type your own {' and '.join(flags)} after semgrad run --resume --out {shlex.quote(str(run_dir))}"
        )


def _file_says(run_dir: str | os.PathLike[str]) -> str:
    """Whose words follow: the run folder's file (anyone who can write the folder may have put them there)."""
    return f"its file {Path(run_dir) / 'config.json'} says"


def _quoted(value: str) -> str:
    """A value read from a file, quoted as data (and cut short): never to be read as something to type."""
    return repr(value if len(value) <= 200 else value[:199] + "\u2026")


def _on_this_machine(saved: RunConfig) -> bool:
    """Whether the saved base URL is a loopback address (a server on this machine: the key stays here)."""
    try:
        host = urllib.parse.urlsplit(saved.base_url or "").hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _known_cache(path: str, run_dir: str | os.PathLike[str]) -> bool:
    """Whether the saved cache path is a file that exists already, or lies in the run folder."""
    cache = Path(path)
    if cache.is_file():
        return True
    try:
        return cache.resolve().is_relative_to(Path(run_dir).resolve())
    except (OSError, ValueError):
        return False


def _check_system(saved: RunConfig, typed: str | None, run_dir: str | os.PathLike[str]) -> None:
    from ._custom import canonical_spec

    if typed is None:
        raise SetupError(
            f"cannot resume {run_dir}: {_file_says(run_dir)} it is a run of your own system {_quoted(saved.task)}; "
            "semgrad loads code only from a system spec you type, never from a file: if you know that code and "
            f"want it run, type its spec yourself before --resume: semgrad run FILE.py:FUNCTION --resume --out "
            f"{shlex.quote(str(run_dir))}"
        )
    if canonical_spec(typed) != saved.task:
        raise SetupError(
            f"cannot resume {run_dir}: {_file_says(run_dir)} it is a run of {_quoted(saved.task)}, "
            f"not {canonical_spec(typed)}, the system you typed"
        )
