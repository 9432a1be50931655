"""Checkpoints: JSON files (never pickle), written atomically, read without running the file's code.

Values are encoded by a small codec: JSON scalars as themselves, tuples and
`FrozenMap`s tagged so they come back as the same types, and frozen attrs
classes tagged with a stable name. Only the run-state types in the registry
(`semgrad.effects.register_state_type`; semgrad's own are registered by
`semgrad.effects._state_types` and `semgrad.effects._fit_state`) are ever
constructed on load, found by their tag: a tag is a name, never a module path,
so a class may move without breaking a checkpoint, and the module-path tags
older checkpoints hold are registered as aliases. A user's own stage may also
keep its state in types the caller names in code (`fit`'s ``state_types``),
which join the registry for that run under their ``module:QualName``. A file
never decides what gets imported or called: a tag that is not registered, a
field that is not the class's, or a field value of the wrong type is refused
with a `CheckpointError` naming the file.

This module imports no module that defines run state: it reads the registry.
"""

from __future__ import annotations

import json
import os
import types
import typing
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .._files import read_regular_text, unreadable, write_text_atomically
from ..core import FrozenMap
from ._state_types import registered_state_types, state_type, tag_of

__all__ = [
    "CheckpointError",
    "allowed_types",
    "decode",
    "encode",
    "read_checkpoint",
    "state_types",
    "write_checkpoint",
]

FORMAT = "semgrad.checkpoint/1"
#: The largest checkpoint read back (a sanity bound: real ones hold params and a history, well under it).
MAX_BYTES = 512 * 2**20
_REMEDY = "remove the file to start the run over"


class CheckpointError(ValueError):
    """A checkpoint file is missing, unreadable, or belongs to another run."""


def _tag(cls: type) -> str:
    """The ``module:QualName`` tag a caller's own (unregistered) state type is written under."""
    return f"{cls.__module__}:{cls.__qualname__}"


def allowed_types() -> FrozenMap[str, type]:
    """The run-state types a checkpoint may hold, by tag (`registered_state_types`).

    Examples:
        >>> "params" in allowed_types() and "fit-state" in allowed_types()
        True
    """
    return registered_state_types()


_NONE: FrozenMap[str, type] = FrozenMap()


def state_types(types: Any) -> FrozenMap[str, type]:
    """The caller's own run-state types by tag, for `encode` and `decode` (`fit`'s ``state_types``).

    Raises:
        TypeError: One is not an attrs class (the codec writes and checks attrs fields only).

    Examples:
        >>> @attrs.frozen
        ... class Used:
        ...     n: int = 0
        >>> decode(encode(Used(2), state_types([Used])), state_types([Used]))
        Used(n=2)
    """
    if isinstance(types, type) or isinstance(types, (str, bytes)):
        raise TypeError("state_types must be a list of classes, e.g. state_types=[MyState]")
    found = {}
    for cls in types:
        if not (isinstance(cls, type) and attrs.has(cls)):
            raise TypeError(f"state_types must list attrs classes (frozen ones, as run state is), got {cls!r}")
        found[_tag(cls)] = cls
    return FrozenMap(found)


def _known(tag: str, types: Mapping[str, type]) -> type | None:
    """The class `tag` names: a registered one (by tag or old alias), else one of the caller's `types`."""
    return state_type(tag) or types.get(tag)


def _tag_for(cls: type, types: Mapping[str, type]) -> str | None:
    """The tag `cls` is written under: its registered one, else the caller's; None when it is neither."""
    tag = tag_of(cls)
    if tag is None and types.get(_tag(cls)) is cls:
        tag = _tag(cls)
    return tag


def encode(value: Any, types: Mapping[str, type] = _NONE) -> Any:
    """A JSON-ready form of `value` that `decode` turns back into an equal value.

    `types` adds the caller's own run-state types (see `state_types`) to `allowed_types`.

    Examples:
        >>> value = (1, FrozenMap({"a": [2.5, None]}))
        >>> decode(json.loads(json.dumps(encode(value)))) == value
        True
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, types) for v in value]}
    if isinstance(value, list):
        return [encode(v, types) for v in value]
    if isinstance(value, FrozenMap):
        return {"$map": [[encode(k, types), encode(v, types)] for k, v in value.items()]}
    if isinstance(value, dict):
        return {"$dict": [[encode(k, types), encode(v, types)] for k, v in value.items()]}
    if attrs.has(type(value)):
        cls = type(value)
        tag = _tag_for(cls, types)
        if tag is None:
            raise TypeError(
                f"cannot checkpoint {cls.__qualname__}: not a run-state type "
                f"(a stage of your own keeps its state in types you name: fit(..., state_types=[{cls.__name__}]))"
            )
        fields = {f.alias: encode(getattr(value, f.name), types) for f in attrs.fields(cls) if f.init and f.eq}
        return {"$attrs": tag, "fields": fields}
    raise TypeError(f"cannot checkpoint a value of type {type(value).__name__}")


def decode(data: Any, types: Mapping[str, type] = _NONE) -> Any:
    """The value `encode` encoded; `CheckpointError` for anything else (nothing outside the registry
    and the caller's `types` is called).

    Examples:
        >>> decode({"$attrs": "semgrad.cli:main", "fields": {}})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.effects._checkpoint.CheckpointError: names 'semgrad.cli:main', which is not a run-state type (...)
    """
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, types) for v in data]
    if not isinstance(data, dict):
        raise CheckpointError(f"holds a {type(data).__name__}, which JSON does not produce")
    if len(data) == 1 and "$tuple" in data:
        return tuple(decode(v, types) for v in _list(data["$tuple"], "$tuple"))
    if len(data) == 1 and "$map" in data:
        return FrozenMap(_pairs(data["$map"], "$map", types))
    if len(data) == 1 and "$dict" in data:
        return dict(_pairs(data["$dict"], "$dict", types))
    if set(data) == {"$attrs", "fields"}:
        return _instance(data["$attrs"], data["fields"], types)
    raise CheckpointError(f"holds an object with keys {sorted(data)[:5]}, which no run state has")


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise CheckpointError(f"holds a {what} that is not a list")
    return value


def _pairs(value: Any, what: str, types: Mapping[str, type]) -> list[tuple[Any, Any]]:
    pairs = []
    for pair in _list(value, what):
        if not isinstance(pair, list) or len(pair) != 2:
            raise CheckpointError(f"holds a {what} entry that is not a [key, value] pair")
        key = decode(pair[0], types)
        try:
            hash(key)
        except TypeError:
            raise CheckpointError(f"holds a {what} key of type {type(key).__name__}, which cannot be a key") from None
        pairs.append((key, decode(pair[1], types)))
    return pairs


#: `_field_types` per class, kept only while the class lives: a state class of a user's (fit's
#: `state_types`, made in a test function, say) is not kept alive by having been read once.
_FIELD_TYPES: weakref.WeakKeyDictionary[type, dict[str, tuple[str, Any, bool]]] = weakref.WeakKeyDictionary()


def _field_types(cls: type) -> dict[str, tuple[str, Any, bool]]:
    """Alias -> (field name, type hint, required) for the init fields of an allowed class."""
    found = _FIELD_TYPES.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _FIELD_TYPES[cls] = {
            f.alias: (f.name, hints.get(f.name, Any), f.default is attrs.NOTHING) for f in attrs.fields(cls) if f.init
        }
    return found


def _instance(tag: Any, fields: Any, types: Mapping[str, type]) -> Any:
    cls = _known(tag, types) if isinstance(tag, str) else None
    if cls is None:
        raise CheckpointError(f"names {tag!r}, which is not a run-state type (nor one of fit's state_types)")
    if not isinstance(fields, dict):
        raise CheckpointError(f"holds a {tag} whose fields are not an object")
    expected = _field_types(cls)
    unknown = sorted(set(fields) - set(expected))
    if unknown:
        raise CheckpointError(f"holds a {cls.__qualname__} with unknown fields {unknown[:5]}")
    missing = sorted(alias for alias, (_, _, required) in expected.items() if required and alias not in fields)
    if missing:
        raise CheckpointError(f"holds a {cls.__qualname__} without fields {missing}")
    values = {}
    for alias, raw in fields.items():
        name, hint, _ = expected[alias]
        value = decode(raw, types)
        if not _conforms(value, hint):
            raise CheckpointError(f"holds a {cls.__qualname__} whose {name} is a {type(value).__name__}, not {hint}")
        values[alias] = value
    try:
        return cls(**values)
    except Exception as exc:  # the class's own validators and converters refused the values
        raise CheckpointError(
            f"holds a {cls.__qualname__} that cannot be built ({type(exc).__name__}: {exc})"
        ) from None


def _conforms(value: Any, hint: Any) -> bool:
    """Whether a decoded `value` has the type `hint` (the hints run-state fields use)."""
    if hint is Any or hint is object:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if origin is typing.Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(args) == len(value) and all(_conforms(v, a) for v, a in zip(value, args, strict=True))
    if origin is list or origin is Sequence:  # what `encode` writes for them is read back
        kinds = list if origin is list else (tuple, list)
        return isinstance(value, kinds) and all(_conforms(v, args[0] if args else Any) for v in value)
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        if not isinstance(value, origin):
            return False
        key, item = args if len(args) == 2 else (Any, Any)
        return all(_conforms(k, key) and _conforms(v, item) for k, v in value.items())
    if isinstance(hint, type):
        return isinstance(value, hint)
    return False  # a hint this checker does not know: refuse rather than guess


def write_checkpoint(
    path: str | os.PathLike[str],
    content: dict[str, Any],
    types: Mapping[str, type] = _NONE,
    *,
    encoded: Mapping[str, Any] | None = None,
) -> None:
    """Write `content` (plus the format tag) to `path` atomically: a temporary file, then a rename.

    `encoded` gives entries already in `encode`'s form (a writer that keeps most of its
    content from one write to the next encodes only what changed). A checkpoint of a
    few entries is indented for a reader; a larger one is written on one line, by
    `json`'s C encoder (the indenting one is Python's, some twenty times slower).
    """
    data = {"format": FORMAT, **{k: encode(v, types) for k, v in content.items()}, **(encoded or {})}
    blob = json.dumps(data, indent=None if encoded else 1, ensure_ascii=False)
    write_text_atomically(path, blob)


def read_checkpoint(path: str | os.PathLike[str], types: Mapping[str, type] = _NONE) -> dict[str, Any]:
    """The content of a checkpoint written by `write_checkpoint` (with the same `types`).

    Raises:
        CheckpointError: One line naming the file: it is missing, not JSON, not a
            checkpoint, or holds something other than run state.
    """
    target = Path(path)
    try:
        data = json.loads(read_regular_text(target, limit=MAX_BYTES))
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {target}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"cannot read checkpoint {target} ({exc}); {_REMEDY}") from None
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"checkpoint {target} is damaged (not JSON: {exc}); {_REMEDY}") from None
    except RecursionError:
        raise CheckpointError(f"checkpoint {target} is damaged (JSON nested too deeply); {_REMEDY}") from None
    except ValueError as exc:  # a 5,000-digit integer
        raise CheckpointError(f"checkpoint {target} is damaged ({unreadable(exc)}); {_REMEDY}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{target} is not a semgrad checkpoint (expected format {FORMAT}); {_REMEDY}")
    try:
        return {k: decode(v, types) for k, v in data.items() if k != "format"}
    except CheckpointError as exc:
        raise CheckpointError(f"checkpoint {target} is refused: it {exc}; {_REMEDY}") from None
    except RecursionError:
        raise CheckpointError(f"checkpoint {target} is damaged (values nested too deeply); {_REMEDY}") from None
