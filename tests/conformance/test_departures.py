"""The README's table of departures from the official code and the packages comes from one source."""

from __future__ import annotations

from pathlib import Path

from .departures import ALL, COPRO, DEPARTURES, OFFICIAL, OPTOPRIME, TEXTGRAD, table

README = Path(__file__).parents[2] / "README.md"


def test_readme_holds_the_departures_table():
    """README.md shows exactly the table `python -m tests.conformance.departures` prints."""
    assert table() in README.read_text("utf-8"), "regenerate: python -m tests.conformance.departures"


def test_every_departure_names_what_it_departs_from_and_a_reason():
    """Each departure is against the official code, one of the three packages or all four, and gives a reason;
    each of them has at least one entry and no entry is listed twice."""
    sources = {OFFICIAL, TEXTGRAD, COPRO, OPTOPRIME, ALL}
    assert {d.against for d in DEPARTURES} == sources
    assert all(d.what.strip() and d.why.strip() and "|" not in d.what + d.why for d in DEPARTURES)
    assert len({d.what for d in DEPARTURES}) == len(DEPARTURES)


def test_the_readme_has_one_departures_table():
    """The departures table appears once, so an edited copy elsewhere in the README cannot drift."""
    assert README.read_text("utf-8").count("| departs from | what differs | why |") == 1
