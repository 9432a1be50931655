"""Elementary differentiable functions for numeric graphs (reverse-mode autodiff).

Each `Op` pairs a function of its inputs with its vector-Jacobian product
``vjp(inputs, output, gradient) -> tuple`` (one cotangent per input). With
`rules.numeric()`, backward over a graph of these nodes is reverse-mode autodiff.

Examples:
    >>> from semgrad.core import GraphBuilder, backward, forward, rules
    >>> from semgrad.effects import run_sync
    >>> b = GraphBuilder()
    >>> x = b.param("x", 2.0); y = b.param("y", 3.0)
    >>> _ = b.function("f", MUL.fn, inputs=[x, y], vjp=MUL.vjp)
    >>> graph, params = b.build(output="f")
    >>> trace = run_sync(forward(graph, params, {}), lambda r: "")
    >>> grads = run_sync(backward(graph, params, trace, 1.0, rules.numeric()), lambda r: "")
    >>> [p.value for p in grads.for_node("x")], [p.value for p in grads.for_node("y")]
    ([3.0], [2.0])
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from ._frozen import FrozenMap

__all__ = ["ADD", "EXP", "MUL", "OPS", "SIN", "SQUARE", "SUB", "TANH", "Op"]


@attrs.frozen
class Op:
    """A differentiable function: ``fn(*inputs)`` and its ``vjp(inputs, output, gradient)``."""

    name: str
    arity: int | None  # None: any number of inputs (at least one)
    fn: Callable[..., float] = attrs.field(eq=False)
    vjp: Callable[[tuple[float, ...], float, float], tuple[float, ...]] = attrs.field(eq=False)


def _prod_except(xs: tuple[float, ...], i: int) -> float:
    return math.prod(x for j, x in enumerate(xs) if j != i)


ADD = Op("add", None, lambda *xs: sum(xs), lambda xs, out, g: tuple(g for _ in xs))
MUL = Op(
    "mul", None, lambda *xs: math.prod(xs), lambda xs, out, g: tuple(g * _prod_except(xs, i) for i in range(len(xs)))
)
SUB = Op("sub", 2, lambda a, b: a - b, lambda xs, out, g: (g, -g))
SIN = Op("sin", 1, math.sin, lambda xs, out, g: (g * math.cos(xs[0]),))
EXP = Op("exp", 1, math.exp, lambda xs, out, g: (g * out,))
TANH = Op("tanh", 1, math.tanh, lambda xs, out, g: (g * (1.0 - out * out),))
SQUARE = Op("square", 1, lambda a: a * a, lambda xs, out, g: (2.0 * g * xs[0],))

#: All ops by name.
OPS: FrozenMap[str, Op] = FrozenMap((op.name, op) for op in (ADD, MUL, SUB, SIN, EXP, TANH, SQUARE))
