"""Deprecated: the elementary differentiable functions live in `semgrad.core.autodiff`.

``core.numeric`` (a module) clashed with ``rules.numeric()`` (a rule); importing
this module warns and gives the same objects.
"""

import warnings

from .autodiff import ADD, EXP, MUL, OPS, SIN, SQUARE, SUB, TANH, Op

warnings.warn("semgrad.core.numeric is deprecated: use semgrad.core.autodiff", DeprecationWarning, stacklevel=2)

__all__ = ["ADD", "EXP", "MUL", "OPS", "SIN", "SQUARE", "SUB", "TANH", "Op"]
