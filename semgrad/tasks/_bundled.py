"""The handful of items bundled in `semgrad.data`, for the offline demo, doctests and tests.

The bundled files are the first rows of the real files, so their examples have
the same ids as in a full data directory. LIAR is never bundled.
"""

from __future__ import annotations

from importlib import resources

from ..core import Example
from ._bbh import bbh_examples
from ._errors import DataError
from ._files import read_json
from ._gsm8k import gsm8k_examples

__all__ = ["load_samples", "sample_names"]

_BBH_SAMPLES = ("boolean_expressions", "navigate", "sports_understanding")


def sample_names() -> tuple[str, ...]:
    """The task names that have bundled items.

    Examples:
        >>> sample_names()
        ('bbh:boolean_expressions', 'bbh:navigate', 'bbh:sports_understanding', 'gsm8k')
    """
    return (*(f"bbh:{task}" for task in _BBH_SAMPLES), "gsm8k")


def load_samples(name: str) -> tuple[Example, ...]:
    """The bundled examples of one task (10 per BBH task, 8 GSM8K test items).

    Raises:
        DataError: No items are bundled for `name` (the message lists those that are).

    Examples:
        >>> items = load_samples("gsm8k")
        >>> len(items), items[0].id, items[0].target
        (8, 'gsm8k/test/0', '18')
        >>> load_samples("bbh:navigate")[0].id
        'navigate/0'
        >>> load_samples("liar")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.tasks._errors.DataError: no bundled items for 'liar'; bundled: bbh:boolean_expressions, ... gsm8k (...)
    """
    if name not in sample_names():
        raise DataError(
            f"no bundled items for {name!r}; bundled: {', '.join(sample_names())} "
            "(load the full data with load_task and a data directory)"
        )
    if name == "gsm8k":
        return gsm8k_examples(_read("gsm8k_sample.jsonl"), "test", "semgrad/data/gsm8k_sample.jsonl")
    task = name.removeprefix("bbh:")
    source = f"semgrad/data/bbh_{task}_sample.json"
    return bbh_examples(read_json(_read(f"bbh_{task}_sample.json"), source), task, source)


def _read(file: str) -> str:
    return resources.files("semgrad.data").joinpath(file).read_text("utf-8")
