"""W6 in a fresh interpreter: ``python -m benchmarks._fresh '<json of W6 settings>'`` prints its row as JSON.

`benchmarks._workloads.w6_scale_fresh` runs this so that W6 measures semgrad on a heap
holding only what semgrad and the workload create. Timed in the suite's own process, after
W1-W5 have run, the same code took 10.1-10.9 s at 1,000 nodes against 7.0-7.6 s here, minutes
apart (its collector time 1.19 s against 0.73 s): every full pass of CPython's cyclic
collector traverses whatever else that process still holds.

Only the W6 fields of `Settings` are read (``w6_sizes``, ``w6_samples``, ``w6_rounds``,
``w6_budget_s``, ``w6_mem_samples``, ``w6_seed``); anything else is refused.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

from ._workloads import W6_FIELDS as FIELDS
from ._workloads import Settings, w6_scale


def settings_from_json(text: str) -> Settings:
    """`Settings.default()` with the W6 fields of `text` (a JSON object) in place."""
    given: Any = json.loads(text)
    if not isinstance(given, dict) or set(given) - set(FIELDS):
        raise ValueError(f"expected a JSON object with keys among {', '.join(FIELDS)}")
    if "w6_sizes" in given:
        given["w6_sizes"] = tuple(int(n) for n in given["w6_sizes"])
    return dataclasses.replace(Settings.default(), **given)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m benchmarks._fresh '<json of W6 settings>'", file=sys.stderr)
        return 2
    print(json.dumps(w6_scale(settings_from_json(argv[0]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
