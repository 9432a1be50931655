"""The two split protocols: the paper's ("official") and ours with a validation set ("heldout").

``official`` splits the data as the paper's code does, minus its defects:

* BBH: 20 training items per task and every other item of the task file as test.
  (The official code shuffles the file twice, once per split, so some training
  items also end up in its test split; here train and test never share an item.)
* GSM8K: 128 training items drawn from the train file, the whole test file as test.
* LIAR: the training file filtered as the official code filters it (labels
  ``false``/``true``; a row is dropped when the text before the first ``:`` of a
  field has no letters or spells exactly ``none``), shuffled with the seed, the
  first 50 taken. The paper optimises *and scores* on those 50 items; the test
  file is kept beside them as a held-out score of our own.

No protocol has a validation set except ``heldout``: the update gate scores
candidates on the training items (see `semgrad.effects.fit`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Literal

from ..core import Example, FrozenMap
from ._errors import DataError
from ._split import Split, split, test_items

__all__ = [
    "OFFICIAL_SIZES",
    "PAPER_MODELS",
    "PROTOCOLS",
    "Protocol",
    "liar_official_keep",
    "official_split_bbh",
    "official_split_gsm8k",
    "official_split_liar",
    "paper_iterations",
]

Protocol = Literal["official", "heldout"]

#: The protocols `semgrad.tasks.load_task` accepts; the first is the paper's.
PROTOCOLS: tuple[str, ...] = ("official", "heldout")

#: Training items per dataset under the official protocol.
OFFICIAL_SIZES = {"bbh": 20, "gsm8k": 128, "liar": 50}

#: The models the paper ran each role on: its forward model, and its one optimizer model for
#: backward and rewrite calls. Runs under the official protocol on an OpenAI-compatible
#: server default to them (see `semgrad.experiments.RunConfig.models`).
PAPER_MODELS: FrozenMap[str, str] = FrozenMap(
    {"forward": "gpt-4o-mini", "backward": "gpt-4-turbo", "optimizer": "gpt-4-turbo"}
)

#: Iterations the paper ran per dataset (its scripts' ``--n_iters``).
PAPER_ITERATIONS = {"bbh": 4, "gsm8k": 4, "liar": 8}

#: The order the official code writes a LIAR record in (statement, job title, state, party, source).
_LIAR_RECORD_ORDER = ("statement", "job_title", "state", "party", "source")


def pick_protocol(protocol: str | None, validation: int | None) -> Protocol:
    """`protocol` checked, or for None the default: ``"heldout"`` when a validation size is given, else
    ``"official"`` (the paper's), as ``semgrad run`` picks it.

    Examples:
        >>> pick_protocol(None, None), pick_protocol(None, 20), pick_protocol("heldout", None)
        ('official', 'heldout', 'heldout')
    """
    return check_protocol("heldout" if validation else "official") if protocol is None else check_protocol(protocol)


def check_protocol(protocol: str) -> Protocol:
    """`protocol` if it is one of `PROTOCOLS`, else a one-line ValueError."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of: {', '.join(PROTOCOLS)}")
    return protocol  # type: ignore[return-value]


def paper_iterations(task: str) -> int:
    """The iterations the paper ran for a task name (``bbh:<task>``, ``bbh:all``, ``gsm8k``, ``liar``).

    Examples:
        >>> paper_iterations("bbh:navigate"), paper_iterations("gsm8k"), paper_iterations("liar")
        (4, 4, 8)
    """
    return PAPER_ITERATIONS.get(task.split(":", 1)[0], 4)


def official_split_bbh(examples: Iterable[Example], *, seed: int = 0, train: int | None = None) -> Split:
    """The paper's BBH split of one task file: `train` items (default 20), the rest test.

    Examples:
        >>> from semgrad.tasks import load_samples
        >>> s = official_split_bbh(load_samples("bbh:navigate"), train=4)
        >>> s.sizes
        (4, 0, 6)
    """
    n = OFFICIAL_SIZES["bbh"] if train is None else train
    return split(examples, train=n, validation=0, seed=seed)


def official_split_gsm8k(
    train_file: Iterable[Example],
    test_file: Iterable[Example],
    *,
    seed: int = 0,
    train: int | None = None,
    test: int | None = None,
) -> Split:
    """The paper's GSM8K split: `train` items (default 128) from the train file, the whole test file.

    With `test` given, a seeded sample of that many test-file items instead.

    Examples:
        >>> from semgrad.tasks import load_samples
        >>> items = load_samples("gsm8k")
        >>> official_split_gsm8k(items[:5], items[5:], train=3).sizes
        (3, 0, 3)
    """
    n = OFFICIAL_SIZES["gsm8k"] if train is None else train
    learn = split(train_file, train=n, validation=0, test=0, seed=seed)
    held_out = test_items(test_file, test, seed)
    return Split(train=learn.train, validation=(), test=held_out)


def liar_official_keep(example: Example) -> bool:
    """Whether the official code keeps a LIAR item: every field of its record, cut at
    the field's first ``:``, has letters that do not spell exactly ``none``.

    The official code reads each ``Key: value`` line of the record back with
    ``line.split(':')[1]``, so a field is judged by its text before its own first
    colon; the comparison with ``none`` is case-sensitive.

    Examples:
        >>> from semgrad.core import Example
        >>> fields = {"statement": "s", "party": "p", "job_title": "j", "source": "a talk", "state": "Ohio"}
        >>> liar_official_keep(Example(fields, "No"))
        True
        >>> liar_official_keep(Example({**fields, "state": "none"}, "No"))
        False
        >>> liar_official_keep(Example({**fields, "state": "None"}, "No"))
        True
        >>> liar_official_keep(Example({**fields, "source": ": a talk"}, "No"))
        False
    """
    for field in _LIAR_RECORD_ORDER:
        head = str(example.inputs.get(field, "")).split(":")[0]
        if "".join(filter(str.isalpha, head)) in ("", "none"):
            return False
    return True


def official_split_liar(
    train_file: Iterable[Example],
    test_file: Iterable[Example],
    *,
    seed: int = 0,
    train: int | None = None,
    test: int | None = None,
) -> Split:
    """The paper's LIAR ablation items: `train` (default 50) items of the filtered train file.

    `train_file` and `test_file` are the files' ``false``/``true`` items, read
    without our own filter (``load_liar(..., drop_incomplete=False)``); both are
    filtered with `liar_official_keep` here. The shuffle is
    ``random.Random(seed).shuffle`` over the filtered items in file order, which is
    the same permutation the official script's ``random.seed(seed); random.shuffle``
    gives, so seed 0 picks the official run's 50 items. The test part (the whole
    filtered test file, or a seeded sample of `test`) is our addition.

    Examples:
        >>> from semgrad.core import Example
        >>> f = {"statement": "s", "party": "p", "job_title": "j", "source": "t", "state": "Ohio"}
        >>> mk = lambda part, n: [Example(f, "No", id=f"{part}/{i}") for i in range(n)]
        >>> official_split_liar(mk("train", 60), mk("test", 9)).sizes
        (50, 0, 9)
    """
    n = OFFICIAL_SIZES["liar"] if train is None else train
    kept = [e for e in train_file if liar_official_keep(e)]
    order = list(kept)
    random.Random(seed).shuffle(order)
    held = [e for e in test_file if liar_official_keep(e)]
    if n > len(order):
        raise DataError(f"asked for {n} train items but the filtered LIAR train file has only {len(order)}")
    held_out = tuple(held) if test is None else split(held, train=0, validation=0, test=test, seed=seed).test
    return Split(train=order[:n], validation=(), test=held_out)
