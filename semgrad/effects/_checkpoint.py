"""Checkpoints: JSON files (never pickle), written atomically.

Values are encoded by a small codec: JSON scalars as themselves, tuples and
`FrozenMap`s tagged so they come back as the same types, and frozen attrs
classes of semgrad tagged with their import path (only ``semgrad.`` classes are
ever constructed on load).
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

import attrs

from .._files import write_text_atomically
from ..core import FrozenMap

__all__ = ["CheckpointError", "decode", "encode", "read_checkpoint", "write_checkpoint"]

FORMAT = "semgrad.checkpoint/1"


class CheckpointError(ValueError):
    """A checkpoint file is missing, unreadable, or belongs to another run."""


def encode(value: Any) -> Any:
    """A JSON-ready form of `value` that `decode` turns back into an equal value.

    Examples:
        >>> value = (1, FrozenMap({"a": [2.5, None]}))
        >>> decode(json.loads(json.dumps(encode(value)))) == value
        True
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, FrozenMap):
        return {"$map": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, dict):
        return {"$dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if attrs.has(type(value)):
        cls = type(value)
        if not cls.__module__.startswith("semgrad."):
            raise TypeError(f"cannot checkpoint {cls.__qualname__}: only semgrad's own values are encoded")
        fields = {f.alias: encode(getattr(value, f.name)) for f in attrs.fields(cls) if f.init and f.eq}
        return {"$attrs": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
    raise TypeError(f"cannot checkpoint a value of type {type(value).__name__}")


def decode(data: Any) -> Any:
    """The value `encode` encoded."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "$tuple" in data:
        return tuple(decode(v) for v in data["$tuple"])
    if "$map" in data:
        return FrozenMap((decode(k), decode(v)) for k, v in data["$map"])
    if "$dict" in data:
        return {decode(k): decode(v) for k, v in data["$dict"]}
    if "$attrs" in data:
        module, _, name = str(data["$attrs"]).partition(":")
        if not module.startswith("semgrad."):
            raise CheckpointError(f"checkpoint names a class outside semgrad: {data['$attrs']}")
        cls = getattr(importlib.import_module(module), name)
        return cls(**{k: decode(v) for k, v in data["fields"].items()})
    raise CheckpointError(f"unexpected object in checkpoint: keys {sorted(data)}")


def write_checkpoint(path: str | os.PathLike[str], content: dict[str, Any]) -> None:
    """Write `content` (plus the format tag) to `path` atomically: a temporary file, then a rename."""
    blob = json.dumps({"format": FORMAT, **{k: encode(v) for k, v in content.items()}}, indent=1, ensure_ascii=False)
    write_text_atomically(path, blob)


def read_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The content of a checkpoint written by `write_checkpoint`."""
    target = Path(path)
    try:
        data = json.loads(target.read_text("utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {target}") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"cannot read checkpoint {target}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{target} is not a semgrad checkpoint (expected format {FORMAT})")
    return {k: decode(v) for k, v in data.items() if k != "format"}
