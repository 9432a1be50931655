"""The async edge: run programs against LLMs with anyio, plus middleware and training."""

from ._protocol import LLM, AsyncLLM, SyncLLM, is_async_llm
from ._runner import Runner, RunStatistics, run, run_sync

__all__ = ["LLM", "AsyncLLM", "RunStatistics", "Runner", "SyncLLM", "is_async_llm", "run", "run_sync"]
