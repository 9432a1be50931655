"""LIAR (Wang, 2017): is a politician's statement a lie? Never bundled; read from a data directory.

Each TSV row has 14 tab-separated columns and no header: id (``N.json``), label,
statement, subjects, speaker, job title, state, party, five count columns, and
context. Fields hold unbalanced ``"`` characters, so rows are read with quoting
disabled; with quoting on, rows would merge.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from ..core import Example
from ..topologies import LIAR_FIELDS
from ._errors import DataError
from ._files import MAX_ITEMS, DataDir, check_items, data_file, read_text
from ._split import Split, split, test_items

__all__ = ["LIAR_LABELS", "liar_examples", "load_liar", "split_liar"]

LiarFile = Literal["train", "valid", "test"]

#: The two labels kept, and the target each becomes ("Yes" = the statement is a lie).
LIAR_LABELS = {"false": "Yes", "true": "No"}

#: Column of each input field (`semgrad.topologies.LIAR_FIELDS`); "source" is the context column.
_COLUMNS = {"statement": 2, "job_title": 5, "state": 6, "party": 7, "source": 13}
_WIDTH = 14

#: The paper's protocol: 50 items; we take 50 train (train file) and 50 validation (valid file).
LIAR_TRAIN = 50
LIAR_VALIDATION = 50


def _incomplete(value: str) -> bool:
    """True for a field with no letters, or whose letters spell "none"."""
    letters = "".join(filter(str.isalpha, value)).lower()
    return letters in ("", "none")


def liar_examples(
    lines: Iterable[str], file: LiarFile, source: str, *, drop_incomplete: bool = True, max_items: int = MAX_ITEMS
) -> tuple[Example, ...]:
    """Examples from the lines of a LIAR TSV file, keeping labels ``false`` and ``true``.

    Inputs are the fields of `semgrad.topologies.LIAR_FIELDS`; the target is
    ``"Yes"`` (a lie) for ``false`` and ``"No"`` for ``true``; the id is
    ``f"liar/{file}/{N}"`` for the row id ``N.json``.

    Args:
        lines: The file's lines.
        file: ``"train"``, ``"valid"`` or ``"test"`` (used in ids).
        source: The file name, for error messages.
        drop_incomplete: Drop rows where a used field is empty or "none", as the paper does.
        max_items: Refuse a file of more rows than this (kept or not), when the next one is reached.

    Examples:
        >>> row = ["7.json", "false", 'Says "we won.', "x", "ann", "Mayor", "Ohio", "democrat", *"00000", "a speech"]
        >>> liar_examples(["\\t".join(row)], "train", "train.tsv")[0].inputs["statement"]
        'Says "we won.'
        >>> liar_examples(["\\t".join(row).replace("Ohio", "none")], "train", "train.tsv")
        ()
    """
    result, count = [], 0
    rows = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    for number, row in enumerate(_rows(rows, source), start=1):
        if not row:
            continue
        count += 1
        check_items(count, source, max_items)
        if len(row) != _WIDTH:
            raise DataError(f"{source}:{number}: expected {_WIDTH} tab-separated columns, found {len(row)}")
        target = LIAR_LABELS.get(row[1].strip())
        inputs = {field: row[_COLUMNS[field]].strip() for field in LIAR_FIELDS}
        if target is None or (drop_incomplete and any(map(_incomplete, inputs.values()))):
            continue
        result.append(Example(inputs, target, id=f"liar/{file}/{row[0].removesuffix('.json')}"))
    return tuple(result)


def _rows(reader: Any, source: str) -> Iterator[list[str]]:
    """The rows of `reader`; a `DataError` naming `source` and the line when one cannot be read (a field
    past the csv module's size limit, say)."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise DataError(f"{source}:{reader.line_num}: cannot be read as TSV ({error})") from None
        yield row


def load_liar(
    data_dir: DataDir, file: LiarFile = "train", *, drop_incomplete: bool = True, max_items: int = MAX_ITEMS
) -> tuple[Example, ...]:
    """The ``false``/``true`` examples of ``<data_dir>/liar/<file>.tsv``, in file order.

    Raises:
        DataError: Missing directory or file, a row without 14 columns, or more than `max_items` rows.
    """
    if file not in ("train", "valid", "test"):
        raise DataError(f"unknown LIAR file {file!r}; valid files: train, valid, test")
    path = data_file(data_dir, "liar", f"{file}.tsv")
    lines = io.StringIO(read_text(path), newline="")
    return liar_examples(lines, file, str(path), drop_incomplete=drop_incomplete, max_items=max_items)


def split_liar(
    train_file: tuple[Example, ...],
    valid_file: tuple[Example, ...],
    test_file: tuple[Example, ...],
    *,
    seed: int = 0,
    train: int | None = None,
    validation: int | None = None,
    test: int | None = None,
) -> Split:
    """Our LIAR protocol: 50 train items from the train file, 50 validation items
    from the valid file, and the whole test file (or a seeded sample of `test`).

    The paper optimized and scored on the same 50 train-file items; we keep the
    same training set size and score on LIAR's own held-out files.

    Examples:
        >>> from semgrad.core import Example
        >>> mk = lambda part, n: [Example({"statement": "s"}, "No", id=f"{part}/{i}") for i in range(n)]
        >>> split_liar(mk("train", 60), mk("valid", 60), mk("test", 9)).sizes
        (50, 50, 9)
    """
    n_train = LIAR_TRAIN if train is None else train
    n_validation = LIAR_VALIDATION if validation is None else validation
    return Split(
        train=split(train_file, train=n_train, validation=0, test=0, seed=seed).train,
        validation=split(valid_file, train=0, validation=n_validation, test=0, seed=seed).validation,
        test=test_items(test_file, test, seed),
    )
