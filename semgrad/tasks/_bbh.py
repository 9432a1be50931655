"""BIG-Bench Hard: the 27 task files, their categories and their scoring kinds."""

from __future__ import annotations

from typing import Any, Literal

from ..core import Example
from ._errors import DataError
from ._files import MAX_ITEMS, DataDir, check_items, data_file, read_json, read_text
from ._split import Split, split

__all__ = [
    "BBH_ALGORITHMIC",
    "BBH_CHOICE_TASKS",
    "BBH_NLP",
    "BBH_TASKS",
    "Category",
    "bbh_category",
    "bbh_examples",
    "bbh_scoring",
    "load_bbh",
    "split_bbh",
]

Category = Literal["nlp", "algorithmic"]

#: The algorithmic tasks (the standard BBH grouping, by task file).
BBH_ALGORITHMIC: tuple[str, ...] = (
    "boolean_expressions",
    "dyck_languages",
    "geometric_shapes",
    "logical_deduction_five_objects",
    "logical_deduction_seven_objects",
    "logical_deduction_three_objects",
    "multistep_arithmetic_two",
    "navigate",
    "object_counting",
    "temporal_sequences",
    "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects",
    "tracking_shuffled_objects_three_objects",
    "web_of_lies",
    "word_sorting",
)

#: The natural-language-understanding tasks.
BBH_NLP: tuple[str, ...] = (
    "causal_judgement",
    "date_understanding",
    "disambiguation_qa",
    "formal_fallacies",
    "hyperbaton",
    "movie_recommendation",
    "penguins_in_a_table",
    "reasoning_about_colored_objects",
    "ruin_names",
    "salient_translation_error_detection",
    "snarks",
    "sports_understanding",
)

#: All 27 task files, sorted by name.
BBH_TASKS: tuple[str, ...] = tuple(sorted(BBH_ALGORITHMIC + BBH_NLP))

#: The tasks whose targets are option letters such as ``"(B)"``; the others are
#: compared as exact text (``"True"``, ``"Yes"``, ``"valid"``, ``"24"``, a word list...).
BBH_CHOICE_TASKS: tuple[str, ...] = (
    "date_understanding",
    "disambiguation_qa",
    "geometric_shapes",
    "hyperbaton",
    "logical_deduction_five_objects",
    "logical_deduction_seven_objects",
    "logical_deduction_three_objects",
    "movie_recommendation",
    "penguins_in_a_table",
    "reasoning_about_colored_objects",
    "ruin_names",
    "salient_translation_error_detection",
    "snarks",
    "temporal_sequences",
    "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects",
    "tracking_shuffled_objects_three_objects",
)

#: The paper's protocol: 20 training items per task; we also hold out 20 for validation.
BBH_TRAIN = 20
BBH_VALIDATION = 20


def _check_task(task: str) -> str:
    if task not in BBH_TASKS:
        raise DataError(f"unknown BBH task {task!r}; valid tasks: {', '.join(BBH_TASKS)}")
    return task


def bbh_category(task: str) -> Category:
    """``"nlp"`` or ``"algorithmic"`` for one BBH task.

    Examples:
        >>> bbh_category("navigate"), bbh_category("snarks")
        ('algorithmic', 'nlp')
    """
    return "algorithmic" if _check_task(task) in BBH_ALGORITHMIC else "nlp"


def bbh_scoring(task: str) -> Literal["choice", "exact"]:
    """``"choice"`` when the task's targets are option letters, else ``"exact"``.

    Examples:
        >>> bbh_scoring("snarks"), bbh_scoring("word_sorting")
        ('choice', 'exact')
    """
    return "choice" if _check_task(task) in BBH_CHOICE_TASKS else "exact"


def bbh_examples(document: Any, task: str, source: str, *, max_items: int = MAX_ITEMS) -> tuple[Example, ...]:
    """Examples from a parsed task file ``{"canary", "examples": [{"input", "target"}]}``.

    Each becomes ``Example(inputs={"question": input}, target=target, id=f"{task}/{index}")``.

    Examples:
        >>> doc = {"canary": "...", "examples": [{"input": "Is 2 even?", "target": "Yes"}]}
        >>> bbh_examples(doc, "web_of_lies", "web_of_lies.json")[0]
        Example(inputs=FrozenMap({'question': 'Is 2 even?'}), target='Yes', id='web_of_lies/0')
    """
    rows = document.get("examples") if isinstance(document, dict) else None
    if not isinstance(rows, list):
        raise DataError(f"{source}: expected a JSON object with an 'examples' list")
    check_items(len(rows), source, max_items)
    result = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("input"), str) or not isinstance(row.get("target"), str):
            raise DataError(f"{source}: example {index} needs string fields 'input' and 'target'")
        result.append(Example({"question": row["input"]}, row["target"], id=f"{task}/{index}"))
    return tuple(result)


def load_bbh(data_dir: DataDir, task: str, *, max_items: int = MAX_ITEMS) -> tuple[Example, ...]:
    """Every example of ``<data_dir>/bbh/<task>.json``, in file order.

    Raises:
        DataError: Unknown task (the message lists the 27), missing directory or
            file, a file that is not a BBH task file, or one of more than `max_items` examples.
    """
    path = data_file(data_dir, "bbh", f"{_check_task(task)}.json")
    return bbh_examples(read_json(read_text(path), str(path)), task, str(path), max_items=max_items)


def split_bbh(
    examples: tuple[Example, ...],
    *,
    seed: int = 0,
    train: int | None = None,
    validation: int | None = None,
    test: int | None = None,
) -> Split:
    """The paper's BBH protocol for one task: 20 train, 20 validation, the rest test.

    Examples:
        >>> from semgrad.tasks import load_samples
        >>> split_bbh(load_samples("bbh:navigate"), train=4, validation=3).sizes
        (4, 3, 3)
    """
    return split(
        examples,
        train=BBH_TRAIN if train is None else train,
        validation=BBH_VALIDATION if validation is None else validation,
        test=test,
        seed=seed,
    )
