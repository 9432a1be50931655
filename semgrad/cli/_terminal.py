"""What several subcommands say the same way: the exit code of a spent budget, the simulated-LLM notice, and
one-line errors that a terminal shows as text."""

from __future__ import annotations

__all__ = ["EXIT_BUDGET", "SIMULATED_NOTICE", "one_line", "score_text"]

#: The exit code of a run that stopped because its budget (--max-calls / --max-tokens) was spent.
EXIT_BUDGET = 3

#: Said once at the start of anything that runs on the simulated backend.
SIMULATED_NOTICE = "The LLM is SIMULATED (offline, deterministic): scores say nothing about real models."


def one_line(text: str) -> str:
    r"""`text` on one line for a terminal: whitespace runs as one space, other control characters escaped.

    An error may quote a file's contents (a run folder's config.json, say): its escape sequences must not
    reach the terminal, which would act on them.

    Examples:
        >>> one_line("bad\n  value \x1b]52;c;ZWNobw==\x07!")
        'bad value \\x1b]52;c;ZWNobw==\\x07!'
    """
    flat = " ".join(text.split())
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in flat)


def score_text(value: float | None) -> str:
    """A score as the terminal shows it: three decimals, or ``-`` for none.

    Examples:
        >>> score_text(0.5), score_text(None)
        ('0.500', '-')
    """
    return "-" if value is None else f"{value:.3f}"
