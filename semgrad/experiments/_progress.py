"""Live progress of a run: every call counted against the planned total.

`RunProgress` gets two kinds of event: each reply (`on_reply`, once per call --
it only adds to counters and, on a terminal, nudges the bar) and each phase of
an iteration (`on_progress`). On a terminal it draws a `tqdm` bar (the
``progress`` extra) with the phase, the iteration, calls done / planned,
elapsed time and ETA, tokens, cost so far, errors and retries -- or, without
tqdm, one line it rewrites in place. Elsewhere (a log file, CI) it writes one
plain line per phase.

Examples:
    >>> import io
    >>> from returns.result import Success
    >>> from semgrad.core import LLMRequest, LLMResponse, Message
    >>> out = io.StringIO()
    >>> progress = RunProgress(out, planned=4, clock=iter(range(100)).__next__)
    >>> request = LLMRequest((Message("user", "hi"),))
    >>> progress.on_reply(request, Success(LLMResponse("ok", {"input_tokens": 7, "output_tokens": 3}, "m")))
    >>> progress.calls, progress.tokens_in, progress.errors
    (1, 7, 0)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from returns.result import Success

from ..report import money
from ..report._tokens import SIMULATED_TOKENS
from ._prices import price_of, token_cost

__all__ = ["RunProgress", "dollars", "done_of_planned", "find_retries"]


def _tools_text(tools: tuple[int, int]) -> str:
    """The tool calls of a system written as Python, apart from the LLM calls (nothing when there were none).

    Examples:
        >>> _tools_text((3, 1)), _tools_text((0, 0))
        (', 3 tool calls (1 failed)', '')
    """
    calls, failed = tools
    if not calls:
        return ""
    return f", {calls:,} tool calls" + (f" ({failed:,} failed)" if failed else "")


def find_retries(llm: Any) -> Any:
    """The `retrying` wrapper inside `llm`'s middleware stack (its ``.retries`` counts retries), or None."""
    seen = 0
    while llm is not None and seen < 20:
        if isinstance(getattr(llm, "retries", None), int):
            return llm
        llm = getattr(llm, "inner", None) or getattr(llm, "llm", None)
        seen += 1
    return None


def _find_accounts(llm: Any) -> Any:
    """The run's tally inside `llm` (its ``accounts_so_far()``), or None."""
    seen = 0
    while llm is not None and seen < 20:
        if callable(getattr(llm, "accounts_so_far", None)):
            return llm
        llm = getattr(llm, "inner", None) or getattr(llm, "llm", None)
        seen += 1
    return None


def dollars(value: float) -> str:
    """A cost in US dollars as the report shows it: four decimals below one cent (never $0.00 for a cost the
    report shows as $0.0029).

    Examples:
        >>> dollars(0.0029), dollars(1.5), dollars(0.0)
        ('$0.0029', '$1.50', '$0.00')
    """
    return money(value)


def done_of_planned(done: int, planned: int | None) -> str:
    """Calls done against the plan's total, never more done than the total shows: the plan is an upper bound
    of a run without failures (repair requests after unreadable replies, and the calls a resumed run makes
    again -- its handed-on forward, those its budget refused before -- come on top), so calls beyond it are
    shown apart, as such.

    Examples:
        >>> done_of_planned(35, 40), done_of_planned(43, 40), done_of_planned(7, None)
        ('35/40', '40/40 (+3 beyond the plan)', '7')
    """
    if not planned:
        return f"{done:,}"
    if done > planned:
        return f"{planned:,}/{planned:,} (+{done - planned:,} beyond the plan)"
    return f"{done:,}/{planned:,}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


class RunProgress:
    """Shows a run's progress on `stream` (see the module doc).

    Args:
        stream: Where to write (stderr).
        planned: The calls the dry-run plan counts for the whole run (None: unknown).
        prices: USD per million (input, output) tokens by model, for the cost so far.
        quiet: Show nothing (still count).
        banner: A line to print before the first progress output.
        fancy: Draw a live bar (default: when `stream` is a terminal).
        clock: Seconds, monotonic (tests pass a fake).
        already: Calls an earlier process of a resumed run made (counted as done;
            the ETA is reckoned from this process's pace).
        simulated: The run's LLM is the simulated one: its tokens are shown as none
            (`SIMULATED_TOKENS`), as everywhere else, not as counts of 0.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        planned: int | None = None,
        prices: Mapping[str, tuple[float, ...]] | None = None,
        quiet: bool = False,
        banner: str = "",
        fancy: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        already: int = 0,
        simulated: bool = False,
    ) -> None:
        self.stream, self.planned, self.prices, self.quiet, self.banner = stream, planned, prices, quiet, banner
        self.fancy = (hasattr(stream, "isatty") and stream.isatty()) if fancy is None else fancy
        self.clock, self.simulated = clock, simulated
        self.started = clock()
        self.calls = self.already = already
        self.errors = self.tokens_in = self.tokens_out = 0
        self.cost = 0.0
        self.unpriced = False
        self.retrying: Any = None
        self.tally: Any = None  # the run's tally, once `watch` finds it: its accounts are what the line shows
        self.label = ""
        self._prices: dict[str, tuple[float, ...] | None] = {}
        self._shown = self.started
        self._bar: Any = None
        self._line = False
        if self.fancy and not quiet:
            self._flush_banner()
            self._bar = self._tqdm()

    def _tqdm(self) -> Any:
        try:
            from tqdm import tqdm
        except ImportError:  # the progress extra is not installed: a plain line rewritten in place
            return None
        return tqdm(
            total=self.planned,
            initial=min(self.already, self.planned) if self.planned else self.already,
            file=self.stream,
            unit="call",
            dynamic_ncols=True,
            mininterval=0.2,
            bar_format="{desc} {bar} {n_fmt}/{total_fmt} calls [{elapsed}<{remaining}] {postfix}",
        )

    def watch(self, llm: Any) -> None:
        """Count the retries of the `retrying` wrapper inside `llm`, if there is one, and read the run's accounts
        (billed calls, hits apart, tokens, cost, errors) from its tally, if there is one."""
        self.retrying = find_retries(llm)
        self.tally = _find_accounts(llm)

    def figures(self) -> dict[str, Any]:
        """What the line shows: calls done against the plan (calls made, as results.json counts them), hits
        apart, errors, tokens and cost (None: some model unpriced) -- from the run's accounts when watching a
        run's stack."""
        if self.tally is None:
            cost = self.cost if self.prices is not None and not self.unpriced else None
            return {
                "done": self.calls, "calls": self.calls, "hits": 0, "errors": self.errors,
                "tokens": (self.tokens_in, self.tokens_out), "cost": cost, "tools": (0, 0),
            }  # fmt: skip
        accounts = self.tally.accounts_so_far()
        total = accounts.total()
        cost = accounts.cost(self.prices) if self.prices is not None else None
        if self.prices is not None and cost is None and not (total.input_tokens or total.output_tokens):
            cost = 0.0
        return {
            "done": self.already + total.calls,  # as results.json counts them; the plan is an upper bound
            "calls": self.already + total.calls,
            "hits": total.hits,
            "errors": total.errors,
            "tokens": (total.input_tokens, total.output_tokens),
            "cost": cost,
            "tools": (total.tool_calls, total.tool_errors),  # a system's tool calls: never LLM calls
        }

    @property
    def retries(self) -> int:
        """Retries made so far (0 when the LLM has no `retrying` wrapper)."""
        return self.retrying.retries if self.retrying is not None else 0

    def on_reply(self, request: Any, reply: Any) -> None:
        """Count one call (a `Runner` ``on_reply`` hook: cheap, once per call)."""
        self.calls += 1
        if type(reply) is Success:
            response = reply.unwrap()
            usage = response.usage
            if usage:
                used_in, used_out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
                self.tokens_in += used_in
                self.tokens_out += used_out
                if self.prices is not None and (used_in or used_out):
                    cached = int(usage.get("cached_input_tokens", 0)), int(usage.get("cache_write_tokens", 0))
                    self._add_cost(response.model, used_in, used_out, *cached)
        else:
            self.errors += 1
        if self.quiet or not self.fancy:
            return
        if self._bar is not None and (self._bar.total is None or self._bar.n < self._bar.total):
            self._bar.update(1)  # past the plan the bar stays full; the line says the calls beyond it
        now = self.clock()
        if now - self._shown >= 0.2:
            self._shown = now
            self._draw()

    __call__ = on_reply  # the object itself is a `Runner` ``on_reply`` hook

    def _add_cost(self, model: str, used_in: int, used_out: int, cached_in: int = 0, cache_write: int = 0) -> None:
        if model not in self._prices:
            self._prices[model] = price_of(self.prices or {}, model)
        price = self._prices[model]
        if price is None:
            self.unpriced = True
        else:
            self.cost += token_cost(price, used_in, used_out, cached_in, cache_write)

    def on_progress(self, task: str, event: Any) -> None:
        """A phase of an iteration began (a `FitProgress` of `task`)."""
        score = "" if event.score is None else f" (train {event.score:.2f})"
        task = task.rsplit("/", 1)[-1]  # your own system: its file name, not the whole path
        # Numbered from 1, as `IterationRecord` and the report number them; 0 is the initial params' scoring.
        where = f" iteration {event.iteration}/{event.iterations}" if event.iteration else ""
        self.label = f"{task}{where} {event.phase}{score}"
        if self.quiet:
            return
        if self.fancy:
            self._draw()
        else:
            self._say(f"{self.label}: {self.counts()}")

    def counts(self) -> str:
        """Calls done / planned, elapsed, ETA, tokens, cost, errors and retries, as text."""
        f = self.figures()
        elapsed = self.clock() - self.started
        eta = None
        made = f["done"] - self.already
        if self.planned and made:
            eta = max(0.0, (self.planned - f["done"]) * elapsed / made)
        hits = f" ({f['hits']:,} answered without a call)" if f["hits"] else ""
        return (
            f"{done_of_planned(f['done'], self.planned)} calls{hits}{_tools_text(f['tools'])}, "
            f"{_duration(elapsed)} elapsed, "
            f"ETA {_duration(eta)}, {self._tokens_text(f['tokens'])}{self._cost(f['cost'])}, {f['errors']} errors, "
            f"{self.retries} retries"
        )

    def _cost(self, cost: float | None) -> str:
        if self.prices is None:
            return ""
        return f", {dollars(cost)}" if cost is not None else ", cost not known (some models unpriced)"

    def _tokens_text(self, tokens: tuple[int, int]) -> str:
        return f"tokens {SIMULATED_TOKENS}" if self.simulated else f"{tokens[0]:,}+{tokens[1]:,} tokens"

    def _extras(self) -> str:
        f = self.figures()
        cost = self._cost(f["cost"]).lstrip(",")
        done = f["done"]
        beyond = f"+{done - self.planned:,} beyond the plan " if self.planned and done > self.planned else ""
        used = f"tokens {SIMULATED_TOKENS}" if self.simulated else f"{f['tokens'][0] + f['tokens'][1]:,} tok"
        return beyond + f"{used}{cost} {f['errors']} err {self.retries} retries"

    def _draw(self) -> None:
        if self._bar is not None:
            self._bar.set_description_str(self.label, refresh=False)
            self._bar.set_postfix_str(self._extras(), refresh=True)
            return
        self._flush_banner()
        self.stream.write("\r\x1b[2K" + f"{self.label}: {self.counts()}")
        self.stream.flush()
        self._line = True

    def _flush_banner(self) -> None:
        if self.banner and not self.quiet:
            self.stream.write(self.banner + "\n")
            self.banner = ""

    def _say(self, line: str) -> None:
        self._flush_banner()
        if self._line:
            self.stream.write("\n")
            self._line = False
        self.stream.write(line + "\n")
        self.stream.flush()

    def close(self, stopped: str | None = None, *, finished: bool = True) -> None:
        """End the display; say why the run stopped early, when it did (or that it finished, when `finished`)."""
        if self._bar is not None:
            self._draw()
            self._bar.close()
            self._bar = None
        elif self._line:
            self.stream.write("\n")
            self._line = False
        if stopped:
            self._say(f"semgrad: the run stopped early: {stopped} ({self.counts()})")
        elif finished and not self.quiet:
            self._say(f"finished: {self.counts()}")
