"""`Task`: one benchmark ready to train on — its split, graph and scoring kind."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal

import attrs

from ..core import FrozenMap, Graph, Params
from ..topologies import liar_graph, paper_graph
from ._bbh import BBH_TASKS, Category, bbh_category, bbh_scoring, load_bbh, split_bbh
from ._bundled import load_samples
from ._errors import DataError
from ._files import MAX_ITEMS, DataDir
from ._gsm8k import load_gsm8k, split_gsm8k
from ._liar import load_liar, split_liar
from ._metrics import Metric, check_metric, default_metric
from ._protocols import (
    PAPER_MODELS,
    Protocol,
    check_protocol,
    official_split_bbh,
    official_split_gsm8k,
    official_split_liar,
    pick_protocol,
)
from ._split import Split, split

__all__ = ["Scoring", "Task", "expand_task_names", "load_task", "load_tasks", "sample_task", "task_names"]

Scoring = Literal["choice", "exact", "numeric", "yes_no"]
Topology = Callable[[], tuple[Graph, Params]]

_GROUPS = FrozenMap({"bbh:all": tuple(f"bbh:{task}" for task in BBH_TASKS)})


@attrs.frozen
class Task:
    """One benchmark task, ready to train and score.

    Attributes:
        name: The task name, e.g. ``"bbh:navigate"``, ``"gsm8k"``, ``"liar"``.
        dataset: ``"bbh"``, ``"gsm8k"`` or ``"liar"``.
        split: The disjoint train / validation / test examples.
        topology: Builds the graph to use: ``task.topology() -> (graph, params)``.
        scoring: How to compare an output with a target: ``"choice"`` (an option
            letter such as ``"(B)"``), ``"exact"`` (normalised text), ``"numeric"``
            (numbers, not strings) or ``"yes_no"``.
        category: ``"nlp"`` or ``"algorithmic"`` for BBH tasks, else None.
        seed: The seed the split was drawn with.
        protocol: ``"official"`` (the paper's splits, no validation set) or
            ``"heldout"`` (ours, with a validation set); see `load_task`.
        metric: How outputs are scored (one of `semgrad.tasks.METRICS`); by default
            the protocol's (`semgrad.tasks.default_metric`): under the official
            protocol the paper's exact string match (BBH, GSM8K) and ``YES``
            prefix (LIAR), under the held-out one normalised or numeric match.
    """

    name: str
    dataset: Literal["bbh", "gsm8k", "liar"]
    split: Split = attrs.field(repr=lambda s: f"Split(sizes={s.sizes})")
    topology: Topology = attrs.field(repr=lambda f: getattr(f, "__name__", repr(f)))
    scoring: Scoring
    category: Category | None = None
    seed: int = 0
    protocol: Protocol = "heldout"
    metric: Metric = attrs.field(
        default=attrs.Factory(lambda self: self._default_metric(), takes_self=True),
        converter=check_metric,
    )

    def _default_metric(self) -> Metric:
        if self.dataset in ("bbh", "gsm8k", "liar"):
            return default_metric(self.dataset, self.protocol)
        return "numeric" if self.scoring == "numeric" else "normalized"  # your own data: --metric

    @property
    def scored_on(self) -> Literal["train", "test"]:
        """The part of the split whose accuracy is the task's headline score.

        ``"train"`` for LIAR under the official protocol (the paper optimised and
        scored on the same 50 items; the test score is reported beside it),
        ``"test"`` otherwise.
        """
        return "train" if self.dataset == "liar" and self.protocol == "official" else "test"

    @property
    def models(self) -> FrozenMap[str, str]:
        """The model each role defaults to for this task: the paper's (`semgrad.tasks.PAPER_MODELS`:
        forward gpt-4o-mini, backward and optimizer gpt-4-turbo) under the official protocol, none
        under the held-out one (every role then runs on the backend's default model).

        Examples:
            >>> dict(sample_task("bbh:navigate", protocol="official").models)["backward"]
            'gpt-4-turbo'
            >>> dict(sample_task("bbh:navigate").models)
            {}
        """
        return PAPER_MODELS if self.protocol == "official" and self.dataset != "custom" else FrozenMap()

    def build(self) -> tuple[Graph, Params]:
        """The task's graph and starting parameters: ``self.topology()``."""
        return self.topology()


def task_names(*, groups: bool = False) -> tuple[str, ...]:
    """Every task `load_task` accepts: ``bbh:<task>`` for the 27 BBH tasks, ``gsm8k``, ``liar``.

    With `groups`, also the group names that `expand_task_names` and `load_tasks`
    accept (``bbh:all``), first.

    Examples:
        >>> names = task_names()
        >>> len(names), names[0], names[-2:]
        (29, 'bbh:boolean_expressions', ('gsm8k', 'liar'))
        >>> task_names(groups=True)[:2]
        ('bbh:all', 'bbh:boolean_expressions')
    """
    return (*(_GROUPS if groups else ()), *_GROUPS["bbh:all"], "gsm8k", "liar")


def expand_task_names(*names: str) -> tuple[str, ...]:
    """Task names with ``bbh:all`` replaced by the 27 BBH tasks, duplicates dropped.

    Raises:
        DataError: An unknown name (the message lists the valid ones).

    Examples:
        >>> expanded = expand_task_names("gsm8k", "bbh:all", "bbh:navigate")
        >>> len(expanded), expanded[:2]
        (28, ('gsm8k', 'bbh:boolean_expressions'))
    """
    result: dict[str, None] = {}
    for name in names:
        for each in _GROUPS[name] if name in _GROUPS else (_check_name(name),):
            result[each] = None
    return tuple(result)


def _check_name(name: str) -> str:
    if name in _GROUPS:
        raise DataError(f"{name!r} names {len(_GROUPS[name])} tasks; load them with load_tasks([{name!r}], ...)")
    if name not in task_names():
        raise DataError(f"unknown task {name!r}; valid names: {', '.join(task_names(groups=True))}")
    return name


def load_task(
    name: str,
    data_dir: DataDir,
    *,
    seed: int = 0,
    train: int | None = None,
    validation: int | None = None,
    test: int | None = None,
    drop_incomplete: bool = True,
    protocol: Protocol | None = None,
    max_items: int = MAX_ITEMS,
) -> Task:
    """Read one task from `data_dir` and split it by a protocol.

    With ``protocol="official"``, the splits of the paper's code (see
    `semgrad.tasks.official_split_bbh` and its siblings): BBH 20 train and the
    rest test, GSM8K 128 train and the 1,319 test items, LIAR 50 items of the
    filtered train file (scored on themselves, with the test file beside them);
    no validation set (`validation` must be None or 0).

    With ``protocol="heldout"``, our splits with a validation set.

    The default (`protocol` None) is the official protocol, as on ``semgrad run``,
    unless a `validation` size is given, which asks for the held-out one.
    Defaults (each overridable with `train`, `validation`, `test`):

    * ``bbh:<task>``: 20 train, 20 validation, the rest of the task file as test;
    * ``gsm8k``: 128 train and 128 validation from ``train.jsonl``, all 1,319
      items of ``test.jsonl`` as test;
    * ``liar``: 50 train from ``train.tsv``, 50 validation from ``valid.tsv``,
      all of ``test.tsv`` as test (labels ``false``/``true`` only; rows with an
      empty or "none" field dropped unless `drop_incomplete` is False).

    Train, validation and test never share an example, and the same seed always
    gives the same split.

    Args:
        name: One of `task_names`.
        data_dir: The directory that holds ``bbh/``, ``gsm8k/`` and ``liar/``.
        seed: The shuffle's seed.
        train: Training items, or None for the default.
        validation: Validation items, or None for the default.
        test: Test items, or None for all the remaining (BBH) or held-out (GSM8K, LIAR) items.
        drop_incomplete: LIAR, held-out protocol only: drop rows with an empty or
            "none" field (the official protocol filters as the paper's code does).
        protocol: ``"official"``, ``"heldout"``, or None: official unless `validation` is given.
        max_items: The most items each data file may hold (`semgrad.tasks.MAX_ITEMS` by default).

    Raises:
        DataError: Unknown name, missing directory or file, malformed data, too few items, or a file
            of more than `max_items`.
        ValueError: An unknown protocol, or a validation size with the official protocol.

    Examples:
        >>> load_task("bbh:navigation", "data")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.tasks._errors.DataError: unknown task 'bbh:navigation'; valid names: bbh:all, ...
    """
    protocol = pick_protocol(protocol, validation)
    n = max_items
    if protocol == "official":
        return _task(name, _official(_check_name(name), data_dir, seed, train, validation, test, n), seed, protocol)
    sizes = {"seed": seed, "train": train, "validation": validation, "test": test}
    if _check_name(name) == "gsm8k":
        parts = split_gsm8k(
            load_gsm8k(data_dir, "train", max_items=n), load_gsm8k(data_dir, "test", max_items=n), **sizes
        )
    elif name == "liar":
        files = (
            load_liar(data_dir, f, drop_incomplete=drop_incomplete, max_items=n) for f in ("train", "valid", "test")
        )
        parts = split_liar(*files, **sizes)
    else:
        parts = split_bbh(load_bbh(data_dir, name.removeprefix("bbh:"), max_items=n), **sizes)
    return _task(name, parts, seed, protocol)


def _official(
    name: str, data_dir: DataDir, seed: int, train: int | None, validation: int | None, test: int | None, n: int
) -> Split:
    if validation:
        raise ValueError("the official protocol has no validation set; use protocol='heldout' for one")
    if name == "gsm8k":
        return official_split_gsm8k(
            load_gsm8k(data_dir, "train", max_items=n),
            load_gsm8k(data_dir, "test", max_items=n),
            seed=seed,
            train=train,
            test=test,
        )
    if name == "liar":
        files = (load_liar(data_dir, f, drop_incomplete=False, max_items=n) for f in ("train", "test"))
        return official_split_liar(*files, seed=seed, train=train, test=test)
    parts = official_split_bbh(load_bbh(data_dir, name.removeprefix("bbh:"), max_items=n), seed=seed, train=train)
    return parts if test is None else Split(parts.train, (), parts.test[:test])


def load_tasks(
    names: Iterable[str],
    data_dir: DataDir,
    *,
    seed: int = 0,
    train: int | None = None,
    validation: int | None = None,
    test: int | None = None,
    drop_incomplete: bool = True,
    protocol: Protocol | None = None,
    max_items: int = MAX_ITEMS,
) -> tuple[Task, ...]:
    """`load_task` for each of `names` after `expand_task_names`, so ``bbh:all`` works.

    Examples:
        >>> load_tasks(["bbh:all"], "/no/such/dir")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        semgrad.tasks._errors.DataError: data directory /no/such/dir does not exist; pass the directory ... bbh/, ...
    """
    options = {
        "seed": seed,
        "train": train,
        "validation": validation,
        "test": test,
        "drop_incomplete": drop_incomplete,
        "protocol": protocol,
        "max_items": max_items,
    }
    return tuple(load_task(name, data_dir, **options) for name in expand_task_names(*names))  # type: ignore[arg-type]


def sample_task(
    name: str,
    *,
    seed: int = 0,
    train: int = 4,
    validation: int | None = None,
    test: int | None = None,
    protocol: Protocol = "heldout",
) -> Task:
    """A `Task` over the bundled items (see `load_samples`): no data directory needed.

    `validation` defaults to 2 items under the held-out protocol and must be
    None or 0 under the official one (which has no validation set).

    Examples:
        >>> task = sample_task("bbh:navigate")
        >>> task.split.sizes, task.scoring, task.category
        ((4, 2, 4), 'exact', 'algorithmic')
        >>> task.build()[0].output
        'answer'
        >>> sample_task("gsm8k", train=3, validation=3).split.sizes
        (3, 3, 2)
        >>> sample_task("bbh:navigate", protocol="official").split.sizes
        (4, 0, 6)
    """
    if check_protocol(protocol) == "official" and validation:
        raise ValueError("the official protocol has no validation set; use protocol='heldout' for one")
    n_validation = (0 if protocol == "official" else 2) if validation is None else validation
    parts = split(load_samples(name), train=train, validation=n_validation, test=test, seed=seed)
    return _task(name, parts, seed, protocol)


def _task(name: str, parts: Split, seed: int, protocol: Protocol = "heldout") -> Task:
    if name == "gsm8k":
        return Task(name, "gsm8k", parts, paper_graph, "numeric", seed=seed, protocol=protocol)
    if name == "liar":
        return Task(name, "liar", parts, liar_graph, "yes_no", seed=seed, protocol=protocol)
    task = name.removeprefix("bbh:")
    return Task(name, "bbh", parts, paper_graph, bbh_scoring(task), bbh_category(task), seed, protocol)
