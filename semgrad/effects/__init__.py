"""The async edge: run programs against LLMs with anyio, plus middleware and training.

Middleware takes the wrapped LLM first and returns an async LLM with the same
``identity``, so wrappers compose in any order::

    llm = cached(retrying(limited(backend, max_concurrency=8)), path="cache.sqlite")
"""

from ._accounting import AccountingReport, Accounts, Amount, Line, UsageRow, accounted, budgeted, mark_answered
from ._cache import cached
from ._cassette import recorded, replayed
from ._checkpoint import CheckpointError
from ._fit import Budget, FitProgress, FitResult, IterationRecord, fit, fit_sync
from ._limit import limited
from ._loop import run_loop, uvloop_available, uvloop_enabled
from ._memo import memoized
from ._protocol import LLM, AsyncLLM, SyncLLM, is_async_llm
from ._record import Context, NodeFailed, Recording, RecordingError, record
from ._retry import RetryPolicy, retrying
from ._routing import by_engine
from ._runner import Runner, RunStatistics, run, run_sync
from ._state_types import register_state_type, registered_state_types
from ._system import PythonSystem, system
from ._systems import as_trainable
from ._tools import ToolCache
from ._trace import traced

__all__ = [
    "LLM",
    "NodeFailed",
    "PythonSystem",
    "Recording",
    "RecordingError",
    "AccountingReport",
    "Accounts",
    "Amount",
    "AsyncLLM",
    "Budget",
    "CheckpointError",
    "Context",
    "FitProgress",
    "FitResult",
    "IterationRecord",
    "Line",
    "RetryPolicy",
    "RunStatistics",
    "Runner",
    "SyncLLM",
    "ToolCache",
    "UsageRow",
    "accounted",
    "as_trainable",
    "budgeted",
    "by_engine",
    "cached",
    "fit",
    "fit_sync",
    "is_async_llm",
    "limited",
    "mark_answered",
    "memoized",
    "record",
    "recorded",
    "register_state_type",
    "registered_state_types",
    "replayed",
    "retrying",
    "run",
    "run_loop",
    "run_sync",
    "system",
    "traced",
    "uvloop_available",
    "uvloop_enabled",
]
