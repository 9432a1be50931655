"""The ``semgrad`` command line: demo, run, compare, report, graph, sweep, data.

One module per subcommand (``_demo``, ``_run``, ``_compare``, ``_report``, ``_graph``, ``_sweep``, ``_data``), each
with ``add_parser(commands)``, which declares its flags, and ``command(args)``, which does it and returns the
exit code. ``_parser`` assembles them under the global flags; ``_main`` runs one and turns an error into one
line. What several subcommands share: ``_flags`` (the parser class, which takes no abbreviation, and the
common flags), ``_config`` (the `RunConfig` of run's and compare's flags) and ``_terminal`` (exit codes and
messages). Nothing heavy is imported until a subcommand runs.
"""

from __future__ import annotations

from ._main import main
from ._parser import build_parser
from ._terminal import EXIT_BUDGET

__all__ = ["EXIT_BUDGET", "build_parser", "main"]

# Still importable from semgrad.cli, where they were before it became a package.
from ._config import run_config as _config  # noqa: E402, F401
from ._graph import MAX_LAYERED_NODES, MAX_LAYERED_SIDE  # noqa: E402, F401
from ._run import typed_options as _typed  # noqa: E402, F401
from ._terminal import one_line  # noqa: E402, F401
