"""``semgrad graph``: print one of the built-in topologies, or your own system, as Graphviz DOT or Mermaid."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ._flags import HelpWithDefaults, add_command

__all__ = ["MAX_LAYERED_NODES", "MAX_LAYERED_SIDE", "add_parser", "command"]

#: The largest layered graph `semgrad graph` draws: each side, and nodes in all (a drawing of more is unreadable).
MAX_LAYERED_SIDE, MAX_LAYERED_NODES = 100, 1000


def add_parser(commands: Any) -> None:
    """Add ``graph`` to the subcommands."""
    graph = add_command(
        commands, "graph", help="print a topology as Graphviz DOT or Mermaid", formatter_class=HelpWithDefaults
    )
    graph.add_argument(
        "topology",
        help="paper, liar or layered, or your own system FILE.py:FUNCTION or MODULE:FUNCTION (its code is run)",
    )
    graph.add_argument("--format", choices=("dot", "mermaid"), default="dot", help="the output format")
    graph.add_argument("--width", type=int, default=4, help="nodes per layer (layered)")
    graph.add_argument("--depth", type=int, default=4, help="layers (layered)")
    graph.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    """Print the topology in the chosen format."""
    from ..diagrams import to_dot, to_mermaid
    from ..topologies import layered_graph, liar_graph, paper_graph

    builders: dict[str, Callable[[], tuple[Any, Any]]] = {
        "paper": paper_graph,
        "liar": liar_graph,
        "layered": lambda: layered_graph(args.width, args.depth),
    }
    if args.topology == "layered":
        _check_layered_size(args.width, args.depth)
    if args.topology in builders:
        graph, _ = builders[args.topology]()
    else:
        from ..experiments._custom import is_system_spec, load_system

        if not is_system_spec(args.topology):
            raise ValueError(
                f"unknown topology {args.topology!r}: give paper, liar, layered, or your system FILE.py:FUNCTION"
            )
        graph, _ = load_system(args.topology)
    print(to_dot(graph) if args.format == "dot" else to_mermaid(graph))
    return 0


def _check_layered_size(width: int, depth: int) -> None:
    if not 1 <= width <= MAX_LAYERED_SIDE or not 0 <= depth <= MAX_LAYERED_SIDE or width * depth > MAX_LAYERED_NODES:
        raise ValueError(
            f"--width {width} --depth {depth} is not a graph to draw: --width must be 1 to {MAX_LAYERED_SIDE}, "
            f"--depth 0 to {MAX_LAYERED_SIDE}, and width x depth at most {MAX_LAYERED_NODES} nodes"
        )
