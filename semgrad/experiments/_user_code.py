"""Code the user typed on the command line or in a sweep spec: their system, LLM and metric.

``semgrad run my_system.py:build --data items.jsonl --llm my_llm.py:make --metric my_metric.py:score``
names three pieces of the user's own code, each ``FILE.py:FUNCTION`` or
``MODULE:FUNCTION``. They are loaded only because the user typed them: a run
folder's ``config.json`` records them, but a resumed run loads them only when
they are typed again (see `semgrad.experiments._resume`).

* the LLM factory (``make()``) returns any object with the LLM protocol: a
  callable taking an `semgrad.core.LLMRequest` and returning the reply's text
  (or an `semgrad.core.LLMResponse`), synchronous or ``async``;
* the metric ``fn(output, target)`` gets the system's final output (its text, or
  None when it produced none) and the item's target, and returns a float from 0
  to 1, a ``(float, feedback)`` pair, or a `semgrad.core.Score`; the feedback is
  what backpropagation starts from.

An exception raised in the user's code is a `UserCodeError`: one short block
with its type, message and the user's own frames (``file:line``), not
semgrad's.

Examples:
    >>> is_code_spec("my_metric.py:score"), is_code_spec("pkg.metrics:score"), is_code_spec("exact")
    (True, True, False)
    >>> as_score(0.5, "42", "41").value, as_score((1, "right"), "42", "42").feedback
    (0.5, 'right')
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import sysconfig
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._loaded_systems import _LOADED
from ..core import Example, LLMFailure, Loss, Score, Trace
from ..core._program import Program
from ..core.programs import pure
from ..core.scoring import extract_answer
from ._errors import SetupError

__all__ = [
    "UserCodeError",
    "as_score",
    "call_user",
    "canonical_code_spec",
    "discard_failed_run",
    "is_code_spec",
    "load_function",
    "load_llm",
    "raise_if_user_code",
    "short_spec",
    "user_metric",
]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Frames from these folders are semgrad's or Python's, not the user's.
_SEMGRAD = str(Path(__file__).resolve().parents[1])
_PYTHON = tuple(
    str(Path(p).resolve()) for p in {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")} if p
)
#: The most frames a `UserCodeError` shows (the innermost ones).
MAX_FRAMES = 5


class UserCodeError(SetupError):
    """The user's own code raised: its type and message, and the user's frames (``file:line``), one short block.

    Attributes:
        where: What was being run (``my_system.py:build``).
        frames: The user's own frames, outermost first, as ``file:line in function``.
    """

    def __init__(self, where: str, exc: BaseException, frames: tuple[str, ...]) -> None:
        self.where, self.frames, self.error = where, frames, exc
        message = " ".join(str(exc).split()) or "(no message)"
        lines = [f"{type(exc).__name__} in your code ({where}): {message}", *(f"  at {f}" for f in frames)]
        super().__init__("\n".join(lines))


def _user_frames(exc: BaseException) -> tuple[str, ...]:
    """The frames of `exc`'s traceback that are neither semgrad's nor Python's own, innermost last."""
    frames = []
    for frame in traceback.extract_tb(exc.__traceback__):
        name = frame.filename
        if name.startswith("<"):  # <frozen importlib._bootstrap>, <string>
            continue
        path = str(Path(name).resolve())
        if path.startswith(_SEMGRAD + os.sep) or any(path.startswith(p + os.sep) for p in _PYTHON):
            continue
        frames.append(f"{name}:{frame.lineno} in {frame.name}")
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        frames.append(f"{exc.filename}:{exc.lineno}")
    return tuple(frames[-MAX_FRAMES:])


def call_user(where: str, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``; an exception it raises becomes a `UserCodeError` naming `where` and the user's frames.

    Examples:
        >>> call_user("m.py:f", lambda: {}["model"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.experiments._user_code.UserCodeError: KeyError in your code (m.py:f): 'model'...
    """
    try:
        return function(*args)
    except UserCodeError:
        raise
    except Exception as exc:
        raise UserCodeError(where, exc, _user_frames(exc)) from exc


def _parse(spec: str, default: str) -> tuple[str, str]:
    target, sep, name = spec.rpartition(":")
    if sep and _IDENTIFIER.fullmatch(name) and target:
        return target, name
    return spec, default


def _is_file(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target


def is_code_spec(text: str) -> bool:
    """Whether `text` names code (``FILE.py[:FUNCTION]`` or ``MODULE:FUNCTION``) rather than a metric's name."""
    target, _, name = text.rpartition(":")
    return text.endswith(".py") or bool(target and _IDENTIFIER.fullmatch(name))


def canonical_code_spec(spec: str, default: str) -> str:
    """The spec with a file made absolute and the function named, so one piece of code typed two ways compares equal."""
    target, name = _parse(spec, default)
    if _is_file(target):
        target = str(Path(target).expanduser().resolve())
    return f"{target}:{name}"


def _import(target: str, spec: str) -> Any:
    """The module of a file or module name, its import errors shown as the user's (a `UserCodeError`)."""
    if not _is_file(target):
        try:
            return importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if exc.name and target.startswith(exc.name):  # the module typed is not there at all
                raise SetupError(f"cannot import {target}: {exc}") from None
            raise UserCodeError(f"importing {target}", exc, _user_frames(exc)) from None
        except Exception as exc:
            raise UserCodeError(f"importing {target}", exc, _user_frames(exc)) from None
    path = Path(target).expanduser().resolve()
    if not path.is_file():
        raise SetupError(f"no such file {target} (the spec {spec} is FILE.py:FUNCTION or MODULE:FUNCTION)")
    module_name = f"semgrad_user_code_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise SetupError(f"cannot load {target} as Python")
    module = importlib.util.module_from_spec(loader_spec)
    sys.path.insert(0, str(path.parent))  # so the file can import its neighbours
    try:
        call_user(f"importing {Path(target).name}", loader_spec.loader.exec_module, module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def load_function(spec: str, default: str, what: str) -> Callable[..., Any]:
    """The function `spec` names (``FILE.py:FUNCTION`` or ``MODULE:FUNCTION``, `default` when unnamed).

    Call it only with a spec the user typed: it runs their module. Inside
    `semgrad._loaded_systems.systems_loaded_once` a module is imported once.

    Raises:
        SetupError: No such file, module or function.
        UserCodeError: Importing the module raised.
    """
    key = "code:" + canonical_code_spec(spec, default)
    loaded = _LOADED.get()
    if loaded is not None and key in loaded:
        return loaded[key]  # type: ignore[no-any-return]
    target, name = _parse(spec, default)
    module = _import(target, spec)
    function = getattr(module, name, None)
    if not (callable(function) or _a_system(function)):
        raise SetupError(f"{target} has no function {name!r} ({what} is FILE.py:FUNCTION or MODULE:FUNCTION)")
    if loaded is not None:
        loaded[key] = function
    return function  # type: ignore[no-any-return]


def _a_system(value: Any) -> bool:
    """Whether `value` is a system written as Python (``@semgrad.system``, or a value with ``ref`` and ``run``)."""
    from ..effects import PythonSystem

    return isinstance(value, PythonSystem) or callable(getattr(value, "run", None))


def short_spec(spec: str, default: str) -> str:
    """The spec as the user typed it, near enough: a file by its name (``my_metric.py:score``), a module as it is."""
    target, name = _parse(spec, default)
    return f"{Path(target).name if _is_file(target) else target}:{name}"


def load_llm(spec: str) -> Any:
    """The LLM that the factory `spec` names makes (``--llm FILE.py:make``), checked to be callable.

    Raises:
        SetupError: The factory cannot be found, or what it returns is no LLM.
        UserCodeError: The factory (or importing its module) raised.
    """
    where = short_spec(spec, "make")
    llm = call_user(where, load_function(spec, "make", "--llm"))
    if not callable(llm):
        raise SetupError(
            f"{where}() returned {type(llm).__name__}, not an LLM: return a callable that takes an LLMRequest "
            "and returns the reply's text (sync or async)"
        )
    return llm


def raise_if_user_code(spec: str, raised: Sequence[BaseException]) -> None:
    """Raise the first of the exceptions `raised` by calls of the LLM the factory `spec` made that came from
    the user's own code (not a typed `LLMFailure` or a timeout, and with frames of theirs) as a `UserCodeError`.

    The LLM is not wrapped for this: the caller keeps what reached the top of the run's stack, where the stack
    turned the user's exception into an `LLMFailure` of kind ``exception`` (its ``__cause__`` or ``__context__``).
    A failure the LLM reported itself (an `LLMFailure` of another kind) stays the backend's.
    """
    for top in raised:
        exc: BaseException | None = top
        if isinstance(top, LLMFailure):
            exc = top.__cause__ or top.__context__ if top.error.kind == "exception" else None
        if exc is None or isinstance(exc, (LLMFailure, TimeoutError)):
            continue
        frames = _user_frames(exc)
        if frames:
            raise UserCodeError(f"the LLM {short_spec(spec, 'make')} made", exc, frames) from exc


def as_score(result: Any, answer: Any, target: Any, where: str = "the metric") -> Score:
    """A metric's result as a `Score`: a number, a ``(number, feedback)`` pair, or a `Score` as it is."""
    if isinstance(result, Score):
        if not 0 <= result.value <= 1:
            raise SetupError(f"{where} returned a Score of {result.value!r}: a score is from 0 to 1")
        return result
    feedback = None
    if isinstance(result, tuple) and len(result) == 2:
        result, feedback = result
    if isinstance(result, bool) or not isinstance(result, (int, float)):
        raise SetupError(
            f"{where} returned {type(result).__name__}: return a number from 0 to 1, "
            "a (number, feedback) pair, or a semgrad.core.Score"
        )
    value = float(result)
    if not 0 <= value <= 1:
        raise SetupError(f"{where} returned {value!r}: a score is from 0 to 1")
    if feedback is None:
        right = value >= 1
        feedback = (
            f'The output "{answer}" is correct.'
            if right
            else f'The output "{answer}" scores {value:g}; the expected output is "{target}".'
        )
    return Score(value, str(feedback), answer)


def user_metric(spec: str) -> Loss:
    """The loss of the user's metric ``fn(output, target)`` (``--metric FILE.py:fn``)."""
    where = short_spec(spec, "metric")
    function = load_function(spec, "metric", "--metric")

    def loss(example: Example, trace: Trace) -> Program[Score]:
        output = trace.output_value
        result = call_user(where, function, output, example.target)
        return pure(as_score(result, None if output is None else extract_answer(output), example.target, where))

    return loss


def discard_failed_run(out: Path, existed: bool, written: tuple[str, ...]) -> None:
    """Remove what a run that failed before it began wrote into `out` (the files `written`), and `out`
    itself when the run created it and it is empty now: no half-made run folder is left behind."""
    for name in written:
        (out / name).unlink(missing_ok=True)
    if not existed:
        try:
            out.rmdir()
        except OSError:  # something else is in it now: keep it
            pass
