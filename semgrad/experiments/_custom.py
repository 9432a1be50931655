"""Your own system and data as a run: ``semgrad run my_system.py:build --data items.jsonl``.

The system spec names code to load -- a Python file or an importable module and
a function in it (``build`` unless named after a colon) that returns
``(graph, params)``. Only a spec the user typed is ever loaded: a resumed run
does not import what its ``config.json`` names unless the same spec is typed
again (see `semgrad.experiments._resume`).

The items are JSON Lines (one ``{"inputs": {...}, "target": ..., "id": ...}``
object a line; ``id`` optional), a JSON array of such objects (``.json``) or
CSV (a ``target`` column, an optional ``id`` column, every other column an
input). They are split, seeded, into train, validation and test: by default a
third train (at most 20), no validation under the official protocol (a third,
at most 20, under the held-out one), the rest test; ``--train``,
``--validation`` (0 allowed) and ``--test`` set the sizes (`split_sizes`). The
run's protocol is the config's: under the official one (the default) the gate
scores candidates on the training items, and a validation split asked for is
only scored at the end, beside the test split; under the held-out one
(``--protocol heldout``, or any ``--validation`` above 0) the gate scores them
on the validation split.

Examples:
    >>> parse_system_spec("my_system.py:make")
    ('my_system.py', 'make')
    >>> parse_system_spec("pkg.systems")
    ('pkg.systems', 'build')
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._files import lone_surrogate, read_regular_text, unreadable
from .._loaded_systems import _LOADED, systems_loaded_once
from ..backends.simulated import SimulatedLLM
from ..core import Example, Graph, LLMRequest, Loss, Params
from ..core._parse import format_tagged, parse_tagged
from ..core.scoring import extract_answer, llm_judge, normalize, normalized_match, numeric_match, parse_number
from ..tasks import MAX_ITEMS, DataError, Task
from ..tasks import _files as _data_files
from ..tasks._files import check_items
from ..tasks._split import split
from ._user_code import UserCodeError

__all__ = [
    "METRICS",
    "SystemSpecError",
    "canonical_spec",
    "custom_loss",
    "custom_simulated_llm",
    "custom_task",
    "is_system_spec",
    "load_system",
    "systems_loaded_once",
    "parse_system_spec",
    "read_items",
    "split_sizes",
]

#: The scoring choices for your own data.
METRICS = ("exact", "numeric", "judge")

#: The judge's criteria when ``--criteria`` is not given.
DEFAULT_CRITERIA = "The output answers the input correctly; its final answer matches the reference answer."

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SystemSpecError(ValueError):
    """The system spec or the items cannot be used (a one-line message)."""


def parse_system_spec(spec: str) -> tuple[str, str]:
    """``(file or module, function)`` from ``"path.py:build"`` or ``"package.module:build"`` (``build`` if unnamed)."""
    target, sep, name = spec.rpartition(":")
    if sep and _IDENTIFIER.fullmatch(name) and target:
        return target, name
    return spec, "build"


def _is_file(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target


def is_system_spec(task: str) -> bool:
    """Whether `task` looks like a system spec rather than a paper task name (a ``.py`` file, a module).

    Examples:
        >>> is_system_spec("my_system.py:build"), is_system_spec("pkg.mod"), is_system_spec("my_system:build")
        (True, True, True)
        >>> is_system_spec("bbh:navigate"), is_system_spec("gsm8k")
        (False, False)
    """
    target, name = parse_system_spec(task)
    return _is_file(target) or "." in target or (task.endswith(f":{name}") and target != "bbh")


def canonical_spec(spec: str) -> str:
    """The spec with a file made absolute, so the same system typed two ways compares equal."""
    target, name = parse_system_spec(spec)
    if _is_file(target):
        target = str(Path(target).expanduser().resolve())
    return f"{target}:{name}"


def load_system(spec: str) -> tuple[Any, Params]:
    """Import the file or module `spec` names and call its function; return ``(graph, params)``. A system
    written as Python (``@semgrad.system``) is not called: it is returned as it is, with no params yet (its
    run meets them).

    Call this only with a spec the user typed: it runs their code. Inside
    `systems_loaded_once` (the ``semgrad`` command and each sweep run use it) a
    spec is loaded once and later calls return the same ``(graph, params)``;
    outside it every call loads the code again, so an edited file is read anew.

    Raises:
        SystemSpecError: The file or module, or the function in it, cannot be found, or
            the function does not return ``(graph, params)``.
    """
    loaded = _LOADED.get()
    if loaded is None:
        return _load(spec)
    key = canonical_spec(spec)
    if key not in loaded:
        loaded[key] = _load(spec)
    return loaded[key]


def _load(spec: str) -> tuple[Any, Params]:
    from ._errors import SetupError
    from ._user_code import call_user, load_function, short_spec

    try:
        build = load_function(spec, "build", "the system spec")
    except UserCodeError:
        raise
    except SetupError as exc:
        raise SystemSpecError(str(exc)) from None
    target, name = parse_system_spec(spec)
    if _is_python_system(build):  # @semgrad.system: recorded per item, its parameters met as it runs
        return build, Params({})  # type: ignore[return-value]
    built = call_user(short_spec(spec, "build"), build)
    if not (isinstance(built, tuple) and len(built) == 2 and isinstance(built[0], Graph)):
        raise SystemSpecError(f"{target}:{name}() must return (graph, params) as GraphBuilder.build does")
    if not isinstance(built[1], Params):
        raise SystemSpecError(f"{target}:{name}() must return (graph, params); the second item is not Params")
    return built


def _is_python_system(value: Any) -> bool:
    """Whether `value` is a system written as Python (``@semgrad.system``), which is trained as it is."""
    from ..core.programs import SystemRef
    from ..effects import PythonSystem

    if isinstance(value, PythonSystem):
        return True
    return isinstance(getattr(value, "ref", None), SystemRef) and callable(getattr(value, "run", None))


def read_items(path: str | Path, *, max_items: int = MAX_ITEMS) -> tuple[Example, ...]:
    """The items in a JSON Lines (``.jsonl``, ``.ndjson``), JSON array (``.json``) or CSV (``.csv``) file.

    The file is read as a data file is (`semgrad.tasks._files.MAX_BYTES` at most, a regular file: a FIFO
    or ``/dev/zero`` is refused, never read), and every failure names it.

    Raises:
        SystemSpecError: The file is missing, of another kind, too large, or malformed (the message names the
            line), or it holds more than `max_items` items.
    """
    file = Path(path)
    if not file.exists():
        raise SystemSpecError(f"no such data file {file}")
    if not file.is_file():  # a FIFO would block, /dev/zero never end
        raise SystemSpecError(f"{file}: cannot be read (not a regular file)")
    suffix = file.suffix.lower()
    if suffix not in (".jsonl", ".ndjson", ".json", ".csv"):
        raise SystemSpecError(f"{file}: unknown data format; give a .jsonl (JSON Lines), .json (an array) or .csv file")
    try:
        text = read_regular_text(file, limit=_data_files.MAX_BYTES).removeprefix("\ufeff")  # Excel's "CSV UTF-8" BOM
    except UnicodeDecodeError as exc:
        raise SystemSpecError(f"{file}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise SystemSpecError(f"{file}: cannot be read ({unreadable(exc)})") from None
    try:
        read = {".csv": _read_csv, ".json": _read_json_array}.get(suffix, _read_jsonl)
        items = read(file, text, max_items)
    except DataError as exc:  # too many items
        raise SystemSpecError(str(exc)) from None
    if not items:
        raise SystemSpecError(f"{file}: no items")
    seen: dict[Any, int] = {}
    for number, item in enumerate(items, 1):
        if not isinstance(item.id, (str, int)) or isinstance(item.id, bool):
            raise SystemSpecError(f"{file}: item {number}'s id is {item.id!r}: an id is text or a whole number")
        if item.id in seen:
            raise SystemSpecError(
                f"{file}: items {seen[item.id]} and {number} share the id {item.id!r} "
                "(an item without one has its position from 0 as its id)"
            )
        seen[item.id] = number
    return tuple(items)


def _parsed(text: str, where: str) -> Any:
    """`text` read as JSON, checked as text from a file must be (`where` names the file, and line)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemSpecError(f"{where}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # a 5,000-digit integer; arrays nested thousands deep
        raise SystemSpecError(f"{where}: not valid JSON ({unreadable(exc)})") from None
    if lone_surrogate(data) is not None:
        unpaired = "an unpaired \\uD800-\\uDFFF escape"
        raise SystemSpecError(f"{where}: a string holds a lone surrogate ({unpaired}), not text")
    return data


def _example(item: Any, where: str, position: int) -> Example:
    """One item, ``{"inputs": {...}, "target": ..., "id": ...}`` (its id defaults to its `position` from 0)."""
    if not isinstance(item, dict) or not isinstance(item.get("inputs"), dict) or "target" not in item:
        raise SystemSpecError(f'{where}: expected {{"inputs": {{...}}, "target": ...}}')
    return Example(item["inputs"], item["target"], item.get("id", position))


def _read_jsonl(file: Path, text: str, max_items: int) -> list[Example]:
    items: list[Example] = []
    for number, line in enumerate(io.StringIO(text), 1):
        if line.strip():
            check_items(len(items) + 1, str(file), max_items)
            items.append(_example(_parsed(line, f"{file}:{number}"), f"{file}:{number}", len(items)))
    return items


def _read_json_array(file: Path, text: str, max_items: int) -> list[Example]:
    """A JSON array of ``{"inputs": {...}, "target": ..., "id": ...}`` objects."""
    data = _parsed(text, str(file))
    if not isinstance(data, list):
        raise SystemSpecError(f'{file}: expected a JSON array of {{"inputs": {{...}}, "target": ...}} objects')
    items: list[Example] = []
    for number, item in enumerate(data, 1):
        check_items(number, str(file), max_items)
        items.append(_example(item, f"{file}: item {number}", len(items)))
    return items


def _read_csv(file: Path, text: str, max_items: int) -> list[Example]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        columns = reader.fieldnames or []
        twice = sorted({c for c in columns if columns.count(c) > 1})
        if twice:
            raise SystemSpecError(f"{file}: the column(s) {', '.join(map(repr, twice))} appear more than once")
        if "target" not in columns:
            raise SystemSpecError(f"{file}: no 'target' column (every other column but 'id' is an input)")
        inputs = [c for c in columns if c not in ("target", "id")]
        items = []
        for row in reader:
            check_items(len(items) + 1, str(file), max_items)
            if None in row or any(row[c] is None for c in columns):
                raise SystemSpecError(f"{file}:{reader.line_num}: expected {len(columns)} fields")
            items.append(Example({c: row[c] for c in inputs}, row["target"], row.get("id", len(items))))
    except csv.Error as exc:  # a field past the csv module's limit, say
        raise SystemSpecError(f"{file}:{reader.reader.line_num}: cannot be read as CSV ({exc})") from None
    return items


def split_sizes(
    n: int, train: int | None, validation: int | None, test: int | None, protocol: str = "official"
) -> tuple[int, int, int]:
    """The (train, validation, test) sizes of `n` items: a third train (at most 20); under the held-out
    protocol a third validation (at most 20), under the official one none unless asked (its gate scores on
    the training items, so a validation split would only cost calls); the rest, or `test`, test.

    Raises:
        SystemSpecError: The sizes asked for add up to more than `n` (the message says which add up to what).

    Examples:
        >>> split_sizes(16, None, None, None), split_sizes(16, None, None, None, "heldout")
        ((5, 0, 11), (5, 5, 6))
        >>> split_sizes(16, 10, 5, 6)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.experiments._custom.SystemSpecError: the split does not fit: train 10 + validation 5 + test 6 = 21 ...
    """
    third = n // 3
    train = train if train is not None else max(1, min(20, third))
    if validation is None:
        validation = min(20, third) if protocol == "heldout" else 0
    asked = train + validation + (test or 0)
    if asked > n or (test is None and train + validation >= n):
        parts = f"train {train} + validation {validation}" + (f" + test {test}" if test is not None else "")
        whole = f"{parts} = {asked} items" if test is not None else f"{parts} = {asked} items, leaving no test item"
        raise SystemSpecError(f"the split does not fit: {whole}, and there are {n}")
    return train, validation, n - train - validation if test is None else test


def custom_task(config: Any) -> Task:
    """The `Task` of a config with ``data``: the typed system, the items split by the config's seed and sizes."""
    if config.task.split(":")[0] in ("bbh", "gsm8k", "liar"):
        raise SystemSpecError(
            f"{config.task} is one of the paper's tasks, which read --data-dir; "
            "--data is for your own system (FILE.py:FUNCTION)"
        )
    graph, params = load_system(config.task)
    items = read_items(config.data, max_items=config.items_limit)
    needed = graph.inputs if isinstance(graph, Graph) else ()  # a system's inputs are its function's arguments
    missing = sorted({name for name in needed if any(name not in e.inputs for e in items)})
    if missing:
        raise SystemSpecError(f"{config.data}: some items lack the graph's input(s) {', '.join(missing)}")
    try:
        train, validation, test = split_sizes(len(items), config.train, config.validation, config.test, config.protocol)
    except SystemSpecError as exc:
        raise SystemSpecError(f"{config.data}: {exc}") from None
    parts = split(items, train=train, validation=validation, test=test, seed=config.seed)
    built = (graph, params)
    scoring = "numeric" if config.metric == "numeric" else "exact"
    task = _Built(built, config.task)
    return Task(config.task, "custom", parts, task, scoring, seed=config.seed, protocol=config.protocol)  # type: ignore[arg-type]


class _Built:
    """The loaded ``(graph, params)``, as a task topology (loaded once)."""

    def __init__(self, built: tuple[Graph, Params], name: str) -> None:
        self.built, self.__name__ = built, name

    def __call__(self) -> tuple[Graph, Params]:
        return self.built


def custom_loss(config: Any) -> Loss:
    """The loss ``--metric`` names: normalised exact match, numeric match, an LLM judge, or the user's own."""
    from ._user_code import is_code_spec, user_metric

    if is_code_spec(config.metric):
        return user_metric(config.metric)
    if config.metric == "numeric":
        return numeric_match()
    if config.metric == "judge":
        return llm_judge(config.criteria or DEFAULT_CRITERIA)
    return normalized_match()


class _CustomSimulated(SimulatedLLM):
    """The simulated LLM for your own graph: its output node is the one that answers, and it judges."""

    def __init__(
        self,
        answers: dict[str, str],
        graph: Graph | None,
        numeric: bool,
        seed: int,
        final_nodes: tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(answers, seed=seed, graph=graph, final_nodes=final_nodes)
        self.numeric = numeric

    def __call__(self, request: LLMRequest) -> str:
        if request.purpose == "evaluate":
            return self._judge(request.prompt)
        return super().__call__(request)

    def _judge(self, prompt: str) -> str:
        output = parse_tagged(prompt, ["output"]).value_or("")
        found = re.search(r"^Reference answer: (.*)$", prompt, re.MULTILINE)
        answer, reference = extract_answer(output), found.group(1) if found else ""
        if self.numeric:
            same = parse_number(answer) is not None and parse_number(answer) == parse_number(reference)
        else:
            same = normalize(answer) == normalize(reference)
        critique = "The answer is right." if same else f"The answer should be {reference}; it says {answer}."
        return format_tagged("score", "1" if same else "0") + "\n" + format_tagged("critique", critique)


def custom_simulated_llm(config: Any, tasks: tuple[Task, ...]) -> Callable[[LLMRequest], str]:
    """The simulated LLM for a custom run: it knows each item's target (keyed by the graph's first input's text)
    and gives each node of the graph its role (see `semgrad.backends.simulated`)."""
    (task,) = tasks
    graph, _ = task.build()
    parts = task.split
    final_nodes = None
    if not isinstance(graph, Graph):  # a system written as Python: its recorded run names the answering node
        final_nodes = _answering_component(graph, parts.train[0]) if parts.train else None
        graph = None
    item = graph.inputs[0] if graph is not None and graph.inputs else None
    answers = {
        str(e.inputs.get(item, next(iter(e.inputs.values())))): str(e.target)
        for e in parts.train + parts.validation + parts.test
        if e.inputs
    }
    return _CustomSimulated(answers, graph, config.metric == "numeric", config.seed, final_nodes)


def _answering_component(system: Any, example: Example) -> tuple[str, ...] | None:
    """The component whose call answers in `system`'s run of `example` against a hash fake (the output node's,
    when it is an LLM node; else None: the simulated LLM's default names). Run in a thread of its own, so that
    it needs no event loop of the caller's."""
    from concurrent.futures import ThreadPoolExecutor

    from ..backends.fake import HashLLM
    from ..core.programs import run_system
    from ..effects import Runner, as_trainable

    structure, systems = as_trainable(system)
    program = run_system(structure, Params({}), example)  # type: ignore[arg-type]
    with ThreadPoolExecutor(1) as pool:
        trace = pool.submit(Runner(HashLLM("simulated"), systems=systems).run_sync, program).result()
    recorded = trace.recording.graph
    output = recorded[recorded.output]
    return (getattr(output, "component", output.name),) if output.kind == "llm" else None
