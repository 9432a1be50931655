"""The pieces of the command line that several subcommands share: the parser class, the help format, the
global flags (before or after the subcommand) and the server, model, sampling and call flags of run and compare.

No option is ever read as an abbreviation: ``--data`` is not ``--data-dir``. Each parser is made with
``allow_abbrev=False``, and an unknown option that begins a known one is refused with the full name shown.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = [
    "CommandParser",
    "HelpWithDefaults",
    "add_call_flags",
    "add_command",
    "add_global_flags",
    "add_max_items_flag",
    "add_own_code_flags",
    "add_pareto_flags",
    "temperature",
]


class CommandParser(argparse.ArgumentParser):
    """An argument parser that takes no abbreviation, and says so when an unknown option begins a known one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._refuse(extras, parsed)
        return parsed

    def _refuse(self, extras: list[str], parsed: argparse.Namespace) -> NoReturn:
        """Refuse the arguments left over, naming the full option each abbreviated one begins, if any."""
        known = self._options_of(getattr(parsed, "command", None))
        hints = [
            f"{extra} is not an abbreviation of {' or '.join(full)} (options are never abbreviated)"
            for extra in extras
            if extra.startswith("--")
            for full in [[o for o in known if o.startswith(extra.split("=", 1)[0]) and o != extra]]
            if full
        ]
        self.error("; ".join([f"unrecognized arguments: {' '.join(extras)}", *hints]))

    def _options_of(self, command: str | None) -> list[str]:
        """The long options of this parser and of `command`'s subparser."""
        parsers = [self]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and command in action.choices:
                parsers.append(action.choices[command])
        return sorted({o for p in parsers for a in p._actions for o in a.option_strings if o.startswith("--")})


class HelpWithDefaults(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Help that keeps the description's lines and shows each option's default, when it has one worth showing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or action.default is False or "default" in (action.help or ""):
            return action.help or ""
        return super()._get_help_string(action) or ""


def add_global_flags(parser: argparse.ArgumentParser, *, after_command: bool = False) -> None:
    """--debug and --no-uvloop: on the top-level parser, and again on each subcommand's (`after_command`), where
    they default to nothing so that a flag typed before the subcommand is kept."""
    unset: dict[str, Any] = {"default": argparse.SUPPRESS} if after_command else {}
    group = parser.add_argument_group("global options (before or after the subcommand)") if after_command else parser
    group.add_argument("--debug", action="store_true", help="show tracebacks on errors", **unset)
    group.add_argument(
        "--no-uvloop",
        action="store_true",
        help="use asyncio's own event loop even where uvloop is installed (also: SEMGRAD_UVLOOP=0)",
        **unset,
    )


def add_command(commands: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand's parser: no abbreviations, and the global flags accepted after the subcommand too."""
    parser: argparse.ArgumentParser = commands.add_parser(name, allow_abbrev=False, **kwargs)
    add_global_flags(parser, after_command=True)
    return parser


def add_own_code_flags(parser: argparse.ArgumentParser) -> None:
    """--data, --metric, --criteria and --llm: your own items, metric and LLM (run and compare)."""
    parser.add_argument(
        "--data", help="your items: JSON Lines {'inputs': {...}, 'target': ...}, a JSON array of those, or CSV"
    )
    parser.add_argument(
        "--metric",
        default="exact",
        help="how outputs are scored: exact (normalised exact match), normalized, numeric, judge (an LLM judge), or "
        "your own FILE.py:FUNCTION or MODULE:FUNCTION, fn(output, target) returning a number from 0 to 1, a "
        "(number, feedback) pair or a semgrad.core.Score; a paper task is scored by its protocol's metric (exact) "
        "unless another is named",
    )
    parser.add_argument("--criteria", help="the LLM judge's criteria (--metric judge)")
    parser.add_argument(
        "--llm",
        help="your own LLM: FILE.py:FUNCTION or MODULE:FUNCTION (default function make) returning a callable that "
        "takes an LLMRequest and returns the reply's text; it replaces --backend",
    )


def temperature(text: str) -> float | None:
    """A temperature, or None for ``none`` (no temperature is sent)."""
    if text.strip().lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number or none, got {text!r}") from None


def add_call_flags(parser: argparse.ArgumentParser) -> None:
    """The flags `run` and `compare` share: the split and seed, the server, models and sampling, and the calls."""
    _add_split_flags(parser)
    _add_model_flags(parser)
    _add_sampling_flags(parser)
    parser.add_argument("--concurrency", type=int, default=8, help="calls in flight at most")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per call")
    parser.add_argument("--cache", help="a SQLite file caching replies (re-runs make no repeated calls)")
    parser.add_argument(
        "--prompt-cache",
        choices=("on", "off"),
        default="on",
        help="mark each request's stable prefix (its system text) for the provider's prompt cache: Anthropic "
        "bills a cached read at a tenth of the input price (a write at 1.25 times); OpenAI caches by itself",
    )
    add_max_items_flag(parser)


def add_max_items_flag(parser: argparse.ArgumentParser) -> None:
    """--max-items: the most items one data file may hold (run, compare and sweep)."""
    from ..tasks import MAX_ITEMS

    parser.add_argument(
        "--max-items",
        type=int,
        metavar="N",
        help=f"the most items one data file may hold (default: {MAX_ITEMS:,}); a larger file is refused "
        "before anything runs",
    )


def add_pareto_flags(parser: argparse.ArgumentParser) -> None:
    """--minibatch and --max-metric-calls: the Pareto searches' own (--optimizer gepa or pareto-sgd)."""
    parser.add_argument(
        "--minibatch",
        type=int,
        default=3,
        metavar="N",
        help="gepa / pareto-sgd: the training items each proposal is tried on (GEPA's default, 3)",
    )
    parser.add_argument(
        "--max-metric-calls",
        type=int,
        metavar="N",
        help="gepa / pareto-sgd: stop proposing once this many items have been scored (GEPA's budget; "
        "default: only --iterations bounds the search)",
    )


def _add_split_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--k",
        type=int,
        default=2,
        help="error samples per iteration (TextGrad under --protocol official: its batch of 3)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the seed of the split and the optimizer")
    parser.add_argument("--train", type=int, help="training items (default: the paper's)")
    parser.add_argument(
        "--validation",
        type=int,
        help="validation items (by default none under the official protocol; 0 for none, more selects heldout)",
    )
    parser.add_argument("--test", type=int, help="test items (default: all held out)")


def _add_model_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help="the API root of an OpenAI-compatible or Anthropic server")
    parser.add_argument(
        "--model",
        help="the model for every role (default: gpt-4o-mini on openai-compatible, claude-haiku-4-5 on anthropic; "
        "a paper task under --protocol official on openai-compatible: forward gpt-4o-mini, backward and optimizer "
        "gpt-4-turbo, as the paper ran)",
    )
    parser.add_argument("--forward-model", help="the model for forward calls")
    parser.add_argument(
        "--backward-model", help="the model for backward calls (default: --optimizer-model, as the paper's code)"
    )
    parser.add_argument(
        "--optimizer-model", help="the model for rewrite and critique calls, and backward ones unless --backward-model"
    )


def _add_sampling_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--temperature",
        type=temperature,
        default=0.0,
        help="sampling temperature of every call (default: 0), or none to send none: for models that refuse one "
        "(Claude Opus 4.7, OpenAI's reasoning models); a role's own --ROLE-temperature is still sent",
    )
    parser.add_argument("--max-output-tokens", type=int, default=1024, help="reply length cap of every call")
    for role in ("forward", "backward", "optimizer"):
        parser.add_argument(f"--{role}-temperature", type=float, help=f"the temperature of {role} calls")
        parser.add_argument(f"--{role}-max-output-tokens", type=int, help=f"the reply length cap of {role} calls")
