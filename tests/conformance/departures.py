"""Every remaining departure from the official code and from each peer package: the one source of the
README's departures table.

Run ``python -m tests.conformance.departures`` from the repository root to print the table;
``test_departures.py`` checks that README.md holds exactly it. Each entry says what differs, from
what, and why; a behaviour that is the published one by default and ours only as a named option is
listed with that option. Issue 31 decides which behaviours become options; the entries state them as
they stand once its points are done.
"""

from __future__ import annotations

from typing import NamedTuple


class Departure(NamedTuple):
    """One difference: from what (`against`), what differs, and the reason."""

    against: str
    what: str
    why: str


OFFICIAL = "official code"
TEXTGRAD = "TextGrad 0.1.8"
COPRO = "DSPy 3.4.1 COPRO"
OPTOPRIME = "trace-opt 0.1.3.8 OptoPrime"
ALL = "all four"

#: The departures, grouped by what they depart from, in the README's order.
DEPARTURES: tuple[Departure, ...] = (
    Departure(
        ALL,
        "every prompt is worded here, and the final answer is read from a `<result>` tag",
        "the project writes its own prompts; each carries the same pieces of information in its own section",
    ),
    Departure(
        OFFICIAL,
        "LIAR's final node is asked to think before its Yes or No (its analyses are not, as in the official code)",
        "the reasoning stays outside the `<result>` tag, so the YES-prefix metric reads only the answer",
    ),
    Departure(
        OFFICIAL,
        "BBH: train and test never share an item",
        "the official code shuffles the task file once per split, so some training items reach its test split",
    ),
    Departure(
        OFFICIAL,
        "the initial test score, and LIAR's test file scored beside the 50 items optimised on",
        "our additions: a held-out figure and a starting point; the paper's own scores are computed as it does",
    ),
    Departure(
        OFFICIAL,
        "`no-neighbors` hides the siblings in every iteration; `no-neighbors-as-run` reproduces the official run",
        "the official run falls back to sibling mode after its first accepted update (its full update drops the "
        "flag); the default is the ablation the paper describes",
    ),
    Departure(
        OFFICIAL,
        "options, off under `--protocol official`: `--protocol heldout` (a validation set for the gate, "
        "normalised / numeric scoring), `fallback` (backpropagate k right items when none is wrong), `--metric`",
        "the official gate scores candidates on the items it reports; these give a held-out choice and lenient "
        "scoring when wanted",
    ),
    Departure(
        OFFICIAL,
        "a failed call (after retries) counts as a wrong answer and the run goes on; budgets, caches, resume",
        "a long run with a real provider must survive rate limits and outages and say what it spent",
    ),
    Departure(
        OFFICIAL,
        "LIAR is read from the dataset's TSV files in a data directory",
        "no download at run time; the rows kept and their order are the official loader's (checked in "
        "tests/conformance/test_splits.py)",
    ),
    Departure(
        TEXTGRAD,
        "options: the script's `--run_validation` revert, which keeps ties (`optim.textgrad(gate=True)`), "
        "and error-only selection; off by default",
        "the package's script runs without them by default; they are kept for comparison with the method",
    ),
    Departure(
        COPRO,
        "instructions only, no output-field prefix",
        "a semgrad node has no output-field prefix to propose",
    ),
    Departure(
        COPRO,
        "one breadth round per `fit` iteration (`--iterations` is its depth), every candidate scored again each round",
        "DSPy rescores its candidates each round when a program has several predictors; a `--cache` makes the "
        "repeats free, as DSPy's cache does",
    ),
    Departure(
        OPTOPRIME,
        "the k error samples in one call",
        "Trace joins a batch's outputs and feedback into one step; trace-opt 0.1.3.8 needs a `batchify` of "
        "one's own to do so",
    ),
)


def table(departures: tuple[Departure, ...] = DEPARTURES) -> str:
    """The README's markdown table, one row per departure."""
    rows = ["| departs from | what differs | why |", "|---|---|---|"]
    rows += [f"| {d.against} | {d.what} | {d.why} |" for d in departures]
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
