"""semgrad's benchmark suite: wall time against the critical-path limit, library
overhead per call, scale and throughput, with fake LLMs of controlled latency.

Run ``python -m benchmarks [--quick] [--only W1,W3] [--repeats N]`` from the
repository root; see ``benchmarks/README.md``. Nothing here is part of the unit
tests (``tests/test_benchmarks_smoke.py`` only checks that a tiny run works).
"""

from ._suite import FAMILIES, format_table, main, run_suite
from ._workloads import Settings

__all__ = ["FAMILIES", "Settings", "format_table", "main", "run_suite"]
