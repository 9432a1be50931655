"""GSM8K: grade-school maths word problems with a numeric final answer."""

from __future__ import annotations

from typing import Literal

from ..core import Example
from ._errors import DataError
from ._files import MAX_ITEMS, DataDir, check_items, data_file, json_lines, read_text
from ._split import Split, split, test_items

__all__ = ["gsm8k_answer", "gsm8k_examples", "load_gsm8k", "split_gsm8k"]

GSM8KFile = Literal["train", "test"]

#: The paper's protocol: 128 training items from the train file; we hold out as
#: many for validation (also from the train file) and test on the whole test file.
GSM8K_TRAIN = 128
GSM8K_VALIDATION = 128


def gsm8k_answer(solution: str) -> str | None:
    """The final answer of a worked solution: the text after ``####``, commas removed.

    Returns None when the solution has no ``####`` line.

    Examples:
        >>> gsm8k_answer("He pays 70,000 + 5 = <<70000+5=70005>>70,005.\\n#### 70,005")
        '70005'
        >>> gsm8k_answer("no marker") is None
        True
    """
    _, marker, tail = solution.rpartition("####")
    if not marker:
        return None
    return tail.strip().replace(",", "")


def gsm8k_examples(text: str, file: GSM8KFile, source: str, *, max_items: int = MAX_ITEMS) -> tuple[Example, ...]:
    """Examples from the text of a GSM8K JSON Lines file.

    Each line ``{"question", "answer"}`` becomes
    ``Example(inputs={"question": question}, target=<final answer>, id=f"gsm8k/{file}/{index}")``,
    where `index` counts the file's objects from 0. A file of more than `max_items` objects is refused
    when its next object is reached.

    Examples:
        >>> line = '{"question": "1+1?", "answer": "1+1=2\\\\n#### 2"}'
        >>> gsm8k_examples(line, "train", "train.jsonl")[0]
        Example(inputs=FrozenMap({'question': '1+1?'}), target='2', id='gsm8k/train/0')
    """
    result = []
    for index, (number, row) in enumerate(json_lines(text, source)):
        check_items(index + 1, source, max_items)
        question, solution = row.get("question"), row.get("answer")
        if not isinstance(question, str) or not isinstance(solution, str):
            raise DataError(f"{source}:{number}: expected string fields 'question' and 'answer'")
        answer = gsm8k_answer(solution)
        if not answer:
            raise DataError(f"{source}:{number}: the answer has no final '#### <number>' line")
        result.append(Example({"question": question}, answer, id=f"gsm8k/{file}/{index}"))
    return tuple(result)


def load_gsm8k(data_dir: DataDir, file: GSM8KFile = "train", *, max_items: int = MAX_ITEMS) -> tuple[Example, ...]:
    """Every example of ``<data_dir>/gsm8k/<file>.jsonl``, in file order.

    Raises:
        DataError: Missing directory or file, a malformed line (named with its
            number), an answer without ``####``, or more than `max_items` items.
    """
    if file not in ("train", "test"):
        raise DataError(f"unknown GSM8K file {file!r}; valid files: train, test")
    path = data_file(data_dir, "gsm8k", f"{file}.jsonl")
    return gsm8k_examples(read_text(path), file, str(path), max_items=max_items)


def split_gsm8k(
    train_file: tuple[Example, ...],
    test_file: tuple[Example, ...],
    *,
    seed: int = 0,
    train: int | None = None,
    validation: int | None = None,
    test: int | None = None,
) -> Split:
    """The paper's GSM8K protocol: 128 train and 128 validation items drawn from the
    train file, and the whole test file (1,319 items) as test.

    With `test` given, a seeded sample of that many test-file items instead.

    Examples:
        >>> from semgrad.tasks import load_samples
        >>> items = load_samples("gsm8k")
        >>> split_gsm8k(items[:5], items[5:], train=3, validation=2).sizes
        (3, 2, 3)
    """
    learn = split(
        train_file,
        train=GSM8K_TRAIN if train is None else train,
        validation=GSM8K_VALIDATION if validation is None else validation,
        test=0,
        seed=seed,
    )
    held_out = test_items(test_file, test, seed)
    return Split(train=learn.train, validation=learn.validation, test=held_out)
