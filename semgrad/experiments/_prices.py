"""Model prices for cost estimates: a dated table shipped with the package, or the user's file.

The bundled table (``semgrad/data/prices.json``) names the date and the source of
its list prices; ``--prices FILE`` replaces it. A file is either that shape
(``{"date": ..., "source": ..., "models": {model: [in, out]}}``) or the bare
mapping ``{model: [usd_per_1M_in, usd_per_1M_out]}``; a price may go on with the rates of
prompt tokens read from the provider's cache and written to it, ``[in, out, cached_in,
cache_write]`` (OpenAI bills cached prompt tokens at a discount and writes at the input rate;
Anthropic bills reads at a tenth of it and writes at 1.25 times it).

Examples:
    >>> table = bundled_prices()
    >>> table.date[:2], price_of(table.models, "gpt-4o-mini-2024-07-18") == table.models["gpt-4o-mini"]
    ('20', True)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from .._files import read_regular_text, unreadable
from ..effects._accounting import BATCH_DISCOUNT, price_of, token_cost

__all__ = [
    "CACHE_MIN_TOKENS",
    "DEFAULT_MODELS",
    "PriceTable",
    "bundled_prices",
    "estimate_cost",
    "load_prices",
    "model_for",
    "price_of",
    "prompt_cache",
    "run_cost",
    "token_cost",
]

#: The model a backend uses when the config names none. (Anthropic retires old models: requests
#: to a retired one fail, so the default is a current one; Claude 3.5 Haiku was deprecated in 2026.)
DEFAULT_MODELS = {"openai-compatible": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}

Prices = Mapping[str, tuple[float, ...]]

#: The most a ``--prices`` file may hold: a price table is a few kilobytes (a FIFO or a device is refused).
MAX_BYTES = 2**20


@attrs.frozen
class PriceTable:
    """USD per million (input, output) tokens by model, with where and when the prices were read.

    Attributes:
        models: ``{model: (usd_per_1M_input, usd_per_1M_output)}``, or those and the rates of prompt tokens
            read from the provider's cache and written to it: ``(..., usd_per_1M_cached_input,
            usd_per_1M_cache_write)``.
        date: The day the prices were read (ISO), or "" when the file says none.
        source: Where they were read, or the file they came from.
    """

    models: Mapping[str, tuple[float, ...]]
    date: str = ""
    source: str = ""

    def describe(self) -> str:
        """One line naming the table's date and source."""
        when = f" of {self.date}" if self.date else ""
        return f"prices{when} from {self.source or 'an unnamed source'}"


def _parse(data: Any, where: str) -> PriceTable:
    if not isinstance(data, Mapping):
        raise ValueError(f"cannot read the price table {where}: expected a JSON object")
    nested = isinstance(data.get("models"), Mapping)
    models = data["models"] if nested else data
    table: dict[str, tuple[float, ...]] = {}
    for model, price in models.items():
        try:
            rates = tuple(float(p) for p in price)
            if len(rates) not in (2, 4) or any(not rate >= 0 for rate in rates):
                raise ValueError
        except (TypeError, ValueError):
            raise ValueError(
                f"cannot read the price table {where}: the price of {model!r} must be "
                f"[usd_per_1M_in, usd_per_1M_out], or those and [usd_per_1M_cached_in, usd_per_1M_cache_write], "
                f"non-negative; got {price!r}"
            ) from None
        table[str(model)] = rates
    date = str(data.get("date", "")) if nested else ""
    source = str(data.get("source", "")) if nested else ""
    return PriceTable(table, date, source or where)


def bundled_prices() -> PriceTable:
    """The dated price table shipped with semgrad."""
    text = resources.files("semgrad.data").joinpath("prices.json").read_text("utf-8")
    return _parse(json.loads(text), "semgrad/data/prices.json")


def load_prices(path: str | None) -> PriceTable:
    """The table in `path`, or the bundled one when `path` is None or empty.

    Raises:
        ValueError: The file cannot be read or is not shaped like a price table (one line).
    """
    if not path:
        return bundled_prices()
    try:
        data = json.loads(read_regular_text(Path(path), limit=MAX_BYTES))
    except (OSError, ValueError, RecursionError) as exc:
        raise ValueError(
            f"cannot read the price table {path}: expected JSON {{model: [usd_per_1M_in, usd_per_1M_out]}} "
            f"({unreadable(exc)})"
        ) from None
    return _parse(data, path)


def model_for(config: Any, role: str) -> str:
    """The model a config's `role` (forward, backward, optimizer) runs on ("" on the simulated backend)."""
    if config.backend == "simulated":
        return ""
    return config.models().get(role) or config.model or DEFAULT_MODELS.get(config.backend, "")


def estimate_cost(
    config: Any,
    tokens_by_role: Mapping[str, tuple[int, int]],
    prices: Prices | None,
    cached_by_role: Mapping[str, tuple[int, int]] | None = None,
) -> float | None:
    """USD for the tokens each role used, at the price of the model that role ran on (None if unpriced);
    `cached_by_role`: of each role's input tokens, ``(read from, written to)`` the provider's prompt cache.

    Examples:
        >>> from semgrad.experiments import RunConfig
        >>> estimate_cost(RunConfig("gsm8k", model="m"), {"forward": (2_000_000, 1_000_000)}, {"m": (0.5, 2.0)})
        3.0
    """
    if not prices:
        return None
    total = 0.0
    for role, (used_in, used_out) in tokens_by_role.items():
        price = price_of(prices, model_for(config, role) or config.model or "")
        if price is None:
            return None
        read, written = (cached_by_role or {}).get(role, (0, 0))
        total += token_cost(price, used_in, used_out, read, written)
    return total


#: The shortest prefix a provider caches, in tokens: OpenAI's and most Claude models' 1,024; Claude Haiku 3
#: and 3.5 cache 2,048 or more, Claude Haiku 4.5 and Opus 4.5 and later 4,096 or more.
CACHE_MIN_TOKENS = {"claude-3-haiku": 2048, "claude-3-5-haiku": 2048, "claude-haiku-4-5": 4096}
_CACHE_MIN_4096 = ("claude-opus-4-5", "claude-opus-4-6")


def prompt_cache(config: Any, role: str) -> tuple[int, bool] | None:
    """How `role`'s provider caches prompt prefixes under `config`: ``(the shortest prefix it caches, in
    tokens; whether a write is billed apart)``, or None when nothing is cached (the simulated backend, your
    own LLM, Anthropic with ``--prompt-cache off``). OpenAI caches by itself and bills no write; Anthropic
    caches the marked system text and bills its first write at 1.25 times the input rate.

    Examples:
        >>> from semgrad.experiments import RunConfig
        >>> prompt_cache(RunConfig("gsm8k", backend="anthropic"), "forward")
        (4096, True)
        >>> prompt_cache(RunConfig("gsm8k", backend="openai-compatible", model="gpt-4o-mini"), "forward")
        (1024, False)
        >>> prompt_cache(RunConfig("gsm8k", backend="anthropic", prompt_cache=False), "forward") is None
        True
    """
    if config.backend == "openai-compatible":
        return 1024, False
    if config.backend != "anthropic" or not config.prompt_cache:
        return None
    model = model_for(config, role)
    minimum = next((n for name, n in CACHE_MIN_TOKENS.items() if model.startswith(name)), 1024)
    return (4096 if model.startswith(_CACHE_MIN_4096) else minimum), True


def run_cost(config: Any, counters: Mapping[str, Any], prices: Prices | None) -> float | None:
    """USD for a run's billed tokens, each priced by the model that answered (``tokens_by_model``), the
    prompt tokens it read from or wrote to the provider's cache (``prompt_cache_by_model``) at the price's
    cache rates; by the model each role was configured with when some reply named no model (or an older
    ledger kept none). The tokens of batch calls (``batch_tokens_by_model``) cost `BATCH_DISCOUNT` of that.

    Examples:
        >>> from semgrad.experiments import RunConfig
        >>> counters = {"tokens_by_model": {"m-2024-01-01": [2_000_000, 0]}, "input_tokens": 2_000_000,
        ...             "output_tokens": 0, "tokens_by_engine": {"forward": [2_000_000, 0]}}
        >>> run_cost(RunConfig("gsm8k", model="other"), counters, {"m": (0.5, 2.0), "other": (9.0, 9.0)})
        1.0
        >>> run_cost(RunConfig("gsm8k"), {**counters, "batch_tokens_by_model": {"m-2024-01-01": [2_000_000, 0]}},
        ...          {"m": (0.5, 2.0)})  # the same calls made as a batch: half
        0.5
    """
    if not prices:
        return None
    full = _full_cost(config, counters, prices)
    if full is None:
        return None
    for model, (used_in, used_out) in (counters.get("batch_tokens_by_model") or {}).items():
        price = price_of(prices, model or config.model or "")
        if price is None:
            return None
        full -= (1 - BATCH_DISCOUNT) * token_cost(price, used_in, used_out)
    return full


def _full_cost(config: Any, counters: Mapping[str, Any], prices: Prices) -> float | None:
    """`run_cost` with every call at the table's rates (no batch discount)."""
    by_model = counters.get("tokens_by_model") or {}
    named = sum(used[0] + used[1] for model, used in by_model.items() if model)
    if named == int(counters.get("input_tokens", 0)) + int(counters.get("output_tokens", 0)):
        cached = counters.get("prompt_cache_by_model") or {}
        total = 0.0
        for model, (used_in, used_out) in by_model.items():
            price = price_of(prices, model)
            if price is None:
                return None
            read, written = cached.get(model, (0, 0))
            total += token_cost(price, used_in, used_out, int(read), int(written))
        return total
    tokens = {engine: (used[0], used[1]) for engine, used in counters.get("tokens_by_engine", {}).items()}
    return estimate_cost(config, tokens, prices)
