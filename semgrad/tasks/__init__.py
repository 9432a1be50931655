"""Benchmark datasets, seeded disjoint splits, and ready-to-run tasks.

Loaders read files from a data directory you give (the layout of the project's
``data/`` folder: ``bbh/<task>.json``, ``gsm8k/{train,test}.jsonl``,
``liar/{train,valid,test}.tsv``); a handful of BBH and GSM8K items are bundled
for offline use (`load_samples`, `sample_task`). Every problem is a `DataError`
with a one-line message that says what to pass instead.

Examples:
    >>> from semgrad.tasks import sample_task
    >>> task = sample_task("gsm8k", seed=1)
    >>> task.scoring, task.split.sizes
    ('numeric', (4, 2, 2))
    >>> graph, params = task.build()
    >>> set(task.split.train[0].inputs) == set(graph.inputs)
    True
"""

from ._bbh import (
    BBH_ALGORITHMIC as BBH_ALGORITHMIC,
)
from ._bbh import (
    BBH_CHOICE_TASKS as BBH_CHOICE_TASKS,
)
from ._bbh import (
    BBH_NLP as BBH_NLP,
)
from ._bbh import (
    BBH_TASKS as BBH_TASKS,
)
from ._bbh import (
    Category as Category,
)
from ._bbh import (
    bbh_category as bbh_category,
)
from ._bbh import (
    bbh_examples as bbh_examples,
)
from ._bbh import (
    bbh_scoring as bbh_scoring,
)
from ._bbh import (
    load_bbh as load_bbh,
)
from ._bbh import (
    split_bbh as split_bbh,
)
from ._bundled import load_samples as load_samples
from ._bundled import sample_names as sample_names
from ._errors import DataError as DataError
from ._files import MAX_ITEMS as MAX_ITEMS
from ._gsm8k import (
    gsm8k_answer as gsm8k_answer,
)
from ._gsm8k import (
    gsm8k_examples as gsm8k_examples,
)
from ._gsm8k import (
    load_gsm8k as load_gsm8k,
)
from ._gsm8k import (
    split_gsm8k as split_gsm8k,
)
from ._liar import (
    LIAR_LABELS as LIAR_LABELS,
)
from ._liar import (
    liar_examples as liar_examples,
)
from ._liar import (
    load_liar as load_liar,
)
from ._liar import (
    split_liar as split_liar,
)
from ._metrics import METRICS as METRICS
from ._metrics import Metric as Metric
from ._metrics import default_metric as default_metric
from ._metrics import metric_loss as metric_loss
from ._metrics import yes_prefix_match as yes_prefix_match
from ._protocols import OFFICIAL_SIZES as OFFICIAL_SIZES
from ._protocols import PAPER_MODELS as PAPER_MODELS
from ._protocols import PROTOCOLS as PROTOCOLS
from ._protocols import Protocol as Protocol
from ._protocols import liar_official_keep as liar_official_keep
from ._protocols import official_split_bbh as official_split_bbh
from ._protocols import official_split_gsm8k as official_split_gsm8k
from ._protocols import official_split_liar as official_split_liar
from ._protocols import paper_iterations as paper_iterations
from ._split import Split as Split
from ._split import split as split
from ._task import (
    Scoring as Scoring,
)
from ._task import (
    Task as Task,
)
from ._task import (
    expand_task_names as expand_task_names,
)
from ._task import (
    load_task as load_task,
)
from ._task import (
    load_tasks as load_tasks,
)
from ._task import (
    sample_task as sample_task,
)
from ._task import (
    task_names as task_names,
)

__all__ = [
    "BBH_ALGORITHMIC",
    "BBH_CHOICE_TASKS",
    "BBH_NLP",
    "BBH_TASKS",
    "LIAR_LABELS",
    "MAX_ITEMS",
    "METRICS",
    "OFFICIAL_SIZES",
    "PAPER_MODELS",
    "PROTOCOLS",
    "Category",
    "DataError",
    "Metric",
    "Protocol",
    "Scoring",
    "Split",
    "Task",
    "bbh_category",
    "bbh_examples",
    "bbh_scoring",
    "default_metric",
    "expand_task_names",
    "gsm8k_answer",
    "gsm8k_examples",
    "liar_examples",
    "liar_official_keep",
    "load_bbh",
    "load_gsm8k",
    "load_liar",
    "load_samples",
    "load_task",
    "load_tasks",
    "metric_loss",
    "official_split_bbh",
    "official_split_gsm8k",
    "official_split_liar",
    "paper_iterations",
    "sample_names",
    "sample_task",
    "split",
    "split_bbh",
    "split_gsm8k",
    "split_liar",
    "task_names",
    "yes_prefix_match",
]
