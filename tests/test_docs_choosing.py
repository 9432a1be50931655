"""docs/optimizers.md's "Choosing an optimizer" covers every method the compare table has, with its cost."""

from __future__ import annotations

import re

from ._hidden import ROOT


def test_choosing_an_optimizer_has_a_row_per_method_with_its_calls_what_it_sees_and_when_it_wins():
    """The section's table has one row per method (the paper's, the four baselines and ours), each with the calls
    per iteration, what the rewrite sees and when it wins filled in."""
    page = (ROOT / "docs" / "optimizers.md").read_text("utf-8")
    section = page.split("## Choosing an optimizer", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    methods = [re.match(r"\| `(\w+)`", row).group(1) for row in rows]
    assert methods == ["neighbor_sgd", "textgrad", "optoprime", "copro", "gepa", "pareto_sgd"]
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 4 and all(cells), row
        assert "rewrite" in cells[1], row
